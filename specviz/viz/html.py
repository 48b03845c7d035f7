"""Rounds -> HTML strings for the live text, the legend and the metric tiles (the round cards: `cards.py`).

Every string that comes from a prompt, a model, a tokenizer, a trace file or the
strings table goes through `esc` (``html.escape(..., quote=True)``, in
`format.py`) before it reaches markup, and numbers are formatted here, so an
attacker-controlled token such as ``<img src=x onerror=alert(1)>`` is shown as
text. Words come from `specviz.strings`; every view takes `lang`.

Provenance of a token (one colour from the Okabe-Ito palette, which stays
distinguishable under the common colour-vision deficiencies, AND one shape or
line style, so colour is never the only cue):

    accepted    blue,            solid underline                 (draft token the target agreed with)
    rejected    reddish purple,  struck through, marked ✗        (draft token that failed u < a)
    discarded   grey, faint,     dotted strike                   (drafted after the rejection, never used)
    correction  vermillion,      wavy underline, marked ↻        (drawn from the residual max(0, p - q))
    bonus       bluish green,    double underline, marked ★      (all K accepted: one more token from p)

Incremental rendering: `LiveText` (and `cards.RoundLog`) build each round's fragment
once, when the round arrives, and keep it; the page value is the fragments
joined. The live text is append-only (prompt first, then one fragment per
round), so a streamed update sends only the new rounds (`LiveText.appended`;
the page appends them: assets/live_text.js).
"""
from __future__ import annotations

import math
from collections import deque
from typing import Iterable, Sequence

from ..trace.compare import speedup as _speedup
from ..strings import DEFAULT_LANG, t
from ..trace.records import Alt, Choice, Round
from .format import MARKERS, PALETTE, esc, display_number, pct, ratio_shown, rich, round_drafter_text, source_line, token_display, weights_text  # noqa: F401

KINDS = ("accepted", "rejected", "discarded", "correction", "bonus")

# Literal keys (not built with f-strings) so tests/test_strings.py can find every key in use.
_VERDICT_KEYS = {"accepted": "verdict.accepted", "rejected": "verdict.rejected", "discarded": "verdict.discarded"}
_LEGEND_KEYS = {"accepted": "legend.accepted", "rejected": "legend.rejected", "discarded": "legend.discarded",
                "correction": "legend.correction", "bonus": "legend.bonus"}


def descriptions(lang: str = DEFAULT_LANG) -> dict[str, str]:
    """The legend's one-line description of each provenance."""
    return {kind: t(_LEGEND_KEYS[kind], lang) for kind in KINDS}


DESCRIPTIONS = descriptions()


def verdict_word(verdict: str, lang: str = DEFAULT_LANG) -> str:
    """A drafted token's verdict (accepted, rejected, discarded) in words."""
    return t(_VERDICT_KEYS[verdict], lang)


def _tok(text: str) -> str:
    """A token quoted in plain prose (hovers, chart titles): visible blanks, Python-style quotes."""
    return repr(token_display(text, True))


def _alts(alts: Sequence[Alt], n: int = 5) -> str:
    return ", ".join(f"{_tok(a.text)} {display_number(a.prob)}" for a in alts[:n]) or "—"


def _attrs(**values) -> str:
    return " ".join(f'{k.replace("_", "-")}="{esc(v)}"' for k, v in values.items() if v is not None)


