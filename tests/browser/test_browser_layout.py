"""Where things sit, measured in Chromium on the tiny-model app: the Output box's copy button clear of its own
label (it was 71 % covered at 1366, 1440 and 390 px), and on a phone the tabs right after the results (they started
~3,700 px down, behind the whole form). Bounding boxes after the page is there: no timing involved."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.page import CHROMIUM, open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")


def covered(a: dict, b: dict) -> float:
    """The share of box `a` that box `b` covers."""
    w = max(0.0, min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"]))
    h = max(0.0, min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"]))
    return w * h / (a["width"] * a["height"])


@pytest.mark.parametrize("width, height, lang", [(1366, 900, "en"), (1440, 1000, "en"), (390, 844, "en"),
                                                 (390, 844, "es")])
def test_the_output_copy_button_is_clear_of_its_label(browser, server, shots, width, height, lang):
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        button = pg.page.locator("#sv-output button.icon-button").first
        label = pg.page.locator("#sv-output [data-testid=block-info]").first
        button.scroll_into_view_if_needed()
        b, lab = button.bounding_box(), label.bounding_box()
        assert covered(b, lab) == 0.0, (b, lab)
        # and a click at its centre reaches it, not the label
        assert pg.page.evaluate("([x, y]) => !!document.elementFromPoint(x, y).closest('#sv-output button')",
                                [b["x"] + b["width"] / 2, b["y"] + b["height"] / 2])
    finally:
        pg.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_on_a_phone_the_tabs_follow_the_results_and_the_form_follows_them(browser, server, shots, lang):
    pg = open_page(browser, server, shots, 390, 844, lang)
    try:
        top = pg.page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY",
                               "#sv-tabs")
        metrics = pg.page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().bottom + window.scrollY",
                                   "#sv-metrics")
        form = pg.page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY",
                                "#sv-drafter")
        assert metrics <= top < 2 * 844, (metrics, top)   # right after the results, within two screens
        assert form > top, (form, top)                     # the rest of the form still there, after them
    finally:
        pg.close()
