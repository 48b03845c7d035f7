"""The classroom tab on a tree round (specviz.ui.tabs.classroom_stage): what `classroom.render` shows at the tree
lesson's stops — the residual picture at a rejection, none at an accepted node, a note for a re-drawn u."""
from __future__ import annotations

from dataclasses import replace

import pytest

from specviz.classroom import lessons
from specviz.classroom.steps import stops
from specviz.strings import t
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import classroom as tab

LESSON = "tree-second-branch"


def ctx(lang="en"):
    return AppContext(cache=PairCache(lambda *a: None), lang=lang)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_tree_lesson_opens_at_its_residual_with_the_picture(lang):
    out = tab.open_lesson(ctx(lang), LESSON)
    assert 'data-kind="residual"' in out["cls_stage"] and t("ctree.changed", lang) in out["cls_stage"]
    assert out["cls_mass"]["visible"] is True
    fig = out["cls_mass"]["value"]
    assert t("ctree.mass_bottom", lang) in str(fig.layout.annotations[1].text)
    assert t("ctree.mass_note", lang) in out["cls_mass_text"]
    # the stage's rejection chance is the picture's (one Mass for both)
    chance = out["cls_stage"].split('sv-cls-chance" data-reject="')[1].split('"')[0]
    assert chance != "" and f'{float(chance):.3f}' == chance


def test_an_accepted_node_shows_no_residual_and_a_redraw_says_why_not():
    lesson, trace = lessons.load(LESSON)
    state = lesson.opening(trace.rounds)
    nxt = tab.next_stop(ctx(), trace, state, tab.SEED, False)
    rnd = trace.rounds[state.round]
    winner = stops(rnd)[state.stop + 1].pos
    assert f'data-kind="node" data-node="{winner + 1}"' in nxt["cls_stage"]
    assert nxt["cls_mass"]["visible"] is False
    again = tab.redraw_u(ctx(), trace, nxt["cls_cur"], tab.SEED, False)
    assert t("ctree.redraw") in again["cls_stage"] and 'data-kind="tree"' in again["cls_stage"]
    # the recorded walk is unchanged by it: the same stops, the same verdicts
    assert replace(again["cls_cur"], draw=0).view(trace.rounds, tab.SEED).round == rnd


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_residual_step_says_whose_chance_is_whose_and_never_shows_a_dash_for_a_probability(lang):
    """Σ max(0, r − q) is the chance that a test here fails for a candidate not yet drawn, not this candidate's: the
    stage says both, this one's as 1 − a. The changes list says "not recorded" in words where a probability is
    unknown (a dash read as 0), and the residual's reason names min(r, q), not "the probability already spent"."""
    import html

    from specviz.classroom.decisions import decision
    from specviz.classroom.masses import Change
    from specviz.viz import classroom as vt
    from specviz.viz.format import display_number

    lesson, trace = lessons.load(LESSON)
    state = lesson.opening(trace.rounds)
    out = tab.open_lesson(ctx(lang), LESSON)
    stage = html.unescape(out["cls_stage"])
    rnd = trace.rounds[state.round]
    node = stops(rnd)[state.stop].pos
    miss = display_number(1.0 - decision(rnd.tree[node]).a)
    chance = out["cls_stage"].split('sv-cls-chance" data-reject="')[1].split('"')[0]
    assert t("ctree.reject_chance", lang, reject=chance, miss=miss) in stage
    assert "1 − a = " + miss in stage and "min(r, q)" in stage
    for stale in ("Chance that this candidate would be rejected", "already had its chance at is spent",
                  "Probabilidad de que este candidato fuera rechazado", "ya tuvo su oportunidad queda gastada"):
        assert stale not in stage
    rows = vt.changes_html([Change(5, "x", None, 0.25), Change(6, "y", 0.5, None)], lang)
    assert "—" not in rows and rows.count(html.escape(t("ctree.not_recorded", lang))) == 2