# ---------------------------------------------------------------- one token in the live text
def draft_hover(rnd: Round, i: int, greedy: bool, lang: str = DEFAULT_LANG) -> str:
    """Plain-text explanation of drafted token i (0-based) of a round: the hover title."""
    tk = rnd.drafted[i]
    verdict = rnd.verdict(i)
    lines = [t("hover.draft_head", lang, verdict=verdict_word(verdict, lang).upper(), token=_tok(tk.text),
               round=rnd.index + 1, pos=i + 1, k=rnd.k), source_line(tk.source, lang)]
    if verdict == "discarded":
        lines.append(t("hover.discarded", lang, pos=(rnd.rejected_at or 0) + 1))
    n = ratio_shown(tk.p, tk.q, tk.accept_prob, tk.u)   # q, p, a, u written so min(1, p/q) checks out by hand
    lines += [t("hover.q", lang, q=n.q), t("hover.p", lang, p=n.p), f"a = min(1, p/q) = {n.a}", f"u = {n.u}"]
    if verdict == "accepted":
        lines.append(t("hover.accepted", lang))
    elif verdict == "rejected":
        lines.append(t("hover.rejected", lang))
    if greedy:
        lines.append(t("hover.greedy_rule", lang))
        lines.append(t("hover.greedy_confidence", lang, q=display_number(tk.q_confidence), p=display_number(tk.p_confidence)))
        if tk.top_p:
            lines.append(t("hover.target_top", lang, token=_tok(tk.top_p[0].text)))
    lines.append(t("hover.target_top5_conf" if greedy else "hover.target_top5", lang, alts=_alts(tk.top_p)))
    lines.append(t("hover.draft_top5_conf" if greedy else "hover.draft_top5", lang, alts=_alts(tk.top_q)))
    return "\n".join(lines)


def choice_hover(rnd: Round, kind: str, c: Choice, greedy: bool, lang: str = DEFAULT_LANG) -> str:
    if kind == "correction":
        j = (rnd.rejected_at or 0) + 1
        head = t("hover.correction_head", lang, token=_tok(c.text), round=rnd.index + 1, pos=j)
        if greedy:
            head += "\n" + t("hover.correction_greedy", lang)
        prob = f"r(x) = {display_number(c.prob)}"
        top = t("hover.residual_top5", lang, alts=_alts(c.top))
    else:
        head = t("hover.bonus_head", lang, token=_tok(c.text), round=rnd.index + 1, pos=rnd.k + 1, k=rnd.k)
        prob = f"p(x) = {display_number(c.prob)}"
        top = t("hover.target_top5_conf" if greedy else "hover.target_top5", lang, alts=_alts(c.top))
    return "\n".join([head, prob, top])


def source_class(source: str) -> str:
    """The extra class of a drafted token by its origin: prompt lookup gets a visible marker (assets/specviz.css)."""
    return " sv-src-ngram" if source == "ngram" else ""


def live_token_html(text: str, kind: str, title: str, extra_class: str = "", **data) -> str:
    """One token span: class by provenance, its explanation in data-tip, data-* attributes for tools and tests.

    The explanation opens on hover, tap and keyboard focus (tabindex; assets/specviz.js shows `data-tip` in a
    popover), not only as a native tooltip, which touch screens never show.
    """
    shown = token_display(text) if kind in ("accepted", "correction", "bonus") else \
        token_display(text, visible_space=True)
    return (f'<span class="sv-tok sv-{esc(kind)}{extra_class}" {_attrs(data_verdict=kind, **data)} '
            f'tabindex="0" data-tip="{esc(title)}">{esc(shown)}</span>')


def round_fragment_html(rnd: Round, greedy: bool, lang: str = DEFAULT_LANG) -> str:
    """Everything a round adds to the live text, in reading order; built once per round."""
    parts = []
    for i, tk in enumerate(rnd.drafted):
        verdict = rnd.verdict(i)
        n = ratio_shown(tk.p, tk.q, tk.accept_prob, tk.u)
        parts.append(live_token_html(
            tk.text, verdict, draft_hover(rnd, i, greedy, lang), source_class(tk.source), data_round=rnd.index + 1,
            data_pos=i + 1, data_source=tk.source, data_token_id=tk.token_id, data_q=n.q, data_p=n.p,
            data_a=n.a, data_u=n.u))
        if verdict == "rejected" and rnd.correction is not None:
            c = rnd.correction
            parts.append(live_token_html(c.text, "correction", choice_hover(rnd, "correction", c, greedy, lang),
                                         data_round=rnd.index + 1, data_pos=i + 1, data_token_id=c.token_id,
                                         data_r=display_number(c.prob)))
    if rnd.correction is not None and rnd.rejected_at is None:  # defensive: a correction with no rejection
        c = rnd.correction
        parts.append(live_token_html(c.text, "correction", choice_hover(rnd, "correction", c, greedy, lang),
                                     data_round=rnd.index + 1, data_token_id=c.token_id, data_r=display_number(c.prob)))
    if rnd.bonus is not None:
        b = rnd.bonus
        parts.append(live_token_html(b.text, "bonus", choice_hover(rnd, "bonus", b, greedy, lang),
                                     data_round=rnd.index + 1, data_pos=rnd.k + 1, data_token_id=b.token_id,
                                     data_p=display_number(b.prob)))
    return f'<span class="sv-round" data-round="{rnd.index + 1}">{"".join(parts)}</span>'


