"""A run (or a trace file) as one self-contained HTML page that replays it round by round, offline.

For a class without a server: the file opens in any browser with no network, no model and no app. It holds
every round already drawn by the app's own views (the live text's fragments with each token's q, p,
a = min(1, p/q), u and verdict in its details, the round cards with their trees), the metric tiles' values
after each round, and the numbers the two charts are drawn from; assets/export.js shows the rounds up to the
one chosen and draws the charts as inline SVG. No Plotly: its script alone is ~4.8 MB, the whole page of a
typical run is a few hundred KB.

A trace is user input, so the page is as strict as the app: every text reaches markup through `format.esc`
(the views below), the JSON block has `<`, `>`, `&` and the two JavaScript line separators escaped so no
token can close it, the script writes text only through textContent, and the page's Content-Security-Policy
allows no network at all and no script but its own (by hash): were a token ever to reach markup unescaped,
the browser would still run nothing of it.

    export_html(trace, lang)      the page as a string
    write_html(trace, path, lang) ... written to a file
    read_trace(path)              a trace file, refused beyond the app's upload limit or if malformed
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

from ..limits import ASSETS, EXPORT_LOG_ROUNDS, EXPORT_MAX_ROUNDS, EXPORT_TIMING_ROUNDS
from ..strings import DEFAULT_LANG, LANGUAGES, t, template
from ..trace.files import TraceFormatError, check_size
from ..trace.records import Round, Trace, metrics
from .cards import round_card_html
from .format import PALETTE, display_number, esc, pct
from .html import LiveText, legend_html, metrics_html, round_fragment_html, token_css, trace_summary_html

PLAY_INTERVAL_MS = 900      # Play: one round this often, slow enough to read the round that arrived


def read_trace(path: str | os.PathLike) -> Trace:
    """A trace file for export: size-checked before it is read (the page's upload limit and sentence), then parsed
    and checked whole (`Trace.from_json`); TraceFormatError or OSError if unusable."""
    check_size(os.path.getsize(path))
    with open(path, "rb") as fh:
        return Trace.from_json(fh.read())


def write_html(trace: Trace, path: str | os.PathLike, lang: str = DEFAULT_LANG) -> Path:
    """The page of `trace` written to `path` (UTF-8); its path."""
    path = Path(path)
    path.write_text(export_html(trace, lang), encoding="utf-8")
    return path


def export_html(trace: Trace, lang: str = DEFAULT_LANG) -> str:
    """The whole page: one string with its styles, script and data inline; nothing is fetched when it opens."""
    if len(trace.rounds) > EXPORT_MAX_ROUNDS:
        raise TraceFormatError("export.too_many_rounds", n=len(trace.rounds), limit=EXPORT_MAX_ROUNDS)
    lang = lang if lang in LANGUAGES else DEFAULT_LANG
    script = _asset("specviz.js") + "\n" + _asset("export.js")
    style = _asset("specviz.css") + token_css() + _asset("export.css")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # No network of any kind (default-src 'none'), and no script but the page's own: an injected <script> or
    # onerror= would be refused by the browser even if it reached the markup.
    policy = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    head = (f'<!DOCTYPE html><html lang="{esc(lang)}"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{esc(t("export.title", lang))}</title><style>{style}</style></head>')
    data = f'<script type="application/json" id="sv-x-data">{script_json(_page_data(trace, lang))}</script>'
    return f'{head}<body data-round="{len(trace.rounds)}"><main>{_body(trace, lang)}</main>{data}' \
           f'<script>{script}</script></body></html>'


def script_json(data) -> str:
    """JSON that can sit inside a <script> element: no `<`, `>` or `&` (so no `</script>` or `<!--` can appear), and
    U+2028/U+2029 escaped (older JavaScript engines read them as line ends inside a string)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------- the page's parts
def _body(trace: Trace, lang: str) -> str:
    m = metrics(trace.rounds)
    recorded = t("replay.recorded_on", lang, device=trace.device, dtype=trace.dtype).strip()
    summary = trace_summary_html(trace.prompt, trace.draft_model, trace.target_model, trace.k, trace.sampling,
                                 recorded, lang=lang)
    live = LiveText(trace.prompt, trace.greedy, lang=lang).html() + "".join(
        _hidden(round_fragment_html(rnd, trace.greedy, lang)) for rnd in trace.rounds)
    cards = "".join(_hidden(round_card_html(rnd, trace.greedy, lang)) for rnd in reversed(trace.rounds))
    return (f'<h1>{esc(t("export.title", lang))}</h1><p class="sv-x-intro">{esc(t("export.intro", lang))}</p>'
            f'{summary}<noscript><p class="sv-status sv-status-warn">{esc(t("export.noscript", lang))}</p>'
            f'<style>{_NO_SCRIPT_STYLE}</style></noscript>'
            f'{_nav(len(trace.rounds), lang)}'
            f'<div id="sv-x-tiles">{metrics_html(m, done=True, prefill_seconds=trace.prefill_seconds, lang=lang)}</div>'
            f'<h2>{esc(t("export.live", lang))}</h2><div id="sv-live">{live}</div>'
            f'<div id="sv-legend">{legend_html(trace.greedy, lang)}</div>'
            f'<h2>{esc(t("export.charts", lang))}</h2>{_charts(lang)}'
            f'<h2>{esc(t("tab.log", lang))}</h2><div id="sv-log">'
            f'<div id="sv-log-empty" class="sv-muted" hidden>{esc(t("log.empty", lang))}</div>'
            f'<div id="sv-log-more" class="sv-muted" hidden>{esc(t("export.log_window", lang, n=EXPORT_LOG_ROUNDS))}'
            f'</div>{cards}</div>'
            f'<p class="sv-x-foot">{esc(t("export.made", lang, rounds=m["rounds"], tokens=m["tokens"]))}</p>')


# Without a script (a browser with JavaScript off), every round is shown: the page is then the whole run at once.
_NO_SCRIPT_STYLE = ("#sv-live .sv-round[hidden] { display: inline !important; } "
                    "#sv-log .sv-card[hidden] { display: block !important; }")


def _hidden(fragment: str) -> str:
    """A round's fragment or card (`<span class="sv-round" ...` / `<div class="sv-card" ...`) hidden until the script
    shows it: a page whose thousands of cards were all laid out before the script hid them took 18 s to open
    (4,096 rounds, 24 MB, Chromium on a loaded 2-core machine), hidden from the start 1.6 s."""
    tag, rest = fragment.split(" ", 1)
    return f"{tag} hidden {rest}"


def _nav(n: int, lang: str) -> str:
    """The buttons, the slider and the line saying which round is shown (filled by the script)."""
    buttons = "".join(f'<button type="button" id="sv-x-{name}">{esc(t(key, lang))}</button>' for name, key in (
        ("first", "export.first"), ("prev", "export.prev"), ("play", "export.play"), ("next", "export.next"),
        ("last", "export.last")))
    return (f'<nav class="sv-x-nav" aria-label="{esc(t("export.nav", lang))}">'
            f'<div id="sv-x-label" aria-live="polite">{esc(t("export.round_of", lang, n=n, total=n))}</div>'
            f'{buttons}<input type="range" id="sv-x-slider" min="0" max="{n}" step="1" value="{n}" '
            f'aria-label="{esc(t("export.slider", lang))}"></nav>'
            f'<p class="sv-x-keys">{esc(t("export.keys", lang))}</p>')


def _charts(lang: str) -> str:
    """The two charts' frames; assets/export.js draws their bars for the round shown."""
    def key(colour: str, text: str) -> str:
        return f'<span class="sv-x-key" style="background:{colour}"></span>{esc(text)} '

    acceptance = (f'<div class="sv-x-chart"><h3>{esc(t("chart.acceptance", lang))}</h3>'
                  f'<div class="sv-muted">{esc(t("chart.acceptance_sub", lang))}</div>'
                  f'<svg id="sv-x-acc" viewBox="0 0 600 240" role="img" '
                  f'aria-label="{esc(t("chart.acceptance", lang))}"></svg></div>')
    timing = (f'<div class="sv-x-chart"><h3>{esc(t("chart.timeline", lang))}</h3>'
              f'<div class="sv-muted">{esc(t("export.timing_sub", lang, n=EXPORT_TIMING_ROUNDS))}</div>'
              f'<svg id="sv-x-time" viewBox="0 0 600 240" role="img" aria-label="{esc(t("chart.timeline", lang))}">'
              f'</svg><p class="sv-x-keyline">{key(PALETTE["q"], t("chart.draft_series", lang))}'
              f'{key(PALETTE["p"], t("chart.verify_series", lang))}</p></div>')
    return f'<div class="sv-x-grid2">{acceptance}{timing}</div>'


# ---------------------------------------------------------------- the numbers the script shows
def _page_data(trace: Trace, lang: str) -> dict:
    words = {"round_of": template("export.round_of", lang), "start": template("export.start", lang),
             "play": t("export.play", lang), "pause": t("export.pause", lang),
             "acc_bar": template("chart.acceptance_hover_counts", lang), "acc_x": t("chart.acceptance_x", lang),
             "time_bar": template("export.timing_bar", lang), "time_x": t("chart.timeline_x", lang),
             "no_rounds": t("chart.no_rounds", lang)}
    return {"total": len(trace.rounds), "start": 0, "window": EXPORT_TIMING_ROUNDS, "log_window": EXPORT_LOG_ROUNDS,
            "interval_ms": PLAY_INTERVAL_MS,
            "words": words, "colors": {name: PALETTE[name] for name in ("accepted", "q", "p")},
            "rounds": [_round_numbers(r) for r in trace.rounds], "tiles": tiles_by_round(trace.rounds)}


def _round_numbers(rnd: Round) -> list:
    """[K, accepted, draft ms, verify ms, tokens emitted]: what the two charts need of a round."""
    return [rnd.k, rnd.n_accepted, round(1000 * rnd.draft_seconds, 3), round(1000 * rnd.verify_seconds, 3),
            len(rnd.emitted)]


def tiles_by_round(rounds: list[Round]) -> list[dict]:
    """The metric tiles' texts after 0, 1, ..., n rounds, formatted as `html.metrics_html` formats them (same
    `metrics` arithmetic, summed as it goes so that n rounds cost n steps, not n²)."""
    out = [_tiles(0, 0, 0, 0, 0.0, 0.0, 0.0)]
    tokens = drafted = accepted = 0
    seconds = draft_s = verify_s = 0.0
    for i, rnd in enumerate(rounds, start=1):
        tokens, drafted, accepted = tokens + len(rnd.emitted), drafted + rnd.k, accepted + rnd.n_accepted
        seconds, draft_s, verify_s = seconds + rnd.seconds, draft_s + rnd.draft_seconds, verify_s + rnd.verify_seconds
        out.append(_tiles(i, tokens, drafted, accepted, seconds, draft_s, verify_s))
    return out


def _tiles(n: int, tokens: int, drafted: int, accepted: int, seconds: float, draft_s: float, verify_s: float) -> dict:
    nan = float("nan")
    tiles = {"tps": display_number(tokens / seconds if seconds > 0 else nan, 1),
             "acceptance": pct(accepted / drafted if drafted else nan),
             "tau": display_number(tokens / n if n else nan, 2), "rounds": str(n), "tokens": str(tokens)}
    both = draft_s + verify_s
    tiles["split"] = f"{pct(draft_s / both)} / {pct(verify_s / both)}" if both > 0 else "—"
    return tiles
