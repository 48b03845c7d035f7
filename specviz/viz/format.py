"""Formatting primitives of the views: the palette, the one escaping function, numbers and token text.

`esc` is the only HTML escaping in specviz.viz: everything that comes from a
prompt, a model, a tokenizer, a trace file or the strings table goes through it
(directly or through `rich`) before it reaches markup or a Plotly label.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import escape

from ..strings import DEFAULT_LANG, fill, t, template

# Okabe & Ito (2008), "Color Universal Design".
PALETTE = {
    "accepted": "#0072B2",
    "rejected": "#CC79A7",
    "discarded": "#8C8C8C",
    "correction": "#D55E00",
    "bonus": "#009E73",
    "prompt": "#555555",
    "q": "#E69F00",      # draft (q) bars: orange
    "p": "#0072B2",      # target (p) bars: blue
    "residual": "#D55E00",
}

MARKERS = {"accepted": "✓", "rejected": "✗", "discarded": "·", "correction": "↻", "bonus": "★"}
def esc(value, quote: bool = True) -> str:
    """Escape anything for HTML text or a quoted attribute: the one escaping function of the views.

    quote=False leaves quotes alone, for Plotly's pseudo-HTML (titles, ticks,
    hovers), which decodes &lt; &gt; &amp; but shows &quot; literally.
    """
    return escape(str(value), quote=quote)


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"\*(.+?)\*")


def rich(key: str, lang: str = DEFAULT_LANG, **values) -> str:
    """A string-table text as HTML: escaped, then **bold** and *italic* turned into tags, then values (escaped)."""
    html = _ITALIC.sub(r"<i>\1</i>", _BOLD.sub(r"<b>\1</b>", esc(template(key, lang))))
    return fill(html, **{name: esc(v) for name, v in values.items()})


def display_number(x: float | None, digits: int = 3) -> str:
    """A probability or a time for display; NaN/None (not recorded) -> an em dash."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x != 0 and abs(x) < 10 ** -digits:
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


def significant(x: float, digits: int = 3) -> str:
    """A probability to `digits` significant figures (never fewer than 3 decimals): 0.310, 0.0124, 1.000, and
    1.24e-05 below 0.01; 0 and NaN as `display_number` writes them."""
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x == 0:
        return display_number(x)
    if abs(x) < 0.01:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{max(3, digits - 1 - math.floor(math.log10(abs(x))))}f}"


@dataclass(frozen=True)
class RatioShown:
    """The numbers of one `a = min(1, p/q)` line as shown (`u` "" when it is not shown)."""

    p: str
    q: str
    a: str
    u: str = ""


def _agrees(p: str, q: str, a: str, decimals: int) -> bool:
    qv = float(q)
    return qv > 0 and display_number(min(1.0, float(p) / qv), decimals) == a


def ratio_shown(p: float, q: float, a: float, u: float | None = None) -> RatioShown:
    """p, q, a (and u) written so the line checks out by hand: min(1, p/q) of the shown p and q rounds to the shown
    a, and the shown u falls on the same side of the shown a as the true u of the true a. a stays the decoder's own
    value; p and q get more significant figures (3 at least) and a and u more decimals (3 at least) only where
    fewer would disagree (0.012/0.019 = 0.63, not the true a 0.651)."""
    values = (p, q, a) if u is None else (p, q, a, u)
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values) or not q > 0:
        return RatioShown(display_number(p), display_number(q), display_number(a),
                          "" if u is None else display_number(u))
    for decimals in range(3, 10):
        shown_a, shown_u = display_number(a, decimals), "" if u is None else display_number(u, decimals)
        if u is not None and (float(shown_u) < float(shown_a)) != (u < a) and decimals < 9:
            continue
        for digits in range(3, 18):
            shown = RatioShown(significant(p, digits), significant(q, digits), shown_a, shown_u)
            if _agrees(shown.p, shown.q, shown_a, decimals):
                return shown
    return RatioShown(repr(float(p)), repr(float(q)), display_number(a), "" if u is None else display_number(u))