# A live text update that adds rounds to what the page shows rather than replacing it (`LiveText.appended`); the
# page keeps the newest `window` rounds (0: all). Read by assets/live_text.js.
LIVE_APPEND_MARK = "<!--sv-live-append {window}-->"


class LiveText:
    """The streamed text: the prompt, then one cached fragment per round (append-only).

    With `window`, only the newest `window` rounds are kept and shown, after a line counting the earlier ones: a
    trace of 10,000 rounds must not become a page of 10,000 rounds re-sent on every update."""

    def __init__(self, prompt: str, greedy: bool, prompt_chars: int = 600, lang: str = DEFAULT_LANG,
                 window: int | None = None):
        self.greedy, self.lang = greedy, lang
        shown = prompt if len(prompt) <= prompt_chars else "…" + prompt[-prompt_chars:]
        self._head = (f'<span class="sv-prompt" data-tip="{esc(t("live.prompt_title", lang))}">'
                      f'{esc(shown)}</span><span class="sv-arrow" aria-hidden="true"> ⟶ </span>')
        # (round, its fragment once drawn): drawn when first shown, so rounds that scroll past unseen cost nothing
        self._parts: deque[list] = deque(maxlen=window)
        self._n = 0
        self._sent = 0   # rounds the page holds: those of the last html() or appended()

    def add(self, rnd: Round) -> None:
        self._parts.append([rnd, None])
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def html(self) -> str:
        """The whole text: the prompt, the line counting rounds out of the window, the window's rounds."""
        self._sent = self._n
        note = self._note()
        return self._head + (note + " " if note else "") + self._fragments(len(self._parts))

    def appended(self) -> str:
        """What the page adds to the text it holds (after `html()` or the last `appended()`): the append mark with
        the window, the line counting earlier rounds when there is one, the new rounds' fragments
        (`assets/live_text.js` appends them and keeps the newest `window` rounds). Why: Gradio parses and
        diffs a whole HTML value on every update, which grew with the text and slowed the decode beside it."""
        new, self._sent = min(self._n - self._sent, len(self._parts)), self._n
        return f"{LIVE_APPEND_MARK.format(window=self._parts.maxlen or 0)}{self._note()}{self._fragments(new)}"

    def _note(self) -> str:
        hidden = self._n - len(self._parts)
        return (f'<span class="sv-muted sv-earlier" data-earlier="{hidden}">'
                f'{esc(t("live.earlier", self.lang, n=hidden))}</span>') if hidden else ""

    def _fragments(self, newest: int) -> str:
        """The newest `newest` rounds' fragments, each drawn once."""
        parts = list(self._parts)[len(self._parts) - newest:] if newest else []
        for part in parts:
            if part[1] is None:
                part[1] = round_fragment_html(part[0], self.greedy, self.lang)
        return "".join(part[1] for part in parts)


# ---------------------------------------------------------------- the legend
def legend_html(greedy: bool | None = None, lang: str = DEFAULT_LANG) -> str:
    sample = esc(t("legend.sample", lang))
    items = [f'<span class="sv-legend-item"><span class="sv-tok sv-{kind}">{sample}</span> '
             f'<span class="sv-legend-text">{esc(text)}</span></span>' for kind, text in descriptions(lang).items()]
    items.append(f'<span class="sv-legend-item"><span class="sv-tok sv-accepted sv-src-ngram">{sample}</span> '
                 f'<span class="sv-legend-text">{esc(t("legend.ngram", lang))}</span></span>')
    rule = rich("legend.rule", lang)
    if greedy:
        rule += " " + rich("legend.greedy", lang)
    return f'<div class="sv-legend">{"".join(items)}<p class="sv-rule">{rule}</p></div>'


