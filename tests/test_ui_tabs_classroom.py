"""The classroom tab's event functions (specviz.ui.tabs.classroom) on prepared lessons, no model: where the guess
buttons show, and the words of the verify step ("the classroom's small lies")."""
from __future__ import annotations

import pytest

from specviz.classroom import lessons
from specviz.classroom.state import StepState
from specviz.strings import t
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import classroom as tab


def ctx(lang="en"):
    return AppContext(cache=PairCache(lambda *a: None), lang=lang)


def _walk(name: str, steps: int = 40):
    """(the update, whether a guess there counts) at each of the first `steps` Next presses in predict mode."""
    _, trace = lessons.load(name)
    state, seen = StepState(), []
    for _ in range(steps):
        out = tab.next_stop(ctx(), trace, state, tab.SEED, True)
        state = out["cls_cur"]
        _, right = state.guess(list(trace.rounds), tab.SEED, True)
        seen.append((out, right is not None))
    return seen


@pytest.mark.parametrize("name", ["bonus-round", "tree-second-branch"])
def test_the_guess_buttons_show_only_where_a_guess_counts(name):
    seen = _walk(name)
    shown = [out["cls_guess_row"]["visible"] for out, _ in seen]
    assert shown == [counts for _, counts in seen]
    assert True in shown and False in shown          # the walk met both kinds of step
    _, trace = lessons.load(name)
    off = tab.next_stop(ctx(), trace, StepState(), tab.SEED, False)
    assert off["cls_guess_row"]["visible"] is False  # without "Predict, then reveal": never


def test_no_trace_shows_no_guess_buttons():
    assert tab.render(ctx(), None, StepState(), tab.SEED, True)["cls_guess_row"]["visible"] is False


@pytest.mark.parametrize("lang, k, said", [("en", 3, "reads the 3 drafted tokens in"),
                                           ("en", 1, "reads the 1 drafted token in"),
                                           ("es", 3, "lee 3 tokens propuestos en"),
                                           ("es", 1, "lee 1 token propuesto en")])
def test_the_verify_step_counts_its_drafts_in_words(lang, k, said):
    text = t("cls.verify_text", lang, k=k, n=k + 1)
    assert said in text and "all drafted" not in text and "lo propuesto (" not in text


def test_escape_leaves_presenter_mode_even_with_the_switch_focused():
    """ Switched on with the mouse, the switch (an <input>) keeps the focus, and the key handler returned
    for any focused input before it looked at Escape. Escape is handled first now (the browser test presses it)."""
    js = tab.KEYS_JS
    assert js.index("'Escape'") < js.index("['input', 'textarea', 'select']")


def _summary(stage_html: str) -> str:
    import html
    import re

    return html.unescape(re.search(r'<p class="sv-cls-summary"[^>]*>(.*?)</p>', stage_html).group(1))


@pytest.mark.parametrize("name", ["early-rejection", "bonus-round", "tree-second-branch"])
@pytest.mark.parametrize("predict", [False, True])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_round_summary_waits_for_the_rounds_last_test(name, predict, lang):
    """At the draft and the verify (a tree: the whole tree) the summary said "2 of 4 drafts accepted; 'x' rejected"
    before the walk showed a single test, predict mode or not. It says so now only once every test is shown."""
    from specviz.classroom.steps import stops

    _, trace = lessons.load(name)
    hidden = t("cls.sum_hidden", lang)
    for r, rnd in enumerate(trace.rounds[:3]):
        kinds = [s.kind for s in stops(rnd)]
        last_test = max((i for i, k in enumerate(kinds) if k in ("test", "node")), default=-1)
        for i, kind in enumerate(kinds):
            state = StepState(round=r, stop=i, revealed=True)
            said = _summary(tab.render(ctx(lang), trace, state, tab.SEED, predict)["cls_stage"])
            assert (said == hidden) == (i < last_test), (name, r, i, kind, said)
        if last_test >= 0 and predict:     # the last test before its u is revealed: still kept back
            state = StepState(round=r, stop=last_test, revealed=False)
            said = _summary(tab.render(ctx(lang), trace, state, tab.SEED, predict)["cls_stage"])
            assert said == hidden or kinds[last_test] not in ("test", "node")
