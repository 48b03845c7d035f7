"""The "Round inspector" tab: p, q (and the residual) at one position of one round of the shown trace."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import charts
from ...viz import cards as vc
from ..events import listen
from ..plots import LocalePlot
from ..session import AppContext


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.inspector", lang), id="inspect"):
        with gr.Row():
            c["insp_round"] = gr.Slider(1, 2, value=1, step=1, label=t("ui.insp_round", lang), interactive=False,
                                        elem_id="sv-insp-round")
            c["insp_pos"] = gr.Slider(1, 2, value=1, step=1, label=t("ui.insp_pos", lang), interactive=False,
                                      elem_id="sv-insp-pos")
        c["insp_plot"] = LocalePlot(lang, charts.inspector_figure(None, 1, True, lang=lang), show_label=False,
                                 elem_id="sv-insp-plot")
        c["insp_card"] = gr.HTML("", elem_id="sv-inspect-text")
    return c


def wire(ctx: AppContext, c: dict) -> None:
    for slider in ("insp_round", "insp_pos"):
        listen(c[slider].input, inspect, ctx, c, ["trace", "insp_round", "insp_pos"],
               ["insp_plot", "insp_card", "insp_pos"], queue=False)


def inspect(ctx: AppContext, trace, round_no, position):
    """The chart and card of the chosen round and position (both clamped to what the round has)."""
    if not trace or not getattr(trace, "rounds", None):
        return {"insp_plot": charts.inspector_figure(None, 1, True, lang=ctx.lang), "insp_card": "",
                "insp_pos": gr.update()}
    i = max(1, min(int(round_no or 1), len(trace.rounds))) - 1
    r = trace.rounds[i]
    top = max(1, r.k + (1 if r.bonus else 0))
    pos = max(1, min(int(position or 1), top))
    return {"insp_plot": charts.inspector_figure(r, pos, trace.greedy, lang=ctx.lang),
            "insp_card": vc.round_card_html(r, trace.greedy, lang=ctx.lang),
            "insp_pos": gr.update(maximum=max(2, top), value=pos)}
