"""Gradio's and Plotly's own words in the page's language, and the page's title and `lang`.

Gradio 6 picks the language of its own words (footer, upload box, …) from the
browser, not from the page: a Spanish page in an English browser showed them in
English. `gr.I18n` only translates the app's own labels, so the workaround is
on the page itself, run once by `demo.load`: the page's language is set with
the frontend's exported `changeLocale` (in Gradio's `core-*.js`, imported from
the same URL the page loaded, so it is the running instance), the document
gets its title and `lang`, and the few words Gradio and Plotly write without
translating (a copy button's label, the tabs' overflow button, Plotly's mode
bar) are replaced from the strings table each time they appear. Unknown
versions of Gradio degrade to the browser's choice, never to an error.
"""
from __future__ import annotations

import json

from ..strings import DEFAULT_LANG, t
from .locale_panels import PANEL_JS, panel_words

# The strings keys whose English text Gradio or Plotly writes into an attribute without translating it.
UNTRANSLATED_KEYS = ("gradio.copy", "gradio.more_tabs", "gradio.footer_nav", "gradio.upload_drop",
                     "gradio.file_upload", "gradio.reset_default", "gradio.settings", "plotly.autoscale",
                     "plotly.box_select", "plotly.lasso_select", "plotly.pan", "plotly.reset_axes", "plotly.zoom",
                     "plotly.zoom_in", "plotly.zoom_out", "plotly.download", "plotly.spikes", "plotly.closest",
                     "plotly.compare", "gradio.stop_recording", "gradio.panel.language")
# Keys whose English text starts a longer attribute: Gradio's "number input for <label>" and "range slider for
# <label>" (the label is already the page's), Plotly's "Produced with Plotly.js (v3.3.1)" (its version follows).
PREFIX_KEYS = ("gradio.number_input_for", "gradio.range_slider_for", "plotly.produced_with")
ATTRIBUTES = ("aria-label", "title", "alt", "data-title", "placeholder")


def words(lang: str) -> dict[str, str]:
    """{English as Gradio or Plotly writes it: the same in `lang`} (empty for English)."""
    if lang == DEFAULT_LANG:
        return {}
    return {t(key): t(key, lang) for key in UNTRANSLATED_KEYS if t(key) != t(key, lang)}


def prefixes(lang: str) -> dict[str, str]:
    """{English start of an attribute, with its space: the same in `lang`} (empty for English)."""
    if lang == DEFAULT_LANG:
        return {}
    return {t(key) + " ": t(key, lang) + " " for key in PREFIX_KEYS if t(key) != t(key, lang)}


def translated(value: str, lang: str) -> str:
    """An attribute's value as the page's script leaves it (the same rules in Python, for the tests)."""
    exact = words(lang)
    if value in exact:
        return exact[value]
    for english, own in prefixes(lang).items():
        if value.startswith(english):
            return own + value[len(english):]
    return value


def page_language_js(lang: str) -> str | None:
    """The `demo.load` js that puts the page's own language on Gradio's and Plotly's words, the title and `lang`;
    None for English, which is Gradio's own language and the page's default title (measured: the same script
    on the English page slowed the browser tests' watch of a streaming run)."""
    if lang == DEFAULT_LANG:
        return None
    data = json.dumps({"lang": lang, "title": t("app.title", lang), "words": words(lang), "starts": prefixes(lang),
                       "attrs": list(ATTRIBUTES), "panel": panel_words(lang)}, ensure_ascii=False)
    return ("() => { const cfg = " + data + "; "
            "document.documentElement.lang = cfg.lang; "
            "const core = performance.getEntriesByType('resource').map(e => e.name)"
            ".find(n => /\\/assets\\/core-[^/?]*\\.js(\\?|$)/.test(n)); "
            "if (core) import(core).then(m => { if (typeof m.changeLocale === 'function') m.changeLocale(cfg.lang); })"
            ".catch(() => {}); "
            "const english = Object.keys(cfg.words), starts = Object.entries(cfg.starts); "
            "const sel = cfg.attrs.flatMap(a => english.map(w => '[' + a + '=' + JSON.stringify(w) + ']')"
            ".concat(starts.map(([w]) => '[' + a + '^=' + JSON.stringify(w) + ']'))).join(','); "
            "const own = Object.prototype.hasOwnProperty; "
            "const put = (v) => { if (own.call(cfg.words, v)) return cfg.words[v]; "
            "for (const [w, mine] of starts) if (v.startsWith(w)) return mine + v.slice(w.length); return null; }; "
            "let queued = false; " + PANEL_JS +
            "const fix = () => { queued = false; fixPanels(); "
            "if (document.title !== cfg.title) document.title = cfg.title; "
            "if (document.documentElement.lang !== cfg.lang) document.documentElement.lang = cfg.lang; "
            "if (!sel) return; "
            "for (const el of document.querySelectorAll(sel)) for (const a of cfg.attrs) { "
            "const v = el.getAttribute(a); const mine = v ? put(v) : null; "
            "if (mine !== null && mine !== v) el.setAttribute(a, mine); } }; "
            "fix(); "
            # Only new elements can bring English words; the streaming views (live text, log, stage) never do, so
            # their mutations are skipped, and a burst of changes costs one pass, at most ten times a second.
            "const busy = '#sv-live, #sv-log, #sv-cls-stage, #sv-inspect-text, #sv-metrics'; "
            # An attribute change counts only when it writes one of the English words back (Plotly does, on
            # redraw), so the page's own translations never wake it again.
            "new MutationObserver((records) => { if (queued) return; "
            "for (const r of records) { if (r.type === 'attributes') { "
            "if (put(r.target.getAttribute(r.attributeName) || '') === null) continue; } "
            # Gradio rewrites a panel's text in place (a count, the usage line): only English there wakes it.
            "else if (r.type === 'characterData') { if (!panelText(r)) continue; } else { "
            "const el = r.target.nodeType === 1 ? r.target : r.target.parentElement; "
            "if (el && el.closest && el.closest(busy)) continue; } "
            "queued = true; setTimeout(fix, 100); return; } })"
            ".observe(document.documentElement, {subtree: true, childList: true, attributes: true, "
            "characterData: true, attributeFilter: cfg.attrs}); }")
