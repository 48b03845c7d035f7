"""The two whole-run views in Chromium, in English and Spanish: drafts accepted per round against the law and where
each round's time goes against the target alone, on the "Acceptance & timing" tab after a run and in the classroom's
panel for the shown run. The numbers drawn are read back from Plotly's own data in the page."""
from __future__ import annotations

import pytest

from specviz.strings import t
from tests.browser.page import open_page, sampled_run

pytestmark = pytest.mark.browser

DATA = "el => el.data.map(d => ({type: d.type, name: d.name, x: Array.from(d.x || []), y: Array.from(d.y || [])}))"
TITLE = "el => el.layout.title.text"


def plot(page, elem_id: str) -> tuple[list[dict], str]:
    """(the traces, the title) of the Plotly figure in `elem_id`, once drawn with the run's data: the empty figure the
    tab starts with is drawn first, and the run's figures come after the run's last event, later on a loaded machine."""
    selector = f"#{elem_id} .js-plotly-plot"
    page.wait_for_selector(selector, state="visible", timeout=20_000)
    page.wait_for_function(f"() => (document.querySelector({selector!r})?.data || []).some(d => d.type === 'bar')",
                           timeout=60_000)
    return page.eval_on_selector(selector, DATA), page.eval_on_selector(selector, TITLE)


def check_views(page, law_id: str, cost_id: str, lang: str, rounds: int) -> None:
    """Both figures of a run of `rounds` rounds with a target-alone comparison, in `lang`."""
    law, law_title = plot(page, law_id)
    bars = [d for d in law if d["type"] == "bar"]
    assert len(bars) == 1 and rounds - 1 <= sum(bars[0]["y"]) <= rounds      # the last round may draft nothing
    assert [d["name"] for d in law if d["type"] == "scatter"] and t("law.title", lang) in law_title
    assert t("law.observed_series", lang) == bars[0]["name"]
    cost, cost_title = plot(page, cost_id)
    stacked = [d for d in cost if d["type"] == "bar"]
    assert [d["name"] for d in stacked] == [t(k, lang) for k in ("rtime.draft_series", "rtime.verify_series",
                                                                  "rtime.rest_series")]
    assert all(len(d["y"]) == rounds for d in stacked)
    marks = [d for d in cost if d["type"] == "scatter"]
    assert len(marks) == 1 and marks[0]["name"] == t("rtime.target_series", lang) and all(y > 0 for y in marks[0]["y"])
    assert t("rtime.title", lang) in cost_title


@pytest.mark.parametrize("lang", ["en", "es"])
def test_both_views_after_a_run_and_in_the_classroom(browser, server, shots, lang):
    pg = open_page(browser, server, shots, 1366, 900, lang)
    try:
        sampled_run(pg, seed=5, max_new=30, k=3)
        kind, _ = pg.run()
        assert kind == "ok", pg.page.locator("#sv-status").inner_text()
        rounds = pg.page.locator("#sv-log .sv-card").count()
        assert rounds >= 3
        page = pg.page
        page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.charts", lang)).first.click()
        check_views(page, "sv-law-plot", "sv-cost-plot", lang, rounds)
        pg.shot(f"law-{lang}", locator=page.locator("#sv-law-plot"))
        pg.shot(f"round-time-{lang}", locator=page.locator("#sv-cost-plot"))
        page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.classroom", lang)).first.click()
        page.click("#sv-cls-use-run")
        page.locator("#sv-cls-run").get_by_text(t("cls.tab_run", lang)).first.click()
        check_views(page, "sv-cls-law-plot", "sv-cls-cost-plot", lang, rounds)
        assert not pg.dialogs
    finally:
        pg.close()
