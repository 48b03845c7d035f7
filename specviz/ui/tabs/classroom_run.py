"""The classroom's panel on a finished run as a whole: drafts accepted per round against the law, and where each
round's time went against the target alone.

Filled when a lesson or the shown run is opened (`classroom._opened`), from the same figures as the "Acceptance &
timing" tab (`specviz.viz.accepted_law`, `specviz.viz.round_time`). A lesson's recorded trace carries no target-alone
time, so its time chart has no marks and says so; the shown run has them when its comparison ran.
"""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import accepted_law, round_time

VIEWS = ("cls_law_plot", "cls_cost_plot")


def run_layout(lang: str) -> dict:
    """The panel's words and its two charts (empty until a run is opened)."""
    gr.Markdown(t("cls.run_intro", lang), elem_id="sv-cls-run-intro")
    # One under the other: their captions need the panel's width (and a phone has no room for two).
    return {"cls_law_plot": gr.Plot(accepted_law.accepted_law_figure([], lang=lang), show_label=False,
                                    elem_id="sv-cls-law-plot"),
            "cls_cost_plot": gr.Plot(round_time.round_time_figure([], lang=lang), show_label=False,
                                     elem_id="sv-cls-cost-plot")}


def run_updates(trace, lang: str, target_token_s: float | None = None) -> dict:
    """Both charts of an opened trace (`target_token_s`: the target alone's seconds per token, None without it)."""
    rounds = list(trace.rounds) if trace else []
    return {"cls_law_plot": accepted_law.accepted_law_figure(rounds, lang=lang),
            "cls_cost_plot": round_time.round_time_figure(rounds, target_token_s, lang=lang)}
