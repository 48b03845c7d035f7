"""The step view's frame, shared by a chain's round (`classroom`) and a draft tree's (`classroom_tree`).

The frame turns one stop into the step view's updates: the stage, the round
box, the cursor and, at a rejection, the mass picture with its words. Each kind
of round supplies only its own part (`StepParts`): its stage function, its
note, the `Mass` of the rejection it explains and how its picture is titled.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import gradio as gr

from ...classroom.state import StepState, StepView
from ...classroom.steps import Mass
from ...viz.classroom_stage import StageOptions
from ..session import AppContext


@dataclass(frozen=True)
class StepParts:
    """What one kind of round shows at a stop, beside the frame."""

    stage: Callable[..., str]    # `stage_html(rnd, n_rounds, stop_index, greedy, options, lang)` of its kind
    note: str                    # the stage's note (a re-drawn u); "" for none
    mass: Mass | None            # the rejection the stop explains; None: no mass picture here
    # The mass picture and the HTML above it, for `mass` (called only when there is one).
    picture: Callable[[Mass], tuple[Any, str]]


def step_updates(ctx: AppContext, trace, state: StepState, v: StepView, parts: StepParts) -> dict:
    """The stage and the mass picture below it from one `Mass`, so both show the same rejection chance; the
    round's summary kept back until every test of the round has been shown (predict mode or not)."""
    m = parts.mass
    options = StageOptions(hidden=v.hidden, show_summary=v.last or v.decided, note=parts.note,
                           reject_chance=m.reject_chance if m is not None else None)
    out = {"cls_stage": parts.stage(v.round, len(trace.rounds), v.pos, trace.greedy, options, ctx.lang),
           "cls_round": state.round + 1, "cls_cur": replace(state, stop=v.pos),
           "cls_mass_text": "", "cls_mass": gr.update(visible=False)}
    if m is not None:
        figure, text = parts.picture(m)
        out["cls_mass"] = gr.update(value=figure, visible=True)
        out["cls_mass_text"] = text
    return out
