"""The "Acceptance & timing" tab: acceptance by draft position and the draft/verify timeline (filled by runs)."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import charts


def tab(lang: str) -> dict:
    with gr.Tab(t("tab.charts", lang), id="charts"):
        with gr.Row():
            return {"pos_plot": gr.Plot(charts.acceptance_by_position_figure([], lang=lang), show_label=False,
                                        elem_id="sv-pos-plot"),
                    "time_plot": gr.Plot(charts.timeline_figure([], lang=lang), show_label=False,
                                         elem_id="sv-time-plot")}
