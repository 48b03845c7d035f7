"""The step view of a round with a draft tree (issue 21): the stage and, at a rejection, the residual's picture.

`classroom.render` hands tree rounds here. The walk is `specviz.classroom.steps`
(`tree_stops`) and `tree_steps`; the drawing `specviz.viz.classroom_tree` and,
for the residual's bars, the chain's own mass picture (`classroom.mass_figure`)
with r in the place of p. A re-drawn u is not offered for a tree (the page says so).
"""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from ...classroom.state import StepState, StepView
from ...classroom.tree_steps import last_rejected, level, residual_mass
from ...strings import t
from ...viz import classroom as vc
from ...viz import classroom_tree as vct
from ...viz.format import esc
from ..session import AppContext


def rejection_shown(v: StepView) -> int | None:
    """The rejected node whose residual the stop explains: the residual stop's node, or before a correction
    the last node rejected (the correction is drawn from what it left). None elsewhere."""
    if v.stop.kind == "residual":
        return v.stop.pos
    if v.stop.kind == "correction":
        return last_rejected(v.round)
    return None


def render_tree(ctx: AppContext, trace, state: StepState, v: StepView, predict) -> dict:
    """The stage of a tree round's stop and, at a rejection, the residual picture below it (one `Mass` for
    both, so the stage's rejection chance is the picture's)."""
    lang, rnd = ctx.lang, v.round
    note = t("ctree.redraw", lang) if state.draw > 0 else ""
    node = rejection_shown(v)
    m = residual_mass(rnd, node) if node is not None and not trace.greedy else None
    stage = vct.tree_stage_html(rnd, len(trace.rounds), v.pos, trace.greedy, hidden=v.hidden,
                                show_summary=not predict or v.last, note=note, lang=lang,
                                reject_chance=m.reject_chance if m is not None else None)
    out = {"cls_stage": stage, "cls_round": state.round + 1, "cls_cur": replace(state, stop=v.pos),
           "cls_mass_text": "", "cls_mass": gr.update(visible=False)}
    if m is not None:
        title = t("ctree.mass_title", lang, round=rnd.index + 1, depth=level(rnd, node),
                  token=vc.quote(rnd.tree[node].text))
        bottom = "ctree.mass_bottom" if v.stop.kind == "residual" else "cls.mass_bottom"
        out["cls_mass"] = gr.update(value=vc.mass_figure(m, title, lang, ("ctree.mass_top", bottom)), visible=True)
        # At a correction the chain's words fit (why p comes back); at a residual stop only the heading does.
        text = vc.mass_text_html(m, rnd, title, lang) if v.stop.kind == "correction" else f"<h4>{esc(title)}</h4>"
        out["cls_mass_text"] = text + f'<p class="sv-muted sv-ctree-mass-note">{esc(t("ctree.mass_note", lang))}</p>'
    return out
