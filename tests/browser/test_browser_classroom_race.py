"""The classroom's drafter race in Chromium, English and Spanish, at 1366 and 390 px: the race runs on the tiny pair,
shows five lanes whose tokens are coloured by who proposed them, says every drafter wrote the target alone's text,
stays inside a phone's width; a bad box gets a sentence; and the prepared code-edit lesson opens with no model."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from specviz.classroom import lessons
from specviz.strings import t
from tests.browser.page import CHROMIUM, Page, type_number

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

SCREENS = [(1366, 900, "en"), (390, 844, "en"), (1366, 900, "es"), (390, 844, "es")]
LESSON = "code-edit-lookup"


def open_page(browser, server, shots, width: int, height: int, lang: str) -> Page:
    pg = Page(browser, server + ("es" if lang == "es" else ""), shots)
    pg.page.set_viewport_size({"width": width, "height": height})
    pg.page.reload()
    pg.page.wait_for_selector("#sv-run", timeout=30_000)
    pg.page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.classroom", lang)).first.click(
        timeout=30_000)
    return pg


def open_race(pg: Page, lang: str):
    pg.page.locator("#sv-cls-race .label-wrap").get_by_text(t("cls.tab_race", lang)).first.click()
    pg.page.locator("#sv-race-tokens input[type=number]").first.wait_for(state="visible", timeout=20_000)


def start(pg: Page):
    """Mark the shown status stale, click, and return once the race has said something new."""
    pg.page.evaluate("() => document.querySelectorAll('#sv-race-status [data-kind]').forEach(e => e.dataset.stale = 1)")
    pg.page.click("#sv-race-run")


@pytest.mark.parametrize("width, height, lang", SCREENS)
def test_the_race_renders_coloured_by_source_and_lossless(browser, server, shots, width, height, lang):
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        open_race(pg, lang)
        type_number(pg, "sv-race-tokens", 12)
        type_number(pg, "sv-race-k", 4)
        pg.page.locator("#sv-race-prompt textarea").fill("the cat sat on the mat. the cat sat on the mat.")
        start(pg)
        pg.page.wait_for_selector("#sv-race-status [data-kind=ok]:not([data-stale])", timeout=120_000)
        assert t("race.done_same", lang, n=12) in pg.page.locator("#sv-race-status").inner_text()
        lanes = pg.page.eval_on_selector_all("#sv-race-view tr[data-lane]", "es => es.map(e => ({...e.dataset}))")
        assert [d["lane"] for d in lanes] == ["target", "model", "ngram", "hybrid", "tree"]
        assert [d["same"] for d in lanes] == ["reference", "yes", "yes", "yes", "yes"]
        assert all(d["tokens"] == "12" for d in lanes)
        # Every token's colour is its source's, read from the computed style (not only the class).
        spans = pg.page.eval_on_selector_all(
            "#sv-race-view .sv-race-lane .sv-race-tok",
            "es => es.map(e => [e.dataset.source, getComputedStyle(e).backgroundColor, e.className])")
        assert len(spans) == 5 * 12
        colours = {}
        for source, colour, cls in spans:
            assert f"sv-race-{source}" in cls
            colours.setdefault(source, set()).add(colour)
        assert all(len(c) == 1 for c in colours.values()) and len({next(iter(c)) for c in colours.values()}) == \
            len(colours)                                        # one colour per source, and no two alike
        assert "target" in colours and "model" in colours
        # Nothing sticks out of a phone's width: the table's rows become cards, the lanes stack.
        overflow = pg.page.eval_on_selector("#sv-race-view", "e => e.scrollWidth - e.clientWidth")
        assert overflow <= 1, overflow
        for selector in ("#sv-race-view .sv-race-scroll", "#sv-race-view .sv-race-lane"):
            right = pg.page.eval_on_selector_all(selector, "es => Math.max(...es.map(e => "
                                                           "e.getBoundingClientRect().right))")
            assert right <= width + 1, (selector, right)
        # Every lane's verdict is in view without scrolling sideways (on a phone the rows are cards).
        cells = pg.page.eval_on_selector_all("#sv-race-view tr[data-lane] td:last-child", "es => es.map(e => {"
                                             " const r = e.getBoundingClientRect(); return [r.left, r.right]; })")
        assert len(cells) == 5 and all(0 <= left and right <= width + 1 for left, right in cells), cells
        pg.shot(f"race-{width}-{lang}")
        # A bad box: a sentence in the page's language, and the shown race stays.
        type_number(pg, "sv-race-k", 17)
        start(pg)
        pg.page.wait_for_selector("#sv-race-status [data-kind=error]:not([data-stale])", timeout=15_000)
        said = pg.page.locator("#sv-race-status").inner_text()
        assert t("input.not_whole", lang, name=t("field.k", lang), lo=1, hi=16) in said
        assert pg.page.locator("#sv-race-view .sv-race-lane").count() == 5
        assert not pg.dialogs
    finally:
        pg.close()


@pytest.mark.parametrize("width, height, lang", SCREENS)
def test_the_prepared_code_edit_lesson_opens_at_its_longest_lookup_run(browser, server, shots, width, height, lang):
    lesson, trace = lessons.load(LESSON)
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        pg.page.locator("#sv-cls-lesson input").first.click()
        pg.page.get_by_role("option", name=lesson.text("title", lang)).click()
        pg.page.click("#sv-cls-open")
        pg.page.wait_for_selector(f"#sv-cls-stage [data-round='{lesson.start}'][data-kind=draft]", timeout=20_000)
        info = pg.page.locator("#sv-cls-info").inner_text()
        assert lesson.text("title", lang) in info and "τ =" in info
        assert re.search(r"\d+ (of|de) \d+", info)              # the measured figures are said
        drafter = pg.page.locator("#sv-cls-stage .sv-cls-drafter")
        assert drafter.get_attribute("data-source") == "ngram"     # the round it opens at is prompt lookup's
        stage = pg.page.locator("#sv-cls-stage").inner_text()
        assert t("drafter.ngram", lang) in stage
        chips = pg.page.locator("#sv-cls-stage .sv-cls-chip").count()
        assert chips == trace.rounds[lesson.start - 1].k >= 4
        right = pg.page.eval_on_selector("#sv-cls-stage .sv-cls-stage-box", "e => e.getBoundingClientRect().right")
        assert right <= width + 1, right
        assert pg.status_kind() == "info"                          # no model was loaded
        assert not pg.dialogs
    finally:
        pg.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_stop_ends_the_race_with_a_sentence(browser, server, shots, lang):
    """A long race (128 tokens a lane, K = 1) stopped while it runs: it says it stopped, in the page's language,
    within the few seconds a round and the grace take, and the lanes that had finished stay."""
    pg = open_page(browser, server, shots, 1366, 900, lang)
    try:
        open_race(pg, lang)
        type_number(pg, "sv-race-tokens", 128)
        type_number(pg, "sv-race-k", 1)
        start(pg)
        pg.page.wait_for_selector("#sv-race-view .sv-race-lane", timeout=60_000)   # the target alone is done
        pg.page.click("#sv-race-stop")
        pg.page.wait_for_selector("#sv-race-status [data-kind=warn]", timeout=10_000)
        assert t("race.stopped", lang) in pg.page.locator("#sv-race-status").inner_text()
        assert pg.page.locator("#sv-race-view .sv-race-lane").count() < 5
        assert not pg.dialogs
    finally:
        pg.close()
