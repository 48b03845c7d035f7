"""`gr.Plot` whose Plotly figures carry the page's language in their own config, so the mode bar's words are the
page's from the first draw.

Gradio draws a Plotly value with `Plotly.react(div, data, layout, config)`, the config read from the figure's
JSON; a figure's `to_json` has none, so Plotly wrote its English titles first and the page's script replaced them
about a second later, after each redraw. Here the JSON gets `config.locale` and the dictionary for it
(`config.locales`: Plotly's way of giving a locale with the plot rather than registering it globally), built from the
strings table (keys `plotly.*`: the English text Plotly writes, then its translation).
"""
from __future__ import annotations

import json

import gradio as gr
from gradio.components.plot import PlotData

from ..strings import DEFAULT_LANG, t

# Plotly's own English words (its dictionary's keys) that a figure of this app can show: the mode bar's titles,
# the download's messages and the double-click hints.
PLOTLY_KEYS = ("plotly.autoscale", "plotly.box_select", "plotly.lasso_select", "plotly.pan", "plotly.reset_axes",
               "plotly.zoom", "plotly.zoom_in", "plotly.zoom_out", "plotly.download", "plotly.download_plot",
               "plotly.spikes", "plotly.closest", "plotly.compare", "plotly.produced_with", "plotly.taking_snapshot",
               "plotly.snapshot_ok", "plotly.snapshot_failed", "plotly.double_click_zoom",
               "plotly.double_click_legend")


def plotly_config(lang: str) -> dict:
    """The Plotly config that names `lang` and carries its dictionary ({} for English, Plotly's own)."""
    if lang == DEFAULT_LANG:
        return {}
    words = {t(key): t(key, lang) for key in PLOTLY_KEYS if t(key) != t(key, lang)}
    return {"locale": lang, "locales": {lang: {"dictionary": words}}}


def with_locale(data: PlotData | None, lang: str) -> PlotData | None:
    """A Plotly value with the page's locale in its config; any other value as it is."""
    config = plotly_config(lang)
    if data is None or data.type != "plotly" or not config:
        return data
    figure = json.loads(data.plot)
    figure["config"] = {**figure.get("config", {}), **config}
    return PlotData(type=data.type, plot=json.dumps(figure))

from gradio.events import Dependency

class LocalePlot(gr.Plot):
    """`gr.Plot` for a page in `lang`: every figure it shows, the first and each update, carries that locale."""

    is_template = True   # drawn by Gradio's own Plot in the browser (its block name is the base class's)

    def __init__(self, lang: str, value=None, **kwargs):
        self.lang = lang   # before Gradio's own init, which turns the first value into the page's
        super().__init__(value, **kwargs)

    def postprocess(self, value):
        return with_locale(super().postprocess(value), self.lang)
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component
class _Plot(gr.Plot):
    """`gr.Plot` whose every figure, the first and each update, carries the class's `lang`."""

    is_template = True   # drawn by Gradio's own Plot in the browser (its block name is the base class's)
    lang = DEFAULT_LANG

    def postprocess(self, value):
        return with_locale(super().postprocess(value), self.lang)
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component

    