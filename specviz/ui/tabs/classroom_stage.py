"""The step view at one stop: the stage, the round box, the cursor and, at a rejection, the mass picture.

`classroom.render` turns a `StepState` into the step view's updates here. A
chain's round and a draft tree's go through the same function: the walk reads a
chain as a tree of one branch (`specviz.classroom.steps`), the stage draws either
(`specviz.viz.classroom_stage`), and a rejection's mass picture is the one
`masses.rejection_mass` of the node it explains, r in the place of p on a tree.
"""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from ...classroom.decisions import Redrawn
from ...classroom.masses import Mass, rejection_mass
from ...classroom.state import StepState, StepView
from ...classroom.steps import last_rejected, level, nodes
from ...strings import t
from ...viz import classroom as vc
from ...viz.format import esc
from ..session import AppContext


def rejection_shown(v: StepView) -> int | None:
    """The rejected node whose mass picture the stop explains: a tree's residual stop's node; before a
    correction, and at a chain's rejected test once its u is shown, the last node rejected (the correction is
    drawn from what it left). None elsewhere."""
    if v.stop.kind == "residual":
        return v.stop.pos
    if v.stop.kind == "correction" or (v.stop.kind == "test" and v.shows_rejection):
        return last_rejected(v.round)
    return None


def redraw_note(r: Redrawn, draw: int, seed: int, greedy: bool, lang: str) -> str:
    """What the page says about a re-drawn round ("" for the recorded u); a tree's u is not re-drawn."""
    if draw <= 0:
        return ""
    if r.round.tree:
        return t("ctree.redraw", lang)
    notes = [t("cls.redrawn", lang, draw=draw, seed=seed)]
    if greedy:
        notes.append(t("cls.redraw_greedy", lang))
    elif r.changed:
        notes.append(t("cls.redraw_changed", lang))
        if r.approximate:
            notes.append(t("cls.redraw_approx", lang))
        if r.bonus_unknown:
            notes.append(t("cls.redraw_bonus_unknown", lang))
    else:
        notes.append(t("cls.redraw_same", lang))
    return " ".join(notes)


def mass_picture(v: StepView, node: int, m: Mass, lang: str) -> tuple:
    """The mass picture of node's rejection and the HTML above it, titled by the node: a chain's by its
    position, a tree's by its depth and token with r and r′ in the headings. At a correction the words say why
    p comes back; at a tree's residual stop only the heading does."""
    rnd = v.round
    words = vc.WORDS[vc.shape(rnd)]
    depth = level(rnd, node)
    title = t(words["mass_title"], lang, round=rnd.index + 1, pos=depth, depth=depth,
              token=vc.quote(nodes(rnd)[node].text))
    bottom = "ctree.mass_bottom" if v.stop.kind == "residual" else "cls.mass_bottom"
    figure = vc.mass_figure(m, title, lang, (words["mass_top"], bottom))
    text = vc.mass_text_html(m, rnd, title, lang) if v.stop.kind != "residual" else f"<h4>{esc(title)}</h4>"
    if rnd.tree:
        text += f'<p class="sv-muted sv-ctree-mass-note">{esc(t("ctree.mass_note", lang))}</p>'
    return figure, text


def step_updates(ctx: AppContext, trace, state: StepState, v: StepView, seed: int) -> dict:
    """The stage and the mass picture below it from one `Mass`, so both show the same rejection chance; the
    round's summary kept back until every test of the round has been shown (predict mode or not). A re-draw
    that moved a chain's rejection has only an estimated residual (the decoder kept the recorded one)."""
    node = rejection_shown(v)
    m = None
    if node is not None and not trace.greedy:
        m = rejection_mass(v.round, node, exact_r=not v.redrawn.changed)
    options = vc.StageOptions(hidden=v.hidden, show_summary=v.last or v.decided,
                              note=redraw_note(v.redrawn, state.draw, seed, trace.greedy, ctx.lang),
                              reject_chance=m.reject_chance if m is not None else None)
    out = {"cls_stage": vc.stage_html(v.round, len(trace.rounds), v.pos, trace.greedy, options, ctx.lang),
           "cls_round": state.round + 1, "cls_cur": replace(state, stop=v.pos),
           "cls_mass_text": "", "cls_mass": gr.update(visible=False)}
    if m is not None:
        figure, text = mass_picture(v, node, m, ctx.lang)
        out["cls_mass"] = gr.update(value=figure, visible=True)
        out["cls_mass_text"] = text
    return out