# ---------------------------------------------------------------- metrics and messages
def _tile(label: str, value: str, hint: str = "", key: str = "") -> str:
    return (f'<div class="sv-tile" data-metric="{esc(key)}" tabindex="0" data-tip="{esc(hint)}">'
            f'<div class="sv-tile-value">{esc(value)}</div>'
            f'<div class="sv-tile-label">{esc(label)}</div></div>')


def metrics_html(m: dict, *, done: bool = False, prefill_seconds: float | None = None,
                 baseline_tps: float | None = None, warmup_seconds: float | None = None,
                 lang: str = DEFAULT_LANG) -> str:
    """Tiles for trace.metrics(...): tokens/s, acceptance rate, τ, rounds, tokens, timing split."""
    tps = m.get("tokens_per_s", float("nan"))
    tiles = [
        _tile(t("tile.tps", lang), display_number(tps, 1), t("tile.tps_hint", lang), "tps"),
        _tile(t("tile.acceptance", lang), pct(m.get("acceptance_rate", float("nan"))),
              t("tile.acceptance_hint", lang), "acceptance"),
        _tile(t("tile.tau", lang), display_number(m.get("tau", float("nan")), 2), t("tile.tau_hint", lang), "tau"),
        _tile(t("tile.rounds", lang), str(m.get("rounds", 0)), t("tile.rounds_hint", lang), "rounds"),
        _tile(t("tile.tokens", lang), str(m.get("tokens", 0)), t("tile.tokens_hint", lang), "tokens"),
    ]
    ds, vs = m.get("draft_seconds", 0.0), m.get("verify_seconds", 0.0)
    if ds + vs > 0:
        tiles.append(_tile(t("tile.split", lang), f"{pct(ds / (ds + vs))} / {pct(vs / (ds + vs))}",
                           t("tile.split_hint", lang), "split"))
    speed = _speedup(tps, baseline_tps)
    if not math.isnan(speed):
        tiles.append(_tile(t("tile.speedup", lang), f"{speed:.2f}×", t("tile.speedup_hint", lang), "speedup"))
    foot = ""
    if prefill_seconds is not None:
        foot = f'<div class="sv-muted">{esc(t("tile.prefill", lang, seconds=display_number(prefill_seconds, 2)))}</div>'
    if warmup_seconds is not None:
        foot += f'<div class="sv-muted" data-warmup>{esc(t("tile.warmup", lang, seconds=display_number(warmup_seconds, 1)))}</div>'
    state = "final" if done else "live"
    return f'<div class="sv-tiles" data-state="{state}">{"".join(tiles)}</div>{foot}'


def status_html(message: str, kind: str = "info") -> str:
    """A message box: kind in info, ok, warn, error, run. The message (already in the page's language) is escaped."""
    icon = {"info": "ℹ", "ok": "✓", "warn": "⚠", "error": "✗", "run": "⏳"}.get(kind, "ℹ")
    return (f'<div class="sv-status sv-status-{esc(kind)}" role="status" data-kind="{esc(kind)}">'
            f'<span class="sv-status-icon" aria-hidden="true">{icon}</span> {esc(message)}</div>')


# Why greedy output may differ from the target alone on a configuration -> its sentence in the strings
# tables; None (every operation row-invariant) -> the sentence for a difference that must not happen.
LIMIT_SENTENCES = {"gpu": "compare.why_gpu", "compiled": "compare.why_compiled", "attention": "compare.why_attention",
                   "dense": "compare.why_dense", None: "compare.why_unexpected"}


def _difference_badge(first_diff: int | None, limit: str | None, weights: str, lang: str) -> str:
    """`limit`: why this configuration may differ (specviz.runtime.invariance.identity_limit), None where it must not."""
    why = t(LIMIT_SENTENCES[limit], lang, weights=weights_text(weights, lang) if weights else "?")
    where = t("compare.at_token", lang, n=first_diff + 1) if first_diff is not None else t("compare.in_length", lang)
    return (f'<span class="sv-badge sv-badge-diff" data-identical="false">'
            f'{esc(t("compare.differ", lang, where=where, why=why))}</span>')


