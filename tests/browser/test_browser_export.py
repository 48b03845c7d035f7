"""An exported run (specviz.viz.export) in Chromium, opened from a file with the network off: it steps forward and
back through a real run and a tree run showing each round's numbers, in English and Spanish, at 1366 and 390 px,
without a single request leaving the file; a trace whose tokens are markup runs nothing."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from exported import hostile, recorded
from specviz.strings import t
from specviz.trace.records import Trace, metrics
from specviz.viz import export
from specviz.viz.format import display_number
from tests.browser.page import CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

SCREENS = [(1366, 900, "en"), (390, 844, "en"), (1366, 900, "es"), (390, 844, "es")]


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    chain = Trace.from_json(recorded().to_json())
    tree = Trace.from_json(recorded("dynamic:6").to_json())
    return {"chain": chain, "tree": tree, "hostile": Trace.from_json(hostile(tree).to_json())}


@pytest.fixture(scope="module")
def files(traces, tmp_path_factory) -> dict[tuple[str, str], Path]:
    folder = tmp_path_factory.mktemp("exported")
    return {(name, lang): export.write_html(trace, folder / f"{name}-{lang}.html", lang)
            for name, trace in traces.items() for lang in ("en", "es")}


class Offline:
    """The file in a fresh page with the network off, every request that is not the file itself aborted and
    recorded, and every dialog, console error and page error recorded."""

    def __init__(self, browser, path: Path, width: int, height: int, lang: str):
        self.ctx = browser.new_context(viewport={"width": width, "height": height}, locale=f"{lang}-ES"
                                       if lang == "es" else "en-US")
        self.ctx.set_offline(True)
        self.requests: list[str] = []
        self.ctx.route("**/*", self._route)
        self.page = self.ctx.new_page()
        self.problems: list[str] = []
        self.page.on("request", lambda r: r.url.startswith("file:") or self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        self.page.goto(path.as_uri())
        self.wait(lambda n: n == 0)

    def _route(self, route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def round(self) -> int:
        return int(self.page.evaluate("document.body.dataset.round"))

    def wait(self, ok, timeout: float = 30.0) -> int:
        """The round shown once `ok(round)` holds, polled from here: the page's policy lets no string become script
        in it, so Playwright's own wait_for_function (which evaluates its predicate in the page) is refused."""
        t0 = time.monotonic()
        while not ok(n := self.round()):
            assert time.monotonic() - t0 < timeout, f"round {n} after {timeout} s"
            time.sleep(0.05)
        return n

    def click(self, name: str, expect: int):
        self.page.click(f"#sv-x-{name}")
        self.wait(lambda n: n == expect)

    def visible(self, selector: str) -> list[str]:
        """data-round of the elements matching `selector` that are shown."""
        return self.page.eval_on_selector_all(
            selector, "els => els.filter(e => e.offsetParent !== null || e.getClientRects().length)"
                      ".map(e => e.getAttribute('data-round'))")

    def close(self):
        self.ctx.close()


def check_round(pg: Offline, trace: Trace, n: int, lang: str):
    """What the page shows at round n is the trace's: the line, the text, the cards, the tiles, the charts."""
    total = len(trace.rounds)
    label = pg.page.inner_text("#sv-x-label")
    assert label == (t("export.start", lang, total=total) if n == 0 else t("export.round_of", lang, n=n, total=total))
    assert pg.visible("#sv-live .sv-round") == [str(i) for i in range(1, n + 1)]
    cards = pg.visible("#sv-log .sv-card[data-round]")
    assert cards == [str(i) for i in range(n, max(0, n - 40), -1)]              # newest first
    tiles = export.tiles_by_round(trace.rounds)[n]
    for key in ("tokens", "rounds", "acceptance", "tau"):
        assert pg.page.inner_text(f'#sv-x-tiles [data-metric="{key}"] .sv-tile-value') == tiles[key], key
    m = metrics(trace.rounds[:n])
    shares = pg.page.eval_on_selector_all("#sv-x-acc g[data-pos]", "gs => gs.map(g => Number(g.dataset.share))")
    assert shares == pytest.approx(m["per_position"], abs=1e-4)
    assert len(pg.page.query_selector_all("#sv-x-time g[data-round]")) == min(n, 40)
    if n == 0:
        return
    assert pg.page.get_attribute("#sv-x-time g.sv-x-now", "data-round") == str(n)
    rnd = trace.rounds[n - 1]
    card = pg.page.locator(f'#sv-log .sv-card[data-round="{n}"]')
    for i, tk in enumerate(rnd.drafted):                  # every drafted token's numbers, in its card and its text
        row = card.locator(f'tr[data-pos="{i + 1}"]').inner_text()
        q, p = (tk.q_confidence, tk.p_confidence) if trace.greedy else (tk.q, tk.p)   # as the app's card shows them
        assert display_number(q) in row and display_number(p) in row, (n, i, row)
        if rnd.verdict(i) != "discarded":
            assert f"u {display_number(tk.u, 2)}" in row and f"a {display_number(tk.accept_prob, 2)}" in row
        token = pg.page.locator(f'#sv-live [data-round="{n}"][data-pos="{i + 1}"][data-verdict="{rnd.verdict(i)}"]')
        assert token.get_attribute("data-u") == display_number(tk.u)
        assert token.get_attribute("data-a") == display_number(tk.accept_prob)


