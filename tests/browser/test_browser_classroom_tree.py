"""Draft trees in the classroom, in Chromium on a phone (390×844): the prepared tree lesson, opened by its link, walks the tree with
Next: a rejected first candidate, the residual it leaves, then the second candidate accepted against it, in
English and in Spanish, and the page never scrolls sideways."""
from __future__ import annotations

import pytest

from specviz.classroom import lessons
from specviz.classroom.state import StepState
from specviz.classroom.steps import stops
from specviz.strings import t
from tests.browser.page import bare_page, stage, wait_stage

pytestmark = pytest.mark.browser

LESSON = "tree-second-branch"
NO_SIDEWAYS_SCROLL = "() => document.scrollingElement.scrollWidth <= window.innerWidth"


@pytest.fixture
def phone(browser, server):
    with bare_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True) as page:
        yield page


def the_moment():
    """The lesson's round, the stop index of its residual step, and the node accepted right after it."""
    lesson, trace = lessons.load(LESSON)
    state = lesson.opening(trace.rounds)
    rnd = trace.rounds[state.round]
    winner = stops(rnd)[state.stop + 1].pos
    return trace, state, rnd, winner


def test_next_walks_the_tree_lesson_to_the_second_branch_on_a_phone(phone, server):
    trace, state, rnd, winner = the_moment()
    first = StepState(round=state.round).step_number(trace.rounds)
    phone.goto(f"{server}?__theme=light&lesson={LESSON}&step={first}")
    wait_stage(phone, {"round": str(state.round + 1), "stop": "1", "kind": "tree"})
    assert phone.locator("#sv-cls-stage .sv-ctree-node").count() == len(rnd.tree)
    for stop in range(2, state.stop + 2):          # Next, decision by decision, up to the residual
        phone.locator("#sv-cls-next").click()
        wait_stage(phone, {"stop": str(stop)})
    s = wait_stage(phone, {"kind": "residual"})
    assert phone.locator("#sv-cls-stage .sv-ctree-changes li").count() >= 2
    assert t("ctree.changed") in phone.locator("#sv-cls-stage").inner_text()
    phone.wait_for_selector("#sv-cls-mass .js-plotly-plot", state="visible", timeout=10_000)
    assert phone.evaluate(NO_SIDEWAYS_SCROLL)
    phone.locator("#sv-cls-next").click()
    wait_stage(phone, {"kind": "node", "node": str(winner + 1)})
    current = phone.locator("#sv-cls-stage .sv-ctree-node.sv-cls-current")
    assert current.get_attribute("data-state") == "accepted" and current.get_attribute("data-node") == str(winner + 1)
    assert int(s["node"]) != winner + 1
    last = len(stops(rnd))
    while int(stage(phone)["stop"]) < last:          # to the end of the round
        before = stage(phone)["stop"]
        phone.locator("#sv-cls-next").click()
        wait_stage(phone, {"stop": str(int(before) + 1)})
    if stops(rnd)[-1].kind in ("correction", "bonus"):   # the walk is over: the nodes it never reached say so
        assert phone.locator("#sv-cls-stage .sv-ctree-node[data-state=untried]").count() >= 1
    assert phone.evaluate(NO_SIDEWAYS_SCROLL)


def test_the_tree_lesson_opens_at_its_residual_in_spanish_on_a_phone(phone, server):
    trace, state, rnd, winner = the_moment()
    phone.goto(f"{server}es?__theme=light&lesson={LESSON}")
    wait_stage(phone, {"round": str(state.round + 1), "stop": str(state.stop + 1), "kind": "residual"})
    text = phone.locator("#sv-cls-stage").inner_text()
    assert t("ctree.kind_residual", "es") in text and t("ctree.changed", "es") in text
    assert phone.evaluate(NO_SIDEWAYS_SCROLL)
    phone.locator("#sv-cls-next").click()
    wait_stage(phone, {"kind": "node", "node": str(winner + 1)})
    assert "candidato 2 de" in phone.locator("#sv-cls-stage").inner_text()
    assert phone.locator("#sv-cls-stage .sv-ctree-node.sv-cls-current").get_attribute("data-state") == "accepted"
    assert phone.evaluate(NO_SIDEWAYS_SCROLL)
