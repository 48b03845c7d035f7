"""The "Acceptance & timing" tab (filled by runs): acceptance by draft position and the draft/verify timeline, then
the drafts accepted per round against the law and where each round's time goes against the target alone."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import accepted_law, charts, round_time
from ..plots import LocalePlot


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.charts", lang), id="charts"):
        with gr.Row():
            c["pos_plot"] = LocalePlot(lang, charts.acceptance_by_position_figure([], lang=lang), show_label=False,
                                       elem_id="sv-pos-plot")
            c["time_plot"] = LocalePlot(lang, charts.timeline_figure([], lang=lang), show_label=False,
                                        elem_id="sv-time-plot")
        # One a row: their captions (the reading, the convention) need the column's width.
        c["law_plot"] = LocalePlot(lang, accepted_law.accepted_law_figure([], lang=lang), show_label=False,
                                   elem_id="sv-law-plot")
        c["cost_plot"] = LocalePlot(lang, round_time.round_time_figure([], lang=lang), show_label=False,
                                    elem_id="sv-cost-plot")
    return c
