"""The Spanish page's Gradio panels and Plotly's mode bar in Chromium, on the tiny-model app: the settings panel and
"Use via API" (Gradio's own texts, the endpoints' descriptions, each parameter's line, the usage line) in Spanish,
the mode bar's titles Spanish from the first draw (never written in English first), and the API panel's MCP probe
answered in the page (no 404 in the server's log or the browser's console).

Every wait is on a condition of the page (a text appears, a node is there), never on a fixed time, so a machine
twice as slow passes as a fast one does.
"""
from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from specviz.strings import t, template
from specviz.ui.api import ABOUT
from specviz.ui.locale_panels import PANEL_KEYS
from tests.browser.page import CHROMIUM, open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")

# The panel's text nodes outside code, spaces collapsed.
TEXTS_JS = """() => [...document.querySelectorAll('.api-docs-wrap')].flatMap(root => {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), out = []; let n;
    while ((n = walk.nextNode())) { const v = n.nodeValue.replace(/\\s+/g, ' ').trim();
      if (v && !n.parentElement.closest('pre, code, textarea')) out.push(v); }
    return out; })"""
# Every data-title a mode bar button was ever given, recorded as it happens (from before the page's own scripts).
RECORD_TITLES_JS = """(() => { window.__svTitles = [];
  new MutationObserver(rs => { for (const r of rs) {
      const els = r.type === 'attributes' ? [r.target] : [...r.addedNodes].filter(n => n.nodeType === 1)
        .flatMap(n => [n, ...n.querySelectorAll('[data-title]')]);
      for (const el of els) if (el.getAttribute && el.getAttribute('data-title')) window.__svTitles.push(el.getAttribute('data-title'));
  } }).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-title']}); })()"""


def english_of_panels() -> list[str]:
    """The English texts of the panels that hold a whole word (no placeholders), as Gradio writes them."""
    words = [template(k) for k in PANEL_KEYS if "{" not in template(k)]
    return [w for w in words if len(w) > 3 and w not in ("beta",)]


def open_panel(pg, which: str, wait_for: str):
    pg.page.locator(f"footer button.{which}").click()
    pg.page.wait_for_function("(w) => [...document.querySelectorAll('.api-docs-wrap')].some(e => e.innerText.includes(w))",
                              arg=wait_for, timeout=60_000)


def test_the_spanish_settings_panel_reads_spanish(browser, server, shots):
    pg = open_page(browser, server, shots, 1366, 900, "es")
    try:
        open_panel(pg, "settings", t("gradio.panel.view_history", "es"))
        texts = pg.page.evaluate(TEXTS_JS)
        for key in ("theme_light", "theme_dark", "theme_system", "language", "screen_studio", "start_recording",
                    "history_about", "history_storage"):
            assert t(f"gradio.panel.{key}", "es") in texts, key
        assert t("gradio.panel.run_history", "es", n=0) in texts
        left = [w for w in english_of_panels() if w in texts]
        assert not left, left
        assert pg.page.locator(".api-docs-wrap input[aria-label]").first.get_attribute("aria-label") == "Idioma"
    finally:
        pg.close()


def _call_what_if(server: str) -> None:
    """One API call, so the panel has a usage line to show."""
    body = json.dumps({"data": [0.8, 4, 0.2]}).encode()
    request = urllib.request.Request(server + "gradio_api/call/what_if", body, {"Content-Type": "application/json"})
    event = json.loads(urllib.request.urlopen(request, timeout=60).read())["event_id"]
    urllib.request.urlopen(f"{server}gradio_api/call/what_if/{event}", timeout=60).read()


def test_the_spanish_api_panel_reads_spanish_and_asks_no_mcp_schema(browser, server, shots):
    _call_what_if(server)
    pg = open_page(browser, server, shots, 1366, 900, "es")
    asked, errors = [], []
    pg.page.on("request", lambda r: asked.append(r.url) if "/mcp/" in r.url else None)
    pg.page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        open_panel(pg, "show-api", t("api.about.what_if", "es"))
        pg.page.wait_for_function("(w) => document.querySelector('.api-docs-wrap').innerText.includes(w)",
                                  arg=t("gradio.panel.input_value", "es", nth="1"), timeout=60_000)
        texts = pg.page.evaluate(TEXTS_JS)
        for name, key in ABOUT.items():   # the five descriptions, from the strings table
            assert t(key, "es") in texts and t(key) not in texts, name
        for key in ("choose_way", "api_name", "required", "returns", "find_endpoint", "api_recorder"):
            assert t(f"gradio.panel.{key}", "es") in texts, key
        assert t("gradio.panel.accepts_many", "es", n=16) in texts and t("gradio.panel.accepts", "es", n=1) in texts
        assert "s" not in texts   # the plural's own "s" node, folded into the Spanish plural
        usage = [x for x in texts if re.match(r"\d+ (requests|peticiones|petición) \(", x)]
        assert usage and all(re.match(r"(1 petición|([02-9]|\d\d+) peticiones) \(\d+ % con éxito, p50: ", x)
                             for x in usage), usage
        assert "1 petición (" in " ".join(usage), usage      # what_if was called once: the count agrees with it
        # The header is one Spanish phrase, never Gradio's "API" beside a translated "documentation".
        assert t("gradio.panel.api_documentation", "es") in pg.page.locator(".api-docs-wrap h2").first.inner_text()
        assert "API documentación" not in " ".join(texts) and "API" not in texts
        left = [w for w in english_of_panels() if w in texts]
        assert not left, left
        assert not [x for x in texts if "Api component" in x or x.startswith("Accepts ")]
        assert not asked, asked   # the MCP probe never left the page: no 404 in the server's log
        assert not [e for e in errors if "404" in e or "mcp" in e.lower()], errors
    finally:
        pg.close()


def test_the_mode_bar_is_spanish_from_its_first_draw(browser, server, shots):
    pg = open_page(browser, server, shots, 1366, 900, "es")
    try:
        pg.page.add_init_script(RECORD_TITLES_JS)
        pg.page.reload()
        pg.page.wait_for_selector("#sv-run", timeout=30_000)
        pg.page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.sweep", "es"), exact=True).click()
        pg.page.locator("#sv-sweep-plot").hover()
        pg.page.wait_for_selector("#sv-sweep-plot .modebar-btn[data-title]", state="attached", timeout=60_000)
        titles = pg.page.evaluate("() => window.__svTitles")
        assert t("plotly.zoom_in", "es") in titles or t("plotly.download", "es") in titles, titles
        english = {t(k) for k in ("plotly.zoom_in", "plotly.zoom_out", "plotly.autoscale", "plotly.reset_axes",
                                  "plotly.download", "plotly.pan", "plotly.zoom")}
        assert not english & set(titles), titles   # never written in English, even for a moment
    finally:
        pg.close()
