"""Issue 30, the Spanish page as good as the English one, without a browser: Gradio's and Plotly's English words
that start a longer attribute, and the "Use via API" panel of /es (it said "No API Routes found")."""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from specviz.strings import t
from specviz.ui import locale

ENDPOINTS = {"/generate", "/replay", "/sweep", "/what_if", "/race"}



def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8")


@pytest.mark.parametrize("page", ["", "es"])
def test_every_language_page_lists_the_same_five_endpoints(app, page):
    info = json.loads(_get(app + "gradio_api/info?page=" + page))
    assert set(info["named_endpoints"]) == ENDPOINTS and not info["unnamed_endpoints"]
    # the panel lists the page's own public dependencies that /info names: the five must be in the page's config
    html = _get(app + page)
    assert set(re.findall(r'"api_name":"([a-z_]+)"', html)) >= {e[1:] for e in ENDPOINTS}


def test_gradio_and_plotly_words_that_start_an_attribute_are_translated_and_the_rest_kept():
    assert locale.translated("number input for Segundos por decisión", "es") == \
        f'{t("gradio.number_input_for", "es")} Segundos por decisión'
    assert locale.translated("range slider for Ronda", "es").startswith(t("gradio.range_slider_for", "es") + " ")
    assert locale.translated("Produced with Plotly.js (v3.3.1)", "es") == "Hecho con Plotly.js (v3.3.1)"
    assert locale.translated("Stop Recording", "es") == t("gradio.stop_recording", "es") != "Stop Recording"
    assert locale.translated("Copy", "es") == "Copiar"
    assert locale.translated("number input", "es") == "number input"        # only a whole word and its space
    assert locale.translated("number input for Seed", "en") == "number input for Seed"
    js = locale.page_language_js("es")
    assert '"number input for ": "campo numérico de "' in js and "startsWith" in js


def test_the_spanish_prompt_field_says_instruccion_as_the_status_does():
    assert t("ui.prompt", "es") == "Instrucción" and "instrucción" in t("status.prefill", "es", n=3, seconds=1)