# A place's category follows English (11th-13th are "other"); each table says what a category writes.
_ORDINAL_KEYS = {1: "ordinal.one", 2: "ordinal.two", 3: "ordinal.few"}


def ordinal(n: int, lang: str = DEFAULT_LANG) -> str:
    """`n` as a place in a line: "1st", "2nd", "3rd", "11th" in English; "1.º", "2.º" in Spanish."""
    n = int(n)
    key = "ordinal.other" if n % 100 in (11, 12, 13) else _ORDINAL_KEYS.get(n % 10, "ordinal.other")
    return t(key, lang, n=n)


def pct(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * x:.0f}%"


def token_display(text: str, visible_space: bool = False) -> str:
    """Token text made visible (unescaped): empty -> ∅; in cards, blanks become ␣ ↵ ⇥."""
    if text == "":
        return "∅"
    if visible_space or not text.strip():
        shown = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")
        return shown if visible_space else _keep_newlines(text, shown)
    return text


def _keep_newlines(raw: str, shown: str) -> str:
    # A whitespace-only token in running text: show its symbols but keep the line break.
    return shown + ("\n" if "\n" in raw else "")


_SPECIAL = re.compile(r"<\|[A-Za-z0-9_.:/ -]{1,40}\|>|</s>|<s>|<eos>|<pad>|<unk>")


def strip_special(text: str) -> str:
    """Text with the usual special-token markers (`<|im_end|>`, `</s>`, ...) removed: for a clean copy of an output
    whose tokenizer is not at hand (a replayed trace)."""
    return _SPECIAL.sub("", text or "")


# Drafters by name (specviz.engine.drafters.DRAFTERS); literal keys so tests/test_strings.py finds each one. A drafter
# added to DRAFTERS without a key here is shown by its own name (escaped wherever it reaches markup).
_DRAFTER_KEYS = {"model": "drafter.model", "ngram": "drafter.ngram", "hybrid": "drafter.hybrid",
                 "trimmed": "drafter.trimmed", "hybrid_trimmed": "drafter.hybrid_trimmed", "tree": "drafter.tree"}


def drafter_name(name: str, lang: str = DEFAULT_LANG) -> str:
    """A drafter (or a drafted token's source, "model" or "ngram") in words; unknown names as they are."""
    key = _DRAFTER_KEYS.get(str(name))
    return t(key, lang) if key else t("drafter.other", lang, name=str(name)[:60])


_WEIGHTS_KEYS = {"q4a8": "weights.q4a8"}   # storage kinds whose short name needs words (int4, fp32... read as they are)


def weights_text(label: str, lang: str = DEFAULT_LANG) -> str:
    """How the target stored its weights, for a sentence: "4-bit with int8 activations (q4a8)", "int4", "fp32"."""
    key = _WEIGHTS_KEYS.get(str(label))
    return t(key, lang) if key else str(label)


def source_line(source: str, lang: str = DEFAULT_LANG) -> str:
    """Who proposed a drafted token, for its details."""
    if source == "model":
        return t("hover.source_model", lang)
    if source == "ngram":
        return t("hover.source_ngram", lang)
    return t("hover.source_other", lang, name=str(source)[:60])


def round_drafter_text(rnd, lang: str = DEFAULT_LANG) -> str:
    """Which drafter ran a round (`Round.drafter`) and, for a mixed one such as hybrid, who drafted this round."""
    name = drafter_name(getattr(rnd, "drafter", "model"), lang)
    sources = list(dict.fromkeys(getattr(tk, "source", "model") for tk in rnd.drafted))
    if getattr(rnd, "drafter", "model") in ("model", "ngram", "tree") or not sources:
        return t("card.drafter", lang, name=name)
    return t("card.drafter_round", lang, name=name, source=" + ".join(drafter_name(s, lang) for s in sources))