@pytest.mark.parametrize("width, height, lang", SCREENS)
@pytest.mark.parametrize("name", ["chain", "tree"])
def test_the_file_steps_through_the_run_offline(browser, traces, files, name, width, height, lang):
    trace, pg = traces[name], Offline(browser, files[(name, lang)], width, height, lang)
    try:
        total = len(trace.rounds)
        assert total >= 4
        check_round(pg, trace, 0, lang)
        for n in (1, 2, 3):
            pg.click("next", n)
            check_round(pg, trace, n, lang)
        pg.click("prev", 2)
        check_round(pg, trace, 2, lang)
        pg.page.keyboard.press("ArrowRight")               # the keys step too
        pg.wait(lambda n: n == 3)
        pg.click("last", total)
        check_round(pg, trace, total, lang)
        pg.page.keyboard.press("Home")
        pg.wait(lambda n: n == 0)
        pg.page.locator("#sv-x-slider").fill(str(total - 1))
        pg.wait(lambda n: n == total - 1)
        check_round(pg, trace, total - 1, lang)
        if name == "tree":                                  # the round's tree is drawn in its card
            n = next(r.index + 1 for r in reversed(trace.rounds[:total - 1]) if r.tree)
            pg.page.locator("#sv-x-slider").fill(str(n))
            pg.wait(lambda shown: shown == n)
            nodes = pg.page.locator(f'#sv-log .sv-card[data-round="{n}"] .sv-tree .sv-tree-node[data-node]')
            assert nodes.count() == len(trace.rounds[n - 1].tree) and nodes.first.is_visible()
        token = pg.page.locator("#sv-live .sv-round:not([hidden]) .sv-tok").first
        token.focus()                                       # its details open on focus, as in the app
        tip = pg.page.inner_text("#sv-tip")
        assert "a = min(1, p/q) = " in tip and "u = " in tip
        assert pg.page.evaluate("document.documentElement.scrollWidth") <= width + 1   # nothing wider than the screen
        assert pg.page.evaluate("document.documentElement.lang") == lang
        assert pg.requests == [] and pg.problems == []
    finally:
        pg.close()


def test_play_goes_on_by_itself_and_pauses(browser, traces, files):
    pg = Offline(browser, files[("chain", "en")], 1366, 900, "en")
    try:
        pg.page.click("#sv-x-play")
        assert pg.page.inner_text("#sv-x-play") == t("export.pause")
        pg.wait(lambda n: n >= 2)
        pg.page.click("#sv-x-play")
        stopped = pg.round()
        assert pg.page.inner_text("#sv-x-play") == t("export.play")
        pg.page.wait_for_timeout(2000)                      # longer than a round of Play
        assert pg.round() == stopped and pg.requests == [] and pg.problems == []
    finally:
        pg.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_trace_of_markup_runs_nothing(browser, traces, files, lang):
    trace, pg = traces["hostile"], Offline(browser, files[("hostile", lang)], 390, 844, lang)
    try:
        for n in range(1, len(trace.rounds) + 1):           # every round shown, every token's details opened
            pg.click("next", n)
            for token in pg.page.locator(f'#sv-live .sv-round[data-round="{n}"] .sv-tok').all():
                token.hover()
        injected = pg.page.evaluate("""() => ({
            pwned: window.__pwned ?? null,
            elements: document.querySelectorAll('img, iframe, object, embed, main svg:not(#sv-x-acc):not(#sv-x-time)').length,
            scripts: document.scripts.length,
            handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
        })""")
        assert injected == {"pwned": None, "elements": 0, "scripts": 2, "handlers": 0}
        assert "</script><script>window.__pwned = 1" in pg.page.inner_text(".sv-prompt")   # shown, as text
        assert pg.requests == [] and pg.problems == []
    finally:
        pg.close()


def _download_html(page, tmp_path: Path, name: str) -> Path:
    """The file "Download as HTML" gives, once the button is on (its page is written after the run's event)."""
    button = page.page.locator("#sv-download-html")
    t0 = time.monotonic()
    while not button.is_enabled():
        assert time.monotonic() - t0 < 30, "Download as HTML stayed off"
        time.sleep(0.1)
    with page.page.expect_download() as info:
        button.click()
    path = tmp_path / name
    info.value.save_as(path)
    return path


def test_the_app_s_button_gives_the_run_and_the_loaded_trace_as_a_page(page, browser, tmp_path):
    page.set_prompt("the cat")
    assert page.run()[0] == "ok"
    page.page.get_by_role("tab", name="Trace files").click()
    assert page.page.locator("#sv-download-html").inner_text().strip() == t("ui.download_html")
    with page.page.expect_download() as info:
        page.page.click("#sv-download")
    trace_path = tmp_path / "run.json"
    info.value.save_as(trace_path)
    trace = Trace.from_json(trace_path.read_bytes())
    for path in (_download_html(page, tmp_path, "run.html"), None):
        if path is None:                                    # then the same trace, uploaded and replayed
            page.upload_trace(trace_path)
            assert page.wait_final() == "ok"
            path = _download_html(page, tmp_path, "replayed.html")
        pg = Offline(browser, path, 1366, 900, "en")
        try:
            pg.click("last", len(trace.rounds))
            check_round(pg, trace, len(trace.rounds), "en")
            assert pg.requests == [] and pg.problems == []
        finally:
            pg.close()