def comparison_html(c, limit: str | None = None, weights: str = "", lang: str = DEFAULT_LANG) -> str:
    """The comparison with the target alone (`c`, a `specviz.trace.compare.Comparison`): speedup and, in greedy
    mode, an identical/different badge.

    `weights`: how the target stored its weights ("int4", ...), named so the baseline is never a mystery.
    `limit`: why greedy output may differ on this configuration (None: it must not; see the badge)."""
    spec_tps, base_tps = c.spec_tokens_per_s, c.base_tokens_per_s
    speed = _speedup(spec_tps, base_tps)
    rates = t("compare.rates", lang, spec=display_number(spec_tps, 1), base=display_number(base_tps, 1))
    if weights:
        rates += " " + t("compare.weights", lang, weights=weights_text(weights, lang))
    # What the two rates count, said where they are shown (the page's figure and the bench's must mean
    # the same thing to be compared).
    parts = [f'<div class="sv-compare-row"><span class="sv-big" data-speedup="{esc(display_number(speed, 3))}">'
             f'{esc(t("compare.speedup", lang, speedup=display_number(speed, 2)))}</span> <span class="sv-muted">'
             f'{esc(rates)}</span> <span class="sv-muted sv-counts" data-counts="decode">'
             f'{esc(t("compare.counts", lang))}</span></div>']
    if c.greedy and c.identical is not None:
        if c.identical:
            parts.append(f'<span class="sv-badge sv-badge-same" data-identical="true">'
                         f'{esc(t("compare.identical", lang, n=c.n_base))}</span>')
        else:
            parts.append(_difference_badge(c.first_diff, limit, weights, lang))
    elif not c.greedy:
        parts.append(f'<span class="sv-muted">{esc(t("compare.sampling", lang))}</span>')
    return f'<div class="sv-compare">{"".join(parts)}</div>'


def trace_summary_html(prompt: str, draft: str, target: str, k: int, sampling: dict, extra: str = "",
                       lang: str = DEFAULT_LANG) -> str:
    s = ", ".join(f"{k_}={v}" for k_, v in sampling.items())
    text = rich("replay.summary", lang, draft=draft, target=target, k=k, sampling=s)
    return f'<div class="sv-muted">{text}{" · " + esc(extra) if extra else ""}</div>'


def plain_rounds_text(rounds: Iterable[Round]) -> str:
    """The emitted token texts, concatenated (for tests and exports)."""
    out = []
    for r in rounds:
        out += [tk.text for tk in r.drafted if tk.accepted]
        if r.correction:
            out.append(r.correction.text)
        if r.bonus:
            out.append(r.bonus.text)
    return "".join(out)


def token_css() -> str:
    """Colour and line style per provenance, generated from PALETTE (the one source of the colours)."""
    c = PALETTE
    return f"""
.sv-tok {{ border-radius: 3px; padding: 0 1px; white-space: pre-wrap; cursor: help;
          text-decoration-thickness: 2px; text-underline-offset: 3px; }}
.sv-accepted {{ color: {c['accepted']}; background: {c['accepted']}14; text-decoration: underline solid {c['accepted']}; }}
.sv-rejected {{ color: {c['rejected']}; background: {c['rejected']}1f; text-decoration: line-through {c['rejected']};
               text-decoration-thickness: 2px; font-style: italic; }}
.sv-rejected::before {{ content: "✗"; font-size: 0.7em; vertical-align: super; font-style: normal; margin-right: 1px; }}
.sv-discarded {{ color: {c['discarded']}; opacity: 0.55; text-decoration: line-through dotted {c['discarded']}; }}
.sv-correction {{ color: {c['correction']}; background: {c['correction']}1f; text-decoration: underline wavy {c['correction']};
                 text-decoration-thickness: 1.5px; font-weight: 600; }}
.sv-correction::before {{ content: "↻"; font-size: 0.7em; vertical-align: super; margin-right: 1px; }}
.sv-bonus {{ color: {c['bonus']}; background: {c['bonus']}1f; text-decoration: underline double {c['bonus']};
            font-weight: 600; }}
.sv-bonus::before {{ content: "★"; font-size: 0.7em; vertical-align: super; margin-right: 1px; }}
.sv-bar-q {{ background: {c['q']}; }}
.sv-bar-p {{ background: {c['p']}; }}
.sv-v-accepted {{ color: {c['accepted']}; }} .sv-v-rejected {{ color: {c['rejected']}; }}
.sv-v-discarded {{ color: {c['discarded']}; }}
"""
