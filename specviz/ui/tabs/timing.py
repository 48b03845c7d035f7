"""The "Acceptance & timing" tab: acceptance by draft position and the draft/verify timeline (filled by runs)."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import charts
from ..plots import LocalePlot


def tab(lang: str) -> dict:
    with gr.Tab(t("tab.charts", lang), id="charts"):
        with gr.Row():
            return {"pos_plot": LocalePlot(lang, charts.acceptance_by_position_figure([], lang=lang), show_label=False,
                                        elem_id="sv-pos-plot"),
                    "time_plot": LocalePlot(lang, charts.timeline_figure([], lang=lang), show_label=False,
                                         elem_id="sv-time-plot")}
