"""Fixtures of the browser suite: the tiny-model app served in-process, Debian's Chromium, a fresh page per test."""
from __future__ import annotations

import pytest

from tests.browser.page import ARGS, CHROMIUM


@pytest.fixture(scope="module")
def server():
    from tests.browser.tiny_app import serve

    # Four updates a second, not the app's one: the tiny models' runs last a second or two, and the tests watch the
    # text arrive in steps (the rate itself is measured by scripts/page_vs_bench.py, not here).
    demo, url = serve(delay=0.03, replay_delay=0.04, live_updates_per_s=4.0)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser, server, shots):
    from tests.browser.page import Page

    p = Page(browser, server, shots)
    yield p
    p.close()
