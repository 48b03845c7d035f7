"""Gradio's settings and "Use via API" panels in the page's language.

Gradio 6 writes most of these two panels without its i18n (the theme names, the recording tool, the run history,
the whole API panel: the install steps, "Accepts 3 parameters", each parameter's line, the usage line), so a
Spanish page showed them in English. The page's language script (`locale.page_language_js`) rewrites their text
nodes from the strings table (keys `gradio.panel.*`: the English exactly as Gradio writes it, spaces collapsed, then
the page's own): an exact text, or a text with `{placeholders}` (a count, "1st", a percentage) as a pattern. Gradio
writes a plural's "s" in a text node of its own after the word; a word followed by that "s" takes its plural key
(`PLURALS`) and the "s" is emptied. A count in a Spanish text agrees with its noun (`{n:petición|peticiones}`, the
strings table's plural spec: "1 petición", never "1 peticiones"). Two neighbouring nodes that read as one phrase
("API" then "documentation", the API panel's header) are rewritten together (`JOINED_KEYS`): word by word the
Spanish came out "API documentación". Code, commands and identifiers are never touched (`pre`, `code`).
"""
from __future__ import annotations

import re

from ..strings import DEFAULT_LANG, fill, template

PREFIX = "gradio.panel."
# Every text of the two panels the strings table holds (named here, so the strings tests see each one used).
PANEL_KEYS = ("gradio.panel.theme_light", "gradio.panel.theme_dark", "gradio.panel.theme_system",
              "gradio.panel.language", "gradio.panel.pwa_off", "gradio.panel.screen_studio",
              "gradio.panel.screen_studio_about", "gradio.panel.start_by", "gradio.panel.start_recording",
              "gradio.panel.start_then", "gradio.panel.stop_by", "gradio.panel.stop_then",
              "gradio.panel.auto_zoom", "gradio.panel.auto_trim", "gradio.panel.history_about",
              "gradio.panel.view_history", "gradio.panel.history_storage", "gradio.panel.this_browser",
              "gradio.panel.private_device", "gradio.panel.documentation", "gradio.panel.api_recorder",
              "gradio.panel.api_endpoint", "gradio.panel.api_endpoints", "gradio.panel.choose_way",
              "gradio.panel.copy_page", "gradio.panel.install_the", "gradio.panel.client_open",
              "gradio.panel.docs", "gradio.panel.if_not_installed", "gradio.panel.latest_gradio",
              "gradio.panel.skill_install", "gradio.panel.instead_of", "gradio.panel.you_can_use",
              "gradio.panel.or_comma", "gradio.panel.combine_flags", "gradio.panel.user_level",
              "gradio.panel.skill_added", "gradio.panel.mcp_server", "gradio.panel.or_set_the",
              "gradio.panel.env_variable_to", "gradio.panel.find_endpoint", "gradio.panel.or_use_the",
              "gradio.panel.auto_requests", "gradio.panel.api_name", "gradio.panel.required",
              "gradio.panel.default", "gradio.panel.returns", "gradio.panel.no_routes",
              "gradio.panel.run_history", "gradio.panel.accepts", "gradio.panel.accepts_many",
              "gradio.panel.elements", "gradio.panel.elements_many", "gradio.panel.input_value",
              "gradio.panel.output_value", "gradio.panel.usage")
# Phrases Gradio writes as two text nodes side by side ("API" or "MCP", then "documentation"): the English of both,
# joined by a space, and the page's phrase, written into the second node (the first is emptied).
JOINED_KEYS = ("gradio.panel.api_documentation",)
# A word Gradio writes with its plural's "s" in the next text node -> the key of its plural.
PLURALS = {"gradio.panel.api_endpoint": "gradio.panel.api_endpoints", "gradio.panel.accepts": "gradio.panel.accepts_many",
           "gradio.panel.elements": "gradio.panel.elements_many"}
# Texts of other keys these panels show: a word the attribute pass translates too (locale.UNTRANSLATED_KEYS), and
# the endpoints' descriptions (the API panel reads them from /info without the page, so in the root page's English).
ALSO_TEXT = ("gradio.stop_recording", "api.about.generate", "api.about.replay", "api.about.sweep", "api.about.what_if",
             "api.about.race")
ROOTS = ".api-docs-wrap, footer"   # the panels (both open in this wrapper) and the footer's buttons
_PLACE = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def _escape(text: str) -> str:
    """`text` as a JavaScript regular expression matching it literally."""
    return re.sub(r"[.*+?^${}()|\[\]\\/]", lambda m: "\\" + m.group(0), text)


def pattern(english: str) -> tuple[str, list[str]]:
    """(a JavaScript regular expression for a template's English, its placeholders' names in order)."""
    parts, names, last = [], [], 0
    for m in _PLACE.finditer(english):
        parts += [_escape(english[last:m.start()]), "(.+?)"]
        names.append(m.group(1))
        last = m.end()
    return "^" + "".join(parts) + _escape(english[last:]) + "$", names


