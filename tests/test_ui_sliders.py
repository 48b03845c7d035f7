"""The page's sliders hand the event function what was typed into their box; the function answers in words
(`specviz.ui.sliders`): Gradio's own bounds check said "Value 0 is less than minimum value 0.5." in English, with a
traceback in the server's log."""
from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr
import pytest

from specviz.strings import t
from specviz.ui.session import AppContext
from specviz.ui.sliders import Slider
from specviz.ui.tabs import classroom, inspector
from tests.rounds import bonus_round, rejected_round


def test_a_value_past_either_end_or_none_reaches_the_event_function():
    s = Slider(0.5, 5.0, value=1.5, step=0.25)
    assert s.preprocess(0) == 0 and s.preprocess(1e20) == 1e20 and s.preprocess(None) is None
    with pytest.raises(gr.Error):      # what Gradio's own slider does with it
        gr.Slider(0.5, 5.0, value=1.5, step=0.25).preprocess(0)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_classroom_speed_says_a_clamped_or_refused_value_in_the_pages_language(lang):
    ctx = AppContext(cache=None, lang=lang)
    low = classroom.speed(ctx, 0)
    assert low["cls_timer"].value == classroom.SPEEDS[0]
    assert t("cls.speed_clamped", lang, value=0, lo=0.5, hi=5.0) in low["cls_info"] and 'data-kind="warn"' in low["cls_info"]
    high = classroom.speed(ctx, 1e20)
    assert high["cls_timer"].value == classroom.SPEEDS[1] and "100000000000000000000" in high["cls_info"]
    for value in (None, float("nan"), "abc"):
        out = classroom.speed(ctx, value)
        assert out["cls_timer"].value == classroom.SPEED and 'data-kind="error"' in out["cls_info"]
        assert t("cls.speed", lang) in out["cls_info"] and "nan" not in out["cls_info"] and "None" not in out["cls_info"]
    fine = classroom.speed(ctx, 2.5)
    assert fine["cls_timer"].value == 2.5 and fine["cls_info"] == ""
    # The browser sends a typed 0 and then the box's own 0.5 as it leaves it: the end itself keeps what the 0 said
    for end in classroom.SPEEDS:
        at_end = classroom.speed(ctx, end)
        assert at_end["cls_timer"].value == end and at_end["cls_info"] == gr.skip()


def test_the_inspector_clamps_a_typed_round_and_position_and_shows_where_it_went():
    ctx = AppContext(cache=None, lang="en")
    trace = SimpleNamespace(rounds=[rejected_round(), bonus_round()], greedy=False)
    for typed, want in ((float("nan"), 1), (None, 1), (-4, 1), (1e20, 2), (math.inf, 1), ("2", 2)):
        out = inspector.inspect(ctx, trace, typed, typed)
        assert out["insp_round"]["value"] == want, typed
        assert 1 <= out["insp_pos"]["value"] <= out["insp_pos"]["maximum"]
