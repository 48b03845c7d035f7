"""The "Round inspector" tab: p, q (and the residual) at one position of one round of the shown trace."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import charts
from ...viz import cards as vc
from ..events import listen
from ..plots import LocalePlot
from ..numbers import exact
from ..session import AppContext
from ..sliders import Slider


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.inspector", lang), id="inspect"):
        with gr.Row():
            c["insp_round"] = Slider(1, 2, value=1, step=1, label=t("ui.insp_round", lang), interactive=False,
                                        elem_id="sv-insp-round")
            c["insp_pos"] = Slider(1, 2, value=1, step=1, label=t("ui.insp_pos", lang), interactive=False,
                                      elem_id="sv-insp-pos")
        c["insp_plot"] = LocalePlot(lang, charts.inspector_figure(None, 1, True, lang=lang), show_label=False,
                                 elem_id="sv-insp-plot")
        c["insp_card"] = gr.HTML("", elem_id="sv-inspect-text")
    return c


def wire(ctx: AppContext, c: dict) -> None:
    for slider in ("insp_round", "insp_pos"):
        listen(c[slider].input, inspect, ctx, c, ["trace", "insp_round", "insp_pos"],
               ["insp_plot", "insp_card", "insp_round", "insp_pos"], queue=False)


def inspect(ctx: AppContext, trace, round_no, position):
    """The chart and card of the chosen round and position, each clamped to what the trace has and shown so in its
    box (a number typed past an end, or none, reaches here as typed: `sliders.Slider`)."""
    if not trace or not getattr(trace, "rounds", None):
        return {"insp_plot": charts.inspector_figure(None, 1, True, lang=ctx.lang), "insp_card": "",
                "insp_round": gr.update(), "insp_pos": gr.update()}
    i = _within(round_no, len(trace.rounds)) - 1
    r = trace.rounds[i]
    top = max(1, r.k + (1 if r.bonus else 0))
    pos = _within(position, top)
    return {"insp_plot": charts.inspector_figure(r, pos, trace.greedy, lang=ctx.lang),
            "insp_card": vc.round_card_html(r, trace.greedy, lang=ctx.lang),
            "insp_round": gr.update(value=i + 1), "insp_pos": gr.update(maximum=max(2, top), value=pos)}


def _within(value, top: int) -> int:
    """A slider's value as a whole number in 1..top: past an end, that end; no number (NaN, blank), 1."""
    d = exact(value)
    return 1 if d is None else int(max(1, min(top, d.to_integral_value())))
