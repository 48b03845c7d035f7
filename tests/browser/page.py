"""A page of the app in Chromium, with the few actions the browser tests need."""
from __future__ import annotations

import math
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"   # Debian's package; the tests never download a browser
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).resolve().parents[2]
SAVE = os.environ.get("SPECVIZ_SAVE_SCREENSHOTS") == "1"


class Page:
    """A page of the app with the few actions the tests need; fails on any JS dialog (an XSS would alert)."""

    def __init__(self, browser, url, shots):
        # An English browser: the root page follows the browser's language on a tab's first view (first_view.js).
        self.ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True,
                                       locale="en-US")
        self.page = self.ctx.new_page()
        self.dialogs: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(url + "?__theme=light")
        self.page.wait_for_selector("#sv-run", timeout=30_000)
        self.shots = shots

    def set_number(self, elem_id: str, value):
        box = self.page.locator(f"#{elem_id} input[type=number]").first
        box.fill(str(value))
        box.press("Enter")
        box.blur()

    def set_prompt(self, text: str):
        self.page.locator("#sv-prompt textarea").fill(text)

    def status_kind(self) -> str | None:
        el = self.page.locator("#sv-status [data-kind]")
        return el.first.get_attribute("data-kind") if el.count() else None

    def wait_final(self, timeout=60.0) -> str:
        t0 = time.time()
        while time.time() - t0 < timeout:
            kind = self.status_kind()
            if kind in ("ok", "error", "warn"):
                return kind
            time.sleep(0.05)
        raise AssertionError(f"no final status after {timeout}s: {self.page.locator('#sv-status').inner_text()}")

    def run(self, watch=False, timeout=60.0):
        """Click Generate; (final status kind, the live text's round counts as seen). `watch`: kept for callers."""
        self._click_for_a_fresh_status("#sv-run")
        seen = []
        t0 = time.time()
        while time.time() - t0 < timeout:
            n = self.page.locator("#sv-live .sv-round").count()
            if not seen or seen[-1] != n:
                seen.append(n)
            if self.status_kind() in ("ok", "error", "warn"):
                break
            time.sleep(0.02)
        return self.wait_final(timeout), seen

    def _click_for_a_fresh_status(self, selector: str, wait=10.0):
        """Click, then wait until the status box is redrawn, so a previous run's final status is never read."""
        self.page.evaluate("() => { const e = document.querySelector('#sv-status [data-kind]');"
                           " if (e) { e.dataset.was = e.dataset.kind; e.dataset.kind = 'stale'; } }")
        self.page.click(selector)
        t0 = time.time()
        while time.time() - t0 < wait and self.status_kind() == "stale":
            time.sleep(0.02)
        # not redrawn (the new status equals the old one): put the old kind back
        self.page.evaluate("() => { const e = document.querySelector('#sv-status [data-kind=stale]');"
                           " if (e) { e.dataset.kind = e.dataset.was; } }")

    def upload_trace(self, path):
        """A fresh page per upload: after an upload the file box shows the file instead of its input."""
        self.page.reload()
        self.page.wait_for_selector("#sv-run")
        self.page.get_by_role("tab", name="Trace files").click()
        self.page.locator("#sv-upload input[type=file]").set_input_files(str(path))

    def emitted(self) -> list[tuple[str, str]]:
        """(token id, text) of every emitted token in the live text, in order."""
        return self.page.eval_on_selector_all(
            "#sv-live .sv-tok[data-verdict=accepted], #sv-live .sv-tok[data-verdict=correction], "
            "#sv-live .sv-tok[data-verdict=bonus]",
            "els => els.map(e => [e.dataset.tokenId, e.textContent])")

    def shot(self, name: str, full_page=True, locator=None):
        path = self.shots / f"{name}.png"
        (locator.screenshot(path=str(path)) if locator is not None else
         self.page.screenshot(path=str(path), full_page=full_page))
        if SAVE:
            dest = ROOT / "assets" / "screenshots"
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest / path.name)
        return path

    def close(self):
        assert not self.dialogs, f"a script ran in the page: {self.dialogs}"
        self.ctx.close()


