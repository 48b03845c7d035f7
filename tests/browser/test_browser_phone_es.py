"""In Chromium: a phone (390×844) and the Spanish page as good as the laptop (1366×900).

Measured with bounding boxes on the tiny-model app: the prompt and Generate inside the first screen, every tab
reachable without Gradio's hidden "More tabs" menu, the status covering nothing on a phone, the round table's
verdict in view; on /es no English words of Gradio or Plotly, the prompt field named as the status names it, and
the "Use via API" panel listing the same five endpoints as the English page.
"""
from __future__ import annotations

import time

from pathlib import Path

import pytest

from specviz.strings import t
from tests.browser.page import CHROMIUM, Page, open_page, sampled_run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

SCREENS = [(1366, 900, "en"), (390, 844, "en"), (1366, 900, "es"), (390, 844, "es")]
TABS = ("tab.log", "tab.inspector", "tab.charts", "tab.sweep", "tab.trace", "tab.classroom")
# The English Gradio and Plotly write into attributes, whole or as the start of a longer value.
ENGLISH = ("number input for", "range slider for", "Stop Recording", "Produced with Plotly.js", "More tabs", "Copy")
ATTRIBUTES_JS = """(english) => [...document.querySelectorAll('*')].flatMap(el =>
    ['aria-label', 'title', 'alt', 'data-title', 'placeholder'].map(a => el.getAttribute(a) || '')
    .filter(v => english.some(w => v === w || v.startsWith(w + ' '))))"""


def box(pg: Page, selector: str) -> dict:
    return pg.page.locator(selector).first.bounding_box()


@pytest.mark.parametrize("width, height, lang", SCREENS)
def test_the_prompt_and_generate_are_in_the_first_screen(browser, server, shots, width, height, lang):
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        prompt, run, status = box(pg, "#sv-prompt"), box(pg, "#sv-run"), box(pg, "#sv-status")
        pg.shot(f"first-screen-{width}-{lang}", full_page=False)
        assert 0 <= prompt["y"] and run["y"] + run["height"] <= height, (prompt, run)   # no scrolling to start
        assert 0 <= run["y"] - (prompt["y"] + prompt["height"]) < 120, (prompt, run)   # Generate under the prompt
        assert status["y"] + status["height"] <= height, status                        # and the status in view
        if width < 700:
            assert pg.page.locator("#sv-prompt label").first.inner_text().startswith(t("ui.prompt", lang))
    finally:
        pg.close()


@pytest.mark.parametrize("width, height, lang", SCREENS)
def test_every_tab_is_reachable_without_a_hidden_menu(browser, server, shots, width, height, lang):
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        assert not pg.page.locator("#sv-tabs .overflow-menu > button").is_visible()
        tablist = pg.page.locator("#sv-tabs [role=tablist]")
        for key in TABS:
            tab = tablist.get_by_role("tab", name=t(key, lang), exact=True)
            assert tab.count() == 1 and tab.is_visible(), key
            b = tab.bounding_box()
            assert 0 <= b["x"] and b["x"] + b["width"] <= width, (key, b)                 # inside the screen
        last = tablist.get_by_role("tab", name=t("tab.classroom", lang), exact=True)
        last.click()
        assert last.get_attribute("aria-selected") == "true"
    finally:
        pg.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_on_a_phone_the_status_covers_nothing_and_the_verdict_is_in_view(browser, server, shots, lang):
    pg = open_page(browser, server, shots, 390, 844, lang)
    try:
        sampled_run(pg, seed=3, max_new=24, k=6)      # sampled, K 6: rows of every verdict, a wide table
        assert pg.run()[0] == "ok"
        assert pg.page.eval_on_selector("#sv-status", "e => getComputedStyle(e).position") not in ("fixed", "sticky")
        pg.page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.log", lang), exact=True).click()
        card = pg.page.locator("#sv-log .sv-card").first
        card.wait_for(timeout=10_000)
        # The newest card's bottom brought to the screen's bottom edge: what is there is the card, not the status.
        pg.page.evaluate("""() => { const c = document.querySelector('#sv-log .sv-card');
            window.scrollBy(0, c.getBoundingClientRect().bottom - window.innerHeight + 2); }""")
        covered = pg.page.evaluate("""() => { const c = document.querySelector('#sv-log .sv-card').getBoundingClientRect();
            const hit = document.elementFromPoint(c.left + c.width / 2, window.innerHeight - 12);
            return hit ? !!hit.closest('#sv-status') : null; }""")
        assert covered is False
        # every row's verdict inside the card's visible box, and on top at its own centre (nothing drawn over it)
        seen = pg.page.evaluate("""() => [...document.querySelectorAll('#sv-log .sv-card')].slice(0, 3).flatMap(card => {
            return [...card.querySelectorAll('.sv-card-table tr > :last-child')].map(cell => {
                const log = document.querySelector('#sv-log'), l = log.getBoundingClientRect();  // the log scrolls too
                log.scrollTop += cell.getBoundingClientRect().top - l.top - l.height / 2;         // down only, never
                window.scrollBy(0, cell.getBoundingClientRect().top - window.innerHeight / 2);   // sideways
                const b = cell.getBoundingClientRect(), c = card.getBoundingClientRect();
                const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
                return b.left >= c.left - 0.5 && b.right <= c.right + 0.5 && !!hit && cell.contains(hit); }); })""")
        pg.shot(f"phone-log-{lang}", full_page=False)
        assert seen and all(seen), seen
    finally:
        pg.close()


@pytest.mark.parametrize("width, height", [(1366, 900), (390, 844)])
def test_the_spanish_page_has_no_english_words_of_gradio_or_plotly(browser, server, shots, width, height):
    pg = open_page(browser, server, shots, width, height, "es")
    try:
        tablist = pg.page.locator("#sv-tabs [role=tablist]")
        for key in ("tab.charts", "tab.sweep", "tab.trace", "tab.classroom"):   # Plotly's bar, sliders, uploads
            tablist.get_by_role("tab", name=t(key, "es"), exact=True).click()
            pg.page.wait_for_timeout(600)
        pg.page.wait_for_timeout(400)         # the page's fix runs at most ten times a second
        assert pg.page.evaluate(ATTRIBUTES_JS, list(ENGLISH)) == []
        labels = pg.page.evaluate("""() => [...document.querySelectorAll('[aria-label]')]
            .map(e => e.getAttribute('aria-label'))""")
        assert any(v.startswith(t("gradio.range_slider_for", "es") + " ") for v in labels)   # translated, not gone
        assert pg.page.locator("#sv-prompt label").first.inner_text().startswith("Instrucción")
    finally:
        pg.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_api_panel_lists_the_five_endpoints_in_both_languages(browser, server, shots, lang):
    pg = open_page(browser, server, shots, 1366, 900, lang)
    try:
        pg.page.get_by_text("Usar vía API" if lang == "es" else "Use via API").first.click()
        # Each endpoint under the page's own label: the Spanish page's script rewrites Gradio's English text nodes
        # as they appear (at most ten times a second), so the five are awaited, not read at one instant.
        label = t("gradio.panel.api_name", lang)
        expected = [f"{label} {name}" for name in ("/generate", "/replay", "/sweep", "/what_if", "/race")]
        deadline, missing = time.monotonic() + 30, expected
        while missing and time.monotonic() < deadline:
            pg.page.wait_for_timeout(250)
            text = pg.page.locator("body").inner_text()
            missing = [line for line in expected if line not in text]
        assert not missing, missing
        assert "No API Routes found" not in text
    finally:
        pg.close()
