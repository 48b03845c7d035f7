"""`gr.Slider` whose value reaches the event function as it was typed, so the function answers in the page's language.

A slider has a number box beside it. Gradio's own Slider checks that box's value against its bounds before the event
function runs: a 0 typed into the classroom's speed raised Gradio's English "Value 0 is less than minimum value 0.5."
with a traceback in the server's log, and the page said nothing while the box went back to its bound. The sliders of
this page take the value as it came (None, a number past either end) and the event function checks it
(`classroom.speed`, `inspector.inspect`): a value past an end is used at that end and said so, one that is no number is
refused with a sentence.
"""
from __future__ import annotations

import gradio as gr


class Slider(gr.Slider):
    """`gr.Slider` with no bounds check before the event function: see the module's docstring."""

    def preprocess(self, payload: float | None) -> float | None:
        return payload