def panel_words(lang: str) -> dict:
    """{"texts": {English: [own, own plural]}, "patterns": [[regex, names, own, own plural]], "joined": {English of
    two nodes: own}}; {} for English."""
    if lang == DEFAULT_LANG:
        return {}
    keys = [*PANEL_KEYS, *ALSO_TEXT]
    texts, patterns = {}, []
    for key in keys:
        english, own, many = template(key), template(key, lang), template(PLURALS.get(key, key), lang)
        if english == own:
            continue
        if _PLACE.search(english):
            patterns.append([*pattern(english), own, many])
        else:
            texts[english] = [own, many]
    joined = {template(key): template(key, lang) for key in JOINED_KEYS if template(key) != template(key, lang)}
    return {"texts": texts, "patterns": patterns, "joined": joined}


def translated_text(text: str, lang: str, many: bool = False) -> str | None:
    """A panel's text node as the page's script leaves it (the same rules in Python, for the tests); None: kept."""
    words = panel_words(lang)
    text = " ".join(text.split())
    if text in words.get("texts", {}):
        return words["texts"][text][1 if many else 0]
    for regex, names, own, plural in words.get("patterns", []):
        m = re.match(regex.replace("\\/", "/"), text)
        if m:
            values = {n: (v[:-2] if n == "nth" and v[-2:] in ("st", "nd", "rd", "th") else v)
                      for n, v in zip(names, m.groups())}
            return fill(plural if many else own, **values)
    return None


def joined_text(before: str, text: str, lang: str) -> str | None:
    """Two neighbouring text nodes as the page's script leaves the second (the first is emptied); None: kept."""
    key = " ".join(f"{before} {text}".split())
    return panel_words(lang).get("joined", {}).get(key)


# The script's part for the panels: `fixPanels()` rewrites their text nodes; `ours` remembers what it wrote, so a
# node is rewritten again only when Gradio writes English into it again.
PANEL_JS = (
    "const panel = cfg.panel || {texts: {}, patterns: []}; "
    "const pats = (panel.patterns || []).map(([src, names, one, more]) => [new RegExp(src), names, one, more]); "
    "const ours = new WeakMap(); "
    "const fill = (tpl, names, m) => tpl.replace(/\\{(\\w+)(?::([^|}]*)\\|([^}]*))?\\}/g, (_, k, one, other) => { "
    "const v = m[names.indexOf(k) + 1] || ''; "
    "if (one !== undefined) return v + ' ' + (v.trim() === '1' ? one : other); "
    "return k === 'nth' ? v.replace(/(st|nd|rd|th)$/, '') : v; }); "
    "const joined = panel.joined || {}; "
    "const mine = (text, many) => { if (Object.prototype.hasOwnProperty.call(panel.texts, text)) "
    "return panel.texts[text][many ? 1 : 0]; "
    "for (const [re, names, one, more] of pats) { const m = text.match(re); if (m) return fill(many ? more : one, names, m); } "
    "return null; }; "
    "const fixPanels = () => { for (const root of document.querySelectorAll(" + repr(ROOTS) + ")) { "
    "const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT); const nodes = []; let n; "
    "while ((n = walk.nextNode())) nodes.push(n); "
    "for (let i = 0; i < nodes.length; i++) { const node = nodes[i], v = node.nodeValue; "
    "if (ours.get(node) === v || !v.trim()) continue; "
    "if (node.parentElement && node.parentElement.closest('pre, code, textarea')) continue; "
    "let p = i - 1; while (p >= 0 && !nodes[p].nodeValue.trim()) p--; "
    "const prev = p >= 0 && nodes[p].parentElement === node.parentElement ? nodes[p] : null; "
    "const pair = prev ? (prev.nodeValue + ' ' + v).replace(/\\s+/g, ' ').trim() : ''; "
    "if (prev && Object.prototype.hasOwnProperty.call(joined, pair)) { "
    "node.nodeValue = v.match(/^\\s*/)[0] + joined[pair] + v.match(/\\s*$/)[0]; ours.set(node, node.nodeValue); "
    "prev.nodeValue = ''; ours.set(prev, ''); continue; } "
    "let j = i + 1; while (j < nodes.length && !nodes[j].nodeValue.trim()) j++; "
    "const next = nodes[j], many = !!next && next.nodeValue.trim() === 's'; "
    "const own = mine(v.replace(/\\s+/g, ' ').trim(), many); if (own === null) continue; "
    "node.nodeValue = v.match(/^\\s*/)[0] + own + v.match(/\\s*$/)[0]; ours.set(node, node.nodeValue); "
    "if (many) { next.nodeValue = ''; ours.set(next, ''); } } } }; "
    "const panelText = (r) => { const el = r.target.parentElement; "
    "return !!el && !!el.closest(" + repr(ROOTS) + ") && ours.get(r.target) !== r.target.nodeValue; }; "
)
