"""The one stage a chain's and a tree's round are drawn in (specviz.viz.classroom_stage): each piece lands in its
place, the frame's words are the same for both, and every string of the frame is escaped."""
from __future__ import annotations

import dataclasses

import pytest

from specviz.classroom import lessons
from specviz.classroom.steps import stops
from specviz.strings import t
from specviz.viz import classroom as vc
from specviz.viz.classroom_stage import StageOptions, stage_html

HOSTILE = '<img src=x onerror=alert(1)>"'


def first_round(name: str):
    _, trace = lessons.load(name)
    return trace.rounds[0]


@pytest.mark.parametrize("name, box, attr", [("bonus-round", "sv-cls-stage-box", "pos"),
                                             ("tree-second-branch", "sv-cls-stage-box sv-ctree-stage", "node")])
def test_the_stage_puts_each_part_in_its_place(name, box, attr):
    rnd = first_round(name)
    html = stage_html(rnd, 7, 99, False, StageOptions(note="NOTE"), "en")
    last = stops(rnd)[-1]                                         # the stop index clamped to the round's last stop
    assert html.startswith(f'<div class="{box}" data-round="1" data-stop="100" data-kind="{last.kind}" data-{attr}=')
    picture = 'class="sv-ctree"' if rnd.tree else 'class="sv-cls-strip"'
    order = [html.index(s) for s in ("sv-cls-where", picture, "sv-cls-body", "NOTE", "sv-cls-summary")]
    assert order == sorted(order)
    assert vc.esc(vc.summary(rnd, "en")) in html


@pytest.mark.parametrize("name", ["bonus-round", "tree-second-branch"])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_both_kinds_of_round_share_the_frames_words_and_escape_its_note(name, lang):
    rnd = first_round(name)
    stage = vc.stage_html
    shown = stage(rnd, 3, 0, False, StageOptions(note=HOSTILE), lang)
    assert "<img" not in shown and "&lt;img" in shown
    assert '<div class="sv-cls-where">' in shown and 'class="sv-cls-note" role="note"' in shown
    kept = stage(rnd, 3, 0, False, StageOptions(show_summary=False), lang)
    assert vc.esc(t("cls.sum_hidden", lang)) in kept and "sv-cls-note" not in kept
    # the default options are the recorded, revealed stage with its summary
    assert stage(rnd, 3, 0, False, lang=lang) == stage(rnd, 3, 0, False, StageOptions(), lang)
    assert vc.esc(t("cls.sum_hidden", lang)) not in stage(rnd, 3, 0, False, lang=lang)


def test_the_options_cannot_change_under_a_stage():
    with pytest.raises(dataclasses.FrozenInstanceError):
        StageOptions().hidden = True  # type: ignore[misc]


def test_a_frame_without_escaping_would_be_caught():
    """The broken variant: the same note put in unescaped is exactly what the escaping test refuses."""
    rnd = first_round("bonus-round")
    shown = vc.stage_html(rnd, 3, 0, False, StageOptions(note=HOSTILE))
    broken = shown.replace(vc.esc(HOSTILE), HOSTILE)
    assert "<img" in broken and "<img" not in shown
