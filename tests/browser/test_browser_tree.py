"""The draft tree in Chromium: choose the "draft tree" drafter, generate on the tiny pair, and read the
round log as a tree on a laptop (1366×900) and a phone (390×844), in English and in Spanish, with the page itself
never scrolling sideways (a wide tree scrolls inside its card)."""
from __future__ import annotations

from pathlib import Path

import pytest

from specviz.strings import t
from specviz.viz.format import drafter_name
from tests.browser.page import CHROMIUM, Page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

# Sampled, so some rounds reject a branch (seed 3, K = 8 on the tiny pair: most rounds do).
SETTINGS = {"sv-k": 8, "sv-temp": 1, "sv-seed": 3, "sv-max-new": 24}


def page_width_overflow(pg: Page) -> int:
    """How far the page itself scrolls sideways (0: it does not)."""
    return pg.page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")


def trees_spilling_out(pg: Page) -> list:
    """The trees of the log that show content outside their card: wider than their box without scrolling it, or a
    box that leaves the card ([] when every tree is contained: a wide one scrolls inside its card)."""
    return pg.page.eval_on_selector_all("#sv-log .sv-tree", """trees => trees.filter(tree => {
        const card = tree.closest('.sv-card').getBoundingClientRect(), box = tree.getBoundingClientRect();
        const scrolls = ['auto', 'scroll'].includes(getComputedStyle(tree).overflowX);
        return box.right > card.right + 0.5 || box.left < card.left - 0.5
            || (tree.scrollWidth > tree.clientWidth && !scrolls);
    }).map(tree => tree.closest('.sv-card').dataset.round)""")


def styles(pg: Page, selector: str) -> dict:
    return pg.page.eval_on_selector(selector, "e => { const s = getComputedStyle(e); return {weight: s.fontWeight, "
                                              "line: s.textDecorationLine, opacity: s.opacity}; }")


@pytest.mark.parametrize("width, height, lang", [(1366, 900, "en"), (390, 844, "en"), (1366, 900, "es"),
                                                 (390, 844, "es")])
def test_a_tree_run_draws_its_trees_in_the_round_log(browser, server, shots, width, height, lang):
    pg = Page(browser, server + ("es" if lang == "es" else ""), shots)
    try:
        pg.page.set_viewport_size({"width": width, "height": height})
        pg.page.locator("#sv-drafter label", has_text=drafter_name("tree", lang)).click()
        assert t("ui.drafter_tree_info", lang, limit=16)[:40] in pg.page.locator("#sv-drafter").inner_text()
        for elem_id, value in SETTINGS.items():
            pg.set_number(elem_id, value)
        kind, _ = pg.run()
        assert kind == "ok", pg.page.locator("#sv-status").inner_text()
        assert pg.emitted()                                                   # the live text, as for any round
        log = pg.page.locator("#sv-log")
        assert log.locator(".sv-card-drafter").first.get_attribute("data-drafter") == "tree"
        assert log.locator(".sv-tree").count() >= 1
        assert t("tree.root", lang) in log.locator(".sv-tree").first.inner_text()
        assert styles(pg, "#sv-log .sv-tn-accepted")["weight"] == "700"             # the accepted path: bold
        assert "line-through" in styles(pg, "#sv-log .sv-tn-rejected")["line"]      # a rejected node: struck
        assert float(styles(pg, "#sv-log .sv-tn-untried")["opacity"]) < 1           # never tested: faded
        sizes = pg.page.eval_on_selector_all("#sv-log .sv-tree-node", "ns => ns.map(n => getComputedStyle(n).fontSize)")
        assert len(set(sizes)) == 1, sorted(set(sizes))                               # as large at every depth
        card = log.locator(".sv-card:has(.sv-tn-rejected)").first
        card.scroll_into_view_if_needed()
        box = card.bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= width, box                # the card fits the screen
        assert trees_spilling_out(pg) == []                                         # each tree, in its card
        assert page_width_overflow(pg) <= 0, page_width_overflow(pg)
        pg.shot(f"tree-{lang}-{width}", locator=card)
    finally:
        pg.close()