@contextmanager
def bare_page(browser, **context):
    """A plain Playwright page in a context of its own (`context`: its viewport, is_mobile, ...); like `Page`, it
    fails on any JS dialog (an XSS would alert)."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    yield page
    assert not dialogs, dialogs
    ctx.close()


def open_page(browser, server, shots, width: int, height: int, lang: str) -> Page:
    """A fresh page of the app at `width`×`height`, in English or at /es."""
    pg = Page(browser, server + ("es" if lang == "es" else ""), shots)
    pg.page.set_viewport_size({"width": width, "height": height})
    pg.page.reload()
    pg.page.wait_for_selector("#sv-run", timeout=30_000)
    return pg


def settle_box(page, selector: str, text: str):
    """Type `text` into the input at `selector` until it shows and still shows 0.4 s later.

    Gradio can re-render a box just after a page load, a lesson's load or an accordion's opening and put back what
    it showed before, sometimes after a first read-back had seen the typed text (the Spanish hostile-input test and
    the classroom's Round box in CI). A number is filled in at once: typed key by key, "-0.5" passes
    through "-", which the box cannot parse, and under load Gradio's write-back of that moment ate the "-" or the
    "." ("0.5", "05": the run then went with a valid top-p). Text a number box cannot parse ("nan", "abc", "1e400")
    is typed key by key, as a person would (fill() refuses it); the box then shows "" or its own bound, so
    anything but what it showed before counts as kept."""
    box = page.locator(selector).first
    box.wait_for(state="visible", timeout=20_000)
    before = box.input_value()
    number = _finite(text)

    def kept(shown: str) -> bool:
        return same_number(shown, text) if number else shown != before

    for _ in range(6):
        key_in(page, box, text, at_once=number)
        box.press("Enter")
        box.press("Tab")   # commit the value (blur) before the next click reads it
        if kept(box.input_value()):
            page.wait_for_timeout(400)
            if kept(box.input_value()):
                return
        page.wait_for_timeout(300)
    raise AssertionError(f"{selector} never kept {text!r}: it shows {box.input_value()!r}")


def key_in(page, box, text: str, at_once: bool) -> None:
    """Put `text` in `box`: filled at once (a finite number), or cleared and typed key by key as a person types, so
    the box may refuse it character by character."""
    if at_once:
        box.fill(text)
    else:
        box.fill("")
        box.click()
        page.keyboard.type(text)


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def same_number(shown: str, text: str) -> bool:
    """The box shows what was typed, or the same number written as the page writes it ("9223372036854775808" is
    shown as "9223372036854776008": the same double)."""
    if shown == text:
        return True
    try:
        return float(shown) == float(text)
    except ValueError:
        return False


def type_number(pg: Page, elem_id: str, value):
    """Type a value into a number box until the page shows it and keeps it (see `settle_box`)."""
    settle_box(pg.page, f"#{elem_id} input[type=number]", str(value))


def sampled_run(pg: Page, seed=3, max_new=40, k=4):
    pg.set_number("sv-temp", 1)
    pg.set_number("sv-seed", seed)
    pg.set_number("sv-max-new", max_new)
    pg.set_number("sv-k", k)


def stage(page) -> dict:
    """The classroom stage's data attributes (its kind, round, node...) as the page shows them now."""
    return page.eval_on_selector("#sv-cls-stage [data-kind]", "e => ({...e.dataset})")


def wait_stage(page, want: dict, timeout=20.0) -> dict:
    """Wait until the classroom stage shows every attribute in `want`; the stage's attributes."""
    t0, s = time.time(), {}
    while time.time() - t0 < timeout:
        s = stage(page) if page.locator("#sv-cls-stage [data-kind]").count() else {}
        if all(s.get(k) == v for k, v in want.items()):
            return s
        time.sleep(0.05)
    raise AssertionError(f"stage never reached {want}: {s}")
