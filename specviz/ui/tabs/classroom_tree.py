"""The step view of a round with a draft tree: the stage and, at a rejection, the residual's picture.

`classroom.render` asks here for a tree round's part of the step view (`classroom_stage`). The walk is `specviz.classroom.steps`
(`tree_stops`) and `tree_steps`; the drawing `specviz.viz.classroom_tree` and,
for the residual's bars, the chain's own mass picture (`classroom.mass_figure`)
with r in the place of p. A re-drawn u is not offered for a tree (the page says so).
"""
from __future__ import annotations

from ...classroom.state import StepState, StepView
from ...classroom.tree_steps import last_rejected, level, residual_mass
from ...strings import t
from ...viz import classroom as vc
from ...viz import classroom_tree as vct
from ...viz.format import esc
from ..session import AppContext
from .classroom_stage import StepParts


def rejection_shown(v: StepView) -> int | None:
    """The rejected node whose residual the stop explains: the residual stop's node, or before a correction
    the last node rejected (the correction is drawn from what it left). None elsewhere."""
    if v.stop.kind == "residual":
        return v.stop.pos
    if v.stop.kind == "correction":
        return last_rejected(v.round)
    return None


def tree_parts(ctx: AppContext, trace, state: StepState, v: StepView) -> StepParts:
    """A tree round's part of the step view: its stage, and at a rejection the residual's picture (r in the place
    of p) titled by the rejected node."""
    lang, rnd = ctx.lang, v.round
    node = rejection_shown(v)

    def picture(m):
        title = t("ctree.mass_title", lang, round=rnd.index + 1, depth=level(rnd, node),
                  token=vc.quote(rnd.tree[node].text))
        bottom = "ctree.mass_bottom" if v.stop.kind == "residual" else "cls.mass_bottom"
        figure = vc.mass_figure(m, title, lang, ("ctree.mass_top", bottom))
        # At a correction the chain's words fit (why p comes back); at a residual stop only the heading does.
        text = vc.mass_text_html(m, rnd, title, lang) if v.stop.kind == "correction" else f"<h4>{esc(title)}</h4>"
        return figure, text + f'<p class="sv-muted sv-ctree-mass-note">{esc(t("ctree.mass_note", lang))}</p>'

    return StepParts(vct.tree_stage_html, t("ctree.redraw", lang) if state.draw > 0 else "",
                     residual_mass(rnd, node) if node is not None and not trace.greedy else None, picture)
