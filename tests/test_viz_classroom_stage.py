"""The frame a chain's and a tree's stage share (specviz.viz.classroom_stage): what each kind supplies lands in
its place, the frame's own words are the same for both, and every string of the frame is escaped."""
from __future__ import annotations

import dataclasses

import pytest

from specviz.classroom import lessons
from specviz.classroom.steps import stops
from specviz.strings import t
from specviz.viz import classroom as vc
from specviz.viz import classroom_tree as vct
from specviz.viz.classroom_stage import StageOptions, StageParts, stage_frame

HOSTILE = '<img src=x onerror=alert(1)>"'


def first_round(name: str):
    _, trace = lessons.load(name)
    return trace.rounds[0]


def test_the_frame_puts_each_part_in_its_place():
    rnd = first_round("bonus-round")
    seen = []

    def parts(stop):
        seen.append(stop)
        return StageParts("cls.kind_test", "<i>PICTURE</i>", "<i>BODY</i>", "a < b", extra="<i>EXTRA</i>",
                          box_class="sv-x", pos_attr="node")

    html = stage_frame(rnd, 7, 99, StageOptions(note="NOTE"), parts, "en")
    last = stops(rnd)[-1]
    assert seen == [last]                                        # the stop index clamped to the round's last stop
    assert html.startswith('<div class="sv-cls-stage-box sv-x" data-round="1" data-stop="100" '
                           f'data-kind="{last.kind}" data-node=')
    order = [html.index(s) for s in ("sv-cls-where", "PICTURE", "BODY", "EXTRA", "NOTE", "a &lt; b")]
    assert order == sorted(order)
    assert t("cls.kind_test", "en") in html and "a < b" not in html


@pytest.mark.parametrize("stage, name", [(vc.stage_html, "bonus-round"), (vct.tree_stage_html, "tree-second-branch")])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_both_stages_share_the_frames_words_and_escape_its_note(stage, name, lang):
    rnd = first_round(name)
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
