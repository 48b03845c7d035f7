"""The "Round log" tab: one card per round, newest first (filled by runs and replays)."""
from __future__ import annotations

import gradio as gr

from ...strings import t
from ...viz import cards as vc


def tab(lang: str) -> dict:
    with gr.Tab(t("tab.log", lang), id="log"):
        return {"log": gr.HTML(vc.RoundLog(True, lang=lang).html(), elem_id="sv-log")}
