"""Views of a run: Rounds -> escaped HTML (`html`, the round cards in `cards`) and Plotly figures (`charts`).

Pure functions of the records in `specviz.trace.records`; no model, no Gradio. The
probabilities shown are the ones the decoder recorded; nothing is recomputed
here except display arithmetic (max(0, p - q) over the recorded top tokens).
Every word comes from `specviz.strings` (each view takes `lang`), and every
string reaches markup through `format.esc`.
"""
from .cards import RoundLog, round_card_html
from .html import LiveText, legend_html, live_token_html, metrics_html, round_fragment_html, status_html, token_display

__all__ = ["LiveText", "RoundLog", "legend_html", "live_token_html", "metrics_html", "round_card_html",
           "round_fragment_html", "status_html", "token_display"]
