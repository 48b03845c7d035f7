"""A page that never freezes, in a real browser: a 10,000-round replay never freezes the page, and Stop ends a replay, a run (in its
prefill too) and a sweep within 2 s.

The tiny pair is slowed by the test server only (`tiny_app.Slow`: a pause per forward and per position read), so a
run lasts long enough to be stopped; nothing sleeps in the product code.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from specviz.limits import APP_LIVE_ROUNDS, MAX_TRACE_ROUNDS
from tests.browser.page import CHROMIUM, Page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

ANSWER_S = 1.0     # the page answers a click within this while it streams
STOP_S = 2.0       # Stop ends any work within this


@pytest.fixture(scope="module")
def slow_server():
    from tests.browser.tiny_app import serve

    demo, url = serve(delay=0.1, position_delay=0.05, replay_delay=0.05)
    yield url
    demo.close()


@pytest.fixture
def slow_page(browser, slow_server, shots):
    p = Page(browser, slow_server, shots)
    yield p
    p.close()


@pytest.fixture(scope="module")
def long_trace_file(tmp_path_factory):
    from tests.browser.tiny_app import TinyPair
    from tests.long_trace import long_trace

    path = tmp_path_factory.mktemp("long") / "long.json"
    path.write_text(long_trace(TinyPair(), MAX_TRACE_ROUNDS, k=1).to_json(), encoding="utf-8")
    return path


def status_text(pg: Page) -> str:
    return pg.page.locator("#sv-status").inner_text()


def wait_status(pg: Page, needle: str, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if needle in status_text(pg):
            return
        time.sleep(0.05)
    raise AssertionError(f"the status never said {needle!r}: {status_text(pg)!r}")


def click_answer_seconds(pg: Page, tab: str) -> float:
    """Seconds from a click on a result tab until the page shows it selected (the main thread is free)."""
    t0 = time.monotonic()
    pg.page.get_by_role("tab", name=tab).click(timeout=10_000)
    pg.page.wait_for_selector(f"#sv-tabs button[role=tab][aria-selected=true]:has-text('{tab}')", timeout=10_000)
    return time.monotonic() - t0


def stop_seconds(pg: Page, timeout: float = 30.0) -> float:
    """Seconds from a click on Stop until the status is final."""
    t0 = time.monotonic()
    pg.page.click("#sv-stop")
    pg.wait_final(timeout)
    return time.monotonic() - t0


def test_a_replay_of_10000_rounds_answers_clicks_and_stops(slow_page, long_trace_file):
    pg = slow_page
    pg.upload_trace(long_trace_file)
    wait_status(pg, "Replay: round", timeout=180)
    wait_status(pg, f"of {MAX_TRACE_ROUNDS}", timeout=5)
    answers = [click_answer_seconds(pg, tab) for tab in ("Round log", "Trace files", "Round log", "Trace files")]
    assert max(answers) < ANSWER_S, answers
    # the live text stays bounded: the newest rounds, and a count of the earlier ones
    time.sleep(1.0)
    assert pg.page.locator("#sv-live .sv-round").count() <= APP_LIVE_ROUNDS
    assert pg.page.locator("#sv-live .sv-earlier").count() == 1
    took = stop_seconds(pg)
    assert took < STOP_S and pg.status_kind() == "warn", (took, status_text(pg))
    assert "Replay stopped after" in status_text(pg)
    shown = int(status_text(pg).split("after ")[1].split(" ")[0].replace(",", ""))
    assert 0 < shown < MAX_TRACE_ROUNDS


def test_stop_while_the_prompt_is_read_ends_the_run_without_a_round(slow_page):
    pg = slow_page
    pg.set_prompt("a long prompt " * 8)            # the tiny tokenizer keeps 48 tokens: seconds of prefill here
    pg.page.click("#sv-run")
    wait_status(pg, "Reading the prompt", timeout=60)
    took = stop_seconds(pg)
    assert took < STOP_S and pg.status_kind() == "warn", (took, status_text(pg))
    time.sleep(1.5)                                  # no round arrives after the stop
    assert pg.page.locator("#sv-live .sv-round").count() == 0
    assert "Stopped" in status_text(pg)


def test_stop_during_generation_ends_it_within_a_round(slow_page):
    pg = slow_page
    pg.set_prompt("short")
    pg.set_number("sv-max-new", 200)                  # the tiny models hold 256 positions
    pg.page.click("#sv-run")
    try:
        pg.page.wait_for_function("() => document.querySelectorAll('#sv-live .sv-round').length >= 3", timeout=60_000)
    except Exception:
        raise AssertionError(status_text(pg))
    took = stop_seconds(pg)
    assert took < STOP_S and pg.status_kind() == "warn", (took, status_text(pg))
    assert "Stopped after" in status_text(pg)


def test_stop_ends_a_sweep(slow_page):
    pg = slow_page
    pg.page.get_by_role("tab", name="Throughput vs K").click()
    pg.set_number("sv-sweep-tokens", 64)
    pg.page.click("#sv-sweep")
    wait_status(pg, "Sweep step", timeout=60)
    time.sleep(1.0)
    took = stop_seconds(pg)
    assert took < STOP_S and pg.status_kind() == "warn", (took, status_text(pg))
    assert pg.page.locator("#sv-sweep-status [data-kind=warn]").count() == 1


@pytest.mark.parametrize("width, height", [(1366, 900), (390, 844)])
def test_generate_is_in_view_and_near_the_prompt(browser, server, shots, width, height):
    pg = Page(browser, server, shots)
    try:
        pg.page.set_viewport_size({"width": width, "height": height})
        pg.page.reload()
        pg.page.wait_for_selector("#sv-run", timeout=30_000)
        run = pg.page.locator("#sv-run").bounding_box()
        prompt = pg.page.locator("#sv-prompt").bounding_box()
        pg.shot(f"generate-in-view-{width}")
        if width > 1000:
            assert run["y"] + run["height"] <= height, (run, height)      # a laptop: in view without scrolling
        assert 0 <= run["y"] - (prompt["y"] + prompt["height"]) < 120, (run, prompt)   # right under the prompt
    finally:
        pg.close()
