"""Gradio's panels as the Spanish page's script leaves them (`locale_panels`, the same rules in Python): a count
agrees with its noun, and the API panel's header reads as one Spanish phrase."""
from __future__ import annotations

from specviz.strings import t
from specviz.ui.locale_panels import joined_text, panel_words, translated_text


def test_one_request_is_singular_and_more_are_plural():
    assert translated_text("1 requests (100% successful, p50: 0.1s)", "es") == "1 petición (100 % con éxito, p50: 0.1s)"
    assert translated_text("3 requests (67% successful, p50: 2s)", "es") == "3 peticiones (67 % con éxito, p50: 2s)"
    assert translated_text("1 requests (100% successful, p50: 0.1s)", "en") is None   # English is Gradio's own


def test_the_api_panels_header_is_one_spanish_phrase():
    assert joined_text("API", " documentation ", "es") == t("gradio.panel.api_documentation", "es")
    assert "API documentación" not in t("gradio.panel.api_documentation", "es")
    assert joined_text("MCP", "documentation", "es") is None      # another phrase keeps the word alone
    assert translated_text("documentation", "es") == "documentación"


def test_the_script_reads_the_plural_spec_and_the_joined_phrases():
    from specviz.ui.locale_panels import PANEL_JS

    words = panel_words("es")
    assert words["joined"] == {"API documentation": t("gradio.panel.api_documentation", "es")}
    assert any("{n:petición|peticiones}" in own for _, _, own, _ in words["patterns"])
    assert "(?::([^|}]*)\\|([^}]*))?" in PANEL_JS and "panel.joined" in PANEL_JS
