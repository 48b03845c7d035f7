"""A page's first view in Chromium (assets/first_view.js, served first in <head>): the light theme without a reload,
and the browser's language followed once, before Gradio starts.

Before it, a first visit rendered the whole page, then launch()'s js added ?__theme=light and reloaded it (a second
render; a prompt typed meanwhile was lost), and a Spanish browser stayed on the English page.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from specviz.strings import t
from tests.browser.page import CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")


class Visit:
    """A new tab of a browser in `locale` (a dark system theme), counting the documents it loads."""

    def __init__(self, browser, locale: str):
        self.ctx = browser.new_context(locale=locale, color_scheme="dark", viewport={"width": 1200, "height": 900})
        self.page = self.ctx.new_page()
        self.loads: list[str] = []
        self.page.on("load", lambda: self.loads.append(self.page.url))

    def open(self, url: str, settle: float = 1.5):
        self.page.goto(url)
        self.page.wait_for_selector("#sv-run", timeout=30_000)
        time.sleep(settle)   # a reload or a redirect after the first render would come in this time
        self.page.wait_for_selector("#sv-run", timeout=30_000)
        return self

    def lang(self) -> str:
        return self.page.evaluate("() => document.documentElement.lang")

    def run_label(self) -> str:
        return self.page.locator("#sv-run").inner_text().strip()

    def close(self):
        self.ctx.close()


@pytest.fixture
def visit(browser):
    opened = []

    def make(locale: str) -> Visit:
        opened.append(Visit(browser, locale))
        return opened[-1]
    yield make
    for v in opened:
        v.close()


def test_the_light_theme_needs_no_reload(visit, server):
    v = visit("en-US").open(server)
    assert len(v.loads) == 1 and "__theme=light" in v.page.url, (v.loads, v.page.url)
    assert not v.page.evaluate("() => document.body.classList.contains('dark')")   # a dark system theme, a light page
    assert v.run_label() == t("ui.generate", "en")


def test_a_prompt_typed_at_once_is_kept(visit, server):
    v = visit("en-US")
    v.page.goto(server)
    v.page.wait_for_selector("#sv-prompt textarea", timeout=30_000)
    v.page.locator("#sv-prompt textarea").fill("typed as soon as the box showed")
    time.sleep(1.5)
    assert v.page.locator("#sv-prompt textarea").input_value() == "typed as soon as the box showed"
    assert len(v.loads) == 1, v.loads


def test_a_spanish_browser_lands_on_the_spanish_page_once(visit, server):
    v = visit("es-ES").open(server)
    assert v.page.url.startswith(server + "es") and "__theme=light" in v.page.url, v.page.url
    assert v.run_label() == t("ui.generate", "es") != t("ui.generate", "en")
    assert len(v.loads) == 1, v.loads   # the root page was left before it loaded, not after a render
    # The language switch to English is a choice: the root page does not send the visitor back.
    v.page.get_by_role("link", name=t("lang.name", "en")).first.click()
    v.page.wait_for_url(lambda url: "/es" not in url, timeout=30_000)
    v.open(v.page.url)
    assert v.run_label() == t("ui.generate", "en"), v.page.url


def test_an_explicit_language_wins_over_the_browsers(visit, server):
    v = visit("es-ES").open(server + "?lang=en")
    assert "/es" not in v.page.url and v.run_label() == t("ui.generate", "en"), v.page.url


def test_an_english_browser_stays_and_a_later_visit_is_not_redirected(visit, server):
    v = visit("en-US").open(server)
    assert "/es" not in v.page.url and v.run_label() == t("ui.generate", "en")
    other = visit("fr-FR").open(server)   # no page in its language: the root's
    assert "/es" not in other.page.url


def test_a_browser_preferring_an_unserved_language_then_spanish_gets_spanish(browser, server):
    ctx = browser.new_context(locale="fr-FR", extra_http_headers={"Accept-Language": "fr-FR,fr;q=0.9,es;q=0.8"})
    try:
        page = ctx.new_page()
        page.add_init_script("Object.defineProperty(navigator, 'languages', {get: () => ['fr-FR', 'fr', 'es']});")
        page.goto(server)
        page.wait_for_url(lambda url: "/es" in url, timeout=30_000)
        page.wait_for_selector("#sv-run", timeout=30_000)
        assert page.locator("#sv-run").inner_text().strip() == t("ui.generate", "es")
    finally:
        ctx.close()


@pytest.mark.parametrize("start, asked, lands", [("", "es", "es"), ("es", "en", ""), ("es", "es", "es")])
def test_lang_in_the_address_goes_to_its_page_before_either_loads(visit, server, start, asked, lands):
    v = visit("en-US").open(server + start + f"?lang={asked}&lesson=none")
    path = v.page.url.split("?")[0]
    assert path == server + lands, v.page.url
    assert "lesson=none" in v.page.url and "__theme=light" in v.page.url   # the other parameters kept
    assert v.run_label() == t("ui.generate", asked)
    assert len(v.loads) == 1, v.loads   # before: the page loaded, rendered, then its js sent it on
