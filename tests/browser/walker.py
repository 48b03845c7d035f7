"""What `scripts/hostile_walk.py` drives: the app in a server process of its own (its log read for tracebacks), a
Chromium page per language and width, and the judge of one answer (a sentence in the page's language, or what went
wrong instead)."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.browser.page import ARGS, CHROMIUM, key_in, same_number
from tests.browser.tiny_app import free_port

ROOT = Path(__file__).resolve().parents[2]
HANG_S = 30.0
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", re.ASCII)   # what fill() may put into a number box
NOTE = re.compile(r"^\(box shows [^)]*\) ")                     # the walk's own note before the page's answer
FINAL = ("ok", "error", "warn")
# Every place the page answers in: a run's status, the sweep's, the race's, the lab's, the what-if's, the timing's,
# the classroom's line. A case watches the ones its area writes.
STATUS = {"generate": ["#sv-status"], "sweep": ["#sv-sweep-status", "#sv-status"], "race": ["#sv-race-status"],
          "lab": ["#sv-lab-stats"], "whatif": ["#sv-wi-text"], "why": ["#sv-why-text"],
          "classroom": ["#sv-cls-info", "#sv-cls-stage"], "trace": ["#sv-status"]}
TOASTS_JS = """() => [...document.querySelectorAll('.toast-body, [data-testid=toast-body]')].map(e => e.innerText)
  .concat([...document.querySelectorAll('[data-testid=status-tracker] .error')]
  .filter(e => e.offsetParent !== null).map(e => 'badge: ' + e.innerText))"""
MARK_JS = """(sels) => sels.map(s => { const e = document.querySelector(s); if (!e) return null;
  const k = e.querySelector('[data-kind]'); if (k) { k.dataset.walkWas = k.dataset.kind; k.dataset.kind = 'stale'; }
  return e.innerText; })"""
READ_JS = """(sels) => sels.map(s => { const e = document.querySelector(s); if (!e) return [null, null];
  const k = e.querySelector('[data-kind]'); return [k ? k.dataset.kind : null, e.innerText]; })"""


@dataclass
class Result:
    """One input and what the page (and the server's log) answered."""

    lang: str
    width: int
    area: str
    what: str
    verdict: str = "good"
    kinds: list[str] = field(default_factory=list)      # what was wrong, when bad
    answer: str = ""
    seconds: float = 0.0

    def bad(self, kind: str) -> None:
        self.verdict = "bad"
        if kind not in self.kinds:
            self.kinds.append(kind)


class Server:
    """The app in a process of its own, so its log (stdout and stderr) can be read for tracebacks after each input."""

    def __init__(self, real_pair: bool, log: Path, delay: float = 0.03, position_delay: float = 0.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = log
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        if real_pair:
            env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(self.port))
            cmd = [sys.executable, str(ROOT / "app.py")]
        else:   # slowed by the test server only, so a run lasts long enough to be stopped
            cmd = [sys.executable, str(ROOT / "tests/browser/tiny_app.py"), "--port", str(self.port), "--delay",
                   str(delay), "--position-delay", str(position_delay), "--replay-delay", "0.05"]
        self._out = open(log, "w", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self._out, stderr=subprocess.STDOUT)
        self._read = 0

    def wait_up(self, timeout: float = 600.0) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"the app exited: {self.log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(self.url, timeout=5).read(100)
                return
            except (urllib.error.URLError, OSError):
                time.sleep(1.0)
        raise SystemExit(f"the app did not answer within {timeout} s")

    def new_log(self) -> str:
        """What the server wrote since the last call."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        new, self._read = text[self._read:], len(text)
        return new

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._out.close()


class Browser:
    """One Chromium; one page at a time, at a language and a width, that records dialogs and page errors."""

    def __init__(self, playwright, url: str):
        self.b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        self.url, self.ctx, self.page, self.at = url, None, None, None
        self.dialogs: list[str] = []
        self.errors: list[str] = []

    def open(self, lang: str, width: int, query: str = "") -> None:
        """A fresh load of the page (a new context when the language or the width changes)."""
        if self.at != (lang, width):
            if self.ctx is not None:
                self.ctx.close()
            mobile = width < 600
            self.ctx = self.b.new_context(viewport={"width": width, "height": 844 if mobile else 900}, locale="en-US",
                                          is_mobile=mobile, has_touch=mobile, accept_downloads=True)
            self.page = self.ctx.new_page()
            self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
            self.page.on("pageerror", lambda e: self.errors.append(str(e)[:200]))
            self.at = (lang, width)
        self.page.goto(f"{self.url}{'es' if lang == 'es' else ''}?__theme=light{query}")
        self.page.wait_for_selector("#sv-run", timeout=60_000)
        self.page.wait_for_timeout(300)   # Gradio's first re-render of the boxes, before anything is typed

    def close(self) -> None:
        self.b.close()


def type_into(page, selector: str, text: str) -> str:
    """Type `text` into an input as a person would (a number box takes a finite number by fill, anything else key by
    key, which the box may refuse character by character); what the box shows afterwards."""
    box = page.locator(selector).first
    box.wait_for(state="visible", timeout=20_000)
    for _ in range(3):
        finite = bool(NUMBER.fullmatch(text.strip())) and math.isfinite(float(text))
        key_in(page, box, text, at_once=finite or box.get_attribute("type") != "number")
        box.press("Tab")
        page.wait_for_timeout(250)
        shown = box.input_value()
        if not finite or same_number(shown, text):
            return shown
    return box.input_value()


def answer(page, selectors: list[str], before: list, timeout: float = HANG_S,
           needs_final: bool = True) -> tuple[str | None, str, float]:
    """(kind, text, seconds) of the first watched place that answers: a final data-kind (or, without
    `needs_final`, any redrawn one), or a changed text where the place has no kind; (None, "", timeout) after
    `timeout` s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        for (kind, text), old in zip(page.evaluate(READ_JS, selectors), before):
            redrawn = kind not in (None, "stale") and not needs_final
            if kind in FINAL or redrawn or (kind is None and text is not None and text.strip() and text != old):
                return kind or "text", (text or "").strip(), time.monotonic() - t0
        toasts = page.evaluate(TOASTS_JS)
        if toasts:
            return "toast", " | ".join(toasts), time.monotonic() - t0
        time.sleep(0.1)
    # Still at work after `timeout` s, and saying so (a long sweep, a race): an answer, not a hang.
    busy = [text for kind, text in page.evaluate(READ_JS, selectors) if kind not in (None, "stale") and text]
    return ("busy", busy[0].strip(), timeout) if busy else (None, "", timeout)


def mark(page, selectors: list[str]) -> list:
    return page.evaluate(MARK_JS, selectors)


def judge(r: Result, kind: str | None, text: str, lang: str, expect: str, words, api: bool = False) -> None:
    """`expect`: "refuse" (only a sentence will do), "run" (it must run as typed) or "either". The API's sentences
    name its parameters as a program does (max_new_tokens) and are English on every page."""
    python, english = words
    if api:
        python, lang = re.compile(python.pattern.replace(r"|'[^']*'|\b[a-z]+_[a-z_]+\b", "")), "en"
    r.answer = text.replace("\n", " ")[:160]
    if kind is None:
        r.bad("hang > 30 s")
        return
    if kind == "toast":
        r.bad("raw error toast" if not re.search(r"\w{3,}\s+\w+\s+\w+", text.replace("Error", "")) else "toast")
    if kind in ("busy", "quiet") and expect == "refuse":
        r.bad("silent change (ran)")
    if expect == "refuse" and kind not in ("error", "warn", "toast", "busy", "quiet") and not (kind == "text" and "✗" in text):
        r.bad("silent change (ran)")
    if expect == "run" and kind not in ("ok", "warn", "text"):
        r.bad(f"refused a valid value ({kind})")
    sentence = re.sub(r"[✗✓ℹ⚠]|\d+\.\d MB", "", NOTE.sub("", text))   # a size is written 21.0 MB
    if kind in ("error", "toast") and python.search(sentence):
        r.bad("python words")
    if lang == "es" and [p for p in english if p in sentence]:
        r.bad("English on the Spanish page")


def server_log(r: Result, log: str) -> None:
    if "Traceback" in log:
        r.bad("traceback in the server log")
        line = [s for s in log.splitlines() if s.strip()][-1:]
        r.answer += f"  [log: {line[0][:100] if line else ''}]"


def api_call(url: str, endpoint: str, body: bytes, content_type: str = "application/json") -> tuple[int, str]:
    """(HTTP status, what the caller finally reads): a refused body's JSON, or the event stream's last event."""
    req = urllib.request.Request(f"{url}gradio_api/call/{endpoint}", data=body, method="POST",
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=HANG_S) as resp:
            event = json.loads(resp.read())["event_id"]
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")[:300]
    with urllib.request.urlopen(f"{url}gradio_api/call/{endpoint}/{event}", timeout=HANG_S) as resp:
        stream = resp.read().decode("utf-8", "replace")
    events = re.findall(r"^event: (\w+)\ndata: (.*)$", stream, re.M)
    return 200, f"event: {events[-1][0]}\ndata: {events[-1][1]}" if events else stream[:300]
