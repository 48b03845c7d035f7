"""Stop, timed for each kind of work the page does (`scripts/hostile_walk.py`): start it, wait until it is under
way, press its Stop, and take the seconds until the page says it stopped."""
from __future__ import annotations

import re
import time
from pathlib import Path

from tests.browser.walk_cases import open_area
from tests.browser.walker import READ_JS, type_into

STOPPED = re.compile(r"\bStopped\b|\bstopped\b")   # the English page's stop sentences (status.stopped*, lab, why, race)
STARTED_S = 60.0     # the most a piece of work may take to get under way
SAID_S = 10.0        # after Stop, the most the walk waits for the page to say it stopped


def _wait(page, check, timeout: float = STARTED_S) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if check():
            return
        time.sleep(0.05)
    raise TimeoutError("the work never got under way")


def _text(page, sel: str) -> str:
    loc = page.locator(sel)
    return loc.first.inner_text() if loc.count() else ""


LONG_ANSWER = "Write a detailed story of at least five hundred words about a lighthouse keeper and a storm."


def _generate(br, lang, prompt="short", max_new="200", drafter=None, until="rounds"):
    """Generate, under way once two rounds are shown or the status says `until`."""
    page = br.page
    page.locator("#sv-prompt textarea").first.fill(prompt)
    type_into(page, "#sv-max-new input", max_new)
    if drafter:   # a radio: its label is the drafter's name
        from specviz.viz.format import drafter_name

        page.locator("#sv-drafter label", has_text=drafter_name(drafter, lang)).first.click()
    page.click("#sv-run")
    if until == "rounds":
        _wait(page, lambda: page.locator("#sv-live .sv-round").count() >= 2)
    else:
        _wait(page, lambda: until in _text(page, "#sv-status"))


def _sweep(br, lang):
    open_area(br, "sweep", lang)
    type_into(br.page, "#sv-sweep-tokens input", "64")
    br.page.click("#sv-sweep")
    _wait(br.page, lambda: "Sweep step" in _text(br.page, "#sv-status") or "Barrido" in _text(br.page, "#sv-status"))
    time.sleep(1.0)


def _race(br, lang):
    open_area(br, "race", lang)
    type_into(br.page, "#sv-race-tokens input", "128")
    type_into(br.page, "#sv-race-k input", "1")
    br.page.click("#sv-race-run")
    _wait(br.page, lambda: br.page.locator("#sv-race-view .sv-race-lane").count() >= 1)


def _replay(br, lang, path: Path):
    open_area(br, "trace", lang)
    br.page.locator("#sv-upload input[type=file]").set_input_files(str(path))
    _wait(br.page, lambda: "Replay: round" in _text(br.page, "#sv-status"), timeout=180)
    time.sleep(1.0)


def _lab(br, lang):
    """On the page's pair (the tiny lab models draw 5000 samples in a blink): Stop is pressed as soon as the lab
    says anything, while it prepares or samples."""
    from specviz.strings import t

    open_area(br, "lab", lang)
    br.page.locator("#sv-lab-models label", has_text=t("lab.pair", lang)).first.click()
    type_into(br.page, "#sv-lab-n input", "5000")
    br.page.click("#sv-lab-run")
    _wait(br.page, lambda: _text(br.page, "#sv-lab-stats").strip() != "")


def _why(br, lang):
    open_area(br, "why", lang)
    br.page.click("#sv-why-run")
    _wait(br.page, lambda: _text(br.page, "#sv-why-text").strip() != "")


def stop_cases(tmp: Path) -> list:
    """(what, start(br, lang), Stop's selector, where the page says it stopped)."""
    from specviz.limits import MAX_TRACE_ROUNDS
    from tests.browser.tiny_app import TinyPair
    from tests.long_trace import long_trace

    path = tmp / "long.json"

    def replay(br, lang):
        if not path.exists():
            path.write_text(long_trace(TinyPair(), MAX_TRACE_ROUNDS, k=1).to_json(), encoding="utf-8")
        _replay(br, lang, path)

    main = ["#sv-status"]
    return [("Generate", lambda br, lang: _generate(br, lang), "#sv-stop", main),
            # A prompt with a long answer: a real pair's reply to "short" ends at its end-of-text within a few dozen
            # tokens, and the target alone's run of as many tokens ends before the page (1 update a second) shows it
            ("comparison (target alone)", lambda br, lang: _generate(br, lang, prompt=LONG_ANSWER, max_new="200",
                                                                      until="Target alone"),
             "#sv-stop", main),
            ("prompt reading (long prompt)", lambda br, lang: _generate(br, lang, prompt="a long prompt " * 8,
                                                                         until="Reading the prompt"), "#sv-stop", main),
            ("tree run", lambda br, lang: _generate(br, lang, drafter="tree"), "#sv-stop", main),
            ("sweep", _sweep, "#sv-stop", ["#sv-sweep-status", "#sv-status"]),
            ("race", _race, "#sv-race-stop", ["#sv-race-status"]),
            ("replay (10,000 rounds)", replay, "#sv-stop", main),
            ("classroom lab sampling", _lab, "#sv-lab-stop", ["#sv-lab-stats"]),
            ("why it is fast", _why, "#sv-why-stop", ["#sv-why-text"])]


def measure(br, server, cases: list, lang: str = "en", width: int = 1366) -> list:
    """[(what, seconds from Stop's click to a final status that says it stopped, or None; what the page said)]."""
    out = []
    for what, start, stop, where in cases:
        br.open(lang, width)
        try:
            start(br, lang)
        except Exception as e:   # the work could not be started: the row says so
            out.append((what, None, f"could not start: {type(e).__name__}: {str(e)[:80]}"))
            continue
        t0 = time.monotonic()
        br.page.locator(stop).dispatch_event("click")
        took, said = None, ""
        while time.monotonic() - t0 < SAID_S:
            for kind, text in br.page.evaluate(READ_JS, where):
                text = (text or "").strip()
                if kind in ("warn", "ok", "error") or (kind is None and STOPPED.search(text)):
                    took, said = time.monotonic() - t0, f"[{kind or 'text'}] {text}"
                    break
            if took is not None:
                break
            time.sleep(0.03)
        if took is None:
            said = "no final status within 10 s: " + " | ".join((x or "")[:80] for _, x in br.page.evaluate(READ_JS, where))
        elif not STOPPED.search(said):
            said = "ended before Stop took effect: " + said
            took = None
        out.append((what, took, said.replace("\n", " ")))
        print(f"stop {what:34} {'-' if took is None else f'{took:.2f} s'} | {said[:100]}", flush=True)
        server.new_log()
    return out
