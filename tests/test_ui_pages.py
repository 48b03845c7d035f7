"""The Spanish page as good as the English one, without a browser: Gradio's and Plotly's English words
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


@pytest.mark.parametrize("page,lang", [("", "en"), ("es", "es")])
def test_each_endpoint_is_described_from_the_strings_table_in_the_pages_language(app, page, lang):
    from specviz.ui.api import ABOUT

    info = json.loads(_get(app + "gradio_api/info?page=" + page))
    described = {name: e["description"] for name, e in info["named_endpoints"].items()}
    assert described == {"/" + name: t(key, lang) for name, key in ABOUT.items()}
    if lang != "en":   # and the English page still reads English after the Spanish one was asked
        english = json.loads(_get(app + "gradio_api/info?page="))["named_endpoints"]
        assert english["/generate"]["description"] == t("api.about.generate")


def test_a_spanish_figure_names_its_locale_and_carries_the_dictionary_from_the_first_draw():
    import plotly.graph_objects as go

    from specviz.ui.plots import LocalePlot

    figure = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    spanish = json.loads(LocalePlot("es", figure).value["plot"])
    assert spanish["config"]["locale"] == "es"
    words = spanish["config"]["locales"]["es"]["dictionary"]
    assert words["Zoom in"] == t("plotly.zoom_in", "es") and words["Download plot as a PNG"] == t("plotly.download", "es")
    english = json.loads(LocalePlot("en", figure).value["plot"])
    assert "config" not in english or "locale" not in english["config"]
    assert LocalePlot("es").value is None   # an empty plot stays empty
    # and the component keeps every setting of gr.Plot (Gradio reads them by its init's parameters)
    assert LocalePlot("es", figure, elem_id="sv-p", show_label=False).get_config()["elem_id"] == "sv-p"
