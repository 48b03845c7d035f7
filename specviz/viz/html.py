"""Rounds -> HTML strings for the live text, the legend, the round cards and the metric tiles.

Every string that comes from a prompt, a model, a tokenizer or a trace file goes
through `esc` (``html.escape(..., quote=True)``) before it reaches markup, and
numbers are formatted here, so an attacker-controlled token such as
``<img src=x onerror=alert(1)>`` is shown as text.

Provenance of a token (one colour from the Okabe-Ito palette, which stays
distinguishable under the common colour-vision deficiencies, AND one shape or
line style, so colour is never the only cue):

    accepted    blue,            solid underline                 (draft token the target agreed with)
    rejected    reddish purple,  struck through, marked ✗        (draft token that failed u < a)
    discarded   grey, faint,     dotted strike                   (drafted after the rejection, never used)
    correction  vermillion,      wavy underline, marked ↻        (drawn from the residual max(0, p - q))
    bonus       bluish green,    double underline, marked ★      (all K accepted: one more token from p)

Incremental rendering: `LiveText` and `RoundLog` build each round's fragment
once, when the round arrives, and keep it; the page value is the fragments
joined. The live text is append-only (prompt first, then one fragment per
round), so a streamed update is a pure extension of the previous one.
"""
from __future__ import annotations

import math
from html import escape
from typing import Iterable, Sequence

from ..trace import Alt, Choice, DraftToken, Round

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

DESCRIPTIONS = {
    "accepted": "accepted draft token: the draft proposed it and the target agreed (u < a)",
    "rejected": "rejected draft token: u ≥ a, so the target replaced it; shown struck through",
    "discarded": "discarded draft token: drafted after a rejection, never used",
    "correction": "correction: drawn from the residual max(0, p − q) after a rejection",
    "bonus": "bonus: every draft was accepted, so the target's next-token distribution p gives one more token",
}


def esc(value) -> str:
    """Escape anything for use in HTML text or a quoted attribute."""
    return escape(str(value), quote=True)


def fmt(x: float | None, digits: int = 3) -> str:
    """A probability or a time for display; NaN/None (not recorded) -> an em dash."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x != 0 and abs(x) < 10 ** -digits:
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


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


def _alts(alts: Sequence[Alt], n: int = 5) -> str:
    return ", ".join(f"{token_display(a.text, True)!r} {fmt(a.prob)}" for a in alts[:n]) or "—"


def _attrs(**values) -> str:
    return " ".join(f'{k.replace("_", "-")}="{esc(v)}"' for k, v in values.items() if v is not None)


# ---------------------------------------------------------------- one token in the live text
def draft_hover(rnd: Round, i: int, greedy: bool) -> str:
    """Plain-text explanation of drafted token i (0-based) of a round: the hover title."""
    t = rnd.drafted[i]
    verdict = rnd.verdict(i)
    lines = [f"{verdict.upper()} · draft token {token_display(t.text, True)!r} · round {rnd.index + 1}, "
             f"position {i + 1} of {rnd.k}"]
    if verdict == "discarded":
        lines.append(f"drafted after the rejection at position {(rnd.rejected_at or 0) + 1}: never used")
    lines += [f"q(x) = {fmt(t.q)}   draft probability",
              f"p(x) = {fmt(t.p)}   target probability",
              f"a = min(1, p/q) = {fmt(t.accept_prob)}",
              f"u = {fmt(t.u)}"]
    if verdict == "accepted":
        lines.append(f"u < a  →  accepted")
    elif verdict == "rejected":
        lines.append(f"u ≥ a  →  rejected: the correction is drawn from max(0, p − q)")
    if greedy:
        lines.append("greedy (temperature 0): p and q are one-hot, so the token is accepted iff it is "
                     "the target's top token")
        lines.append(f"confidence (untempered softmax, display only): draft {fmt(t.q_confidence)}, "
                     f"target {fmt(t.p_confidence)}")
        if t.top_p:
            lines.append(f"target's top token: {token_display(t.top_p[0].text, True)!r}")
    lines.append(("target top-5 (confidence): " if greedy else "target top-5 p: ") + _alts(t.top_p))
    lines.append(("draft top-5 (confidence): " if greedy else "draft top-5 q: ") + _alts(t.top_q))
    return "\n".join(lines)


def choice_hover(rnd: Round, kind: str, c: Choice, greedy: bool) -> str:
    if kind == "correction":
        j = (rnd.rejected_at or 0) + 1
        head = (f"CORRECTION · {token_display(c.text, True)!r} · round {rnd.index + 1}, position {j}\n"
                f"the draft's token at position {j} was rejected; this one is drawn from the residual "
                f"r(x) = max(0, p − q) / Σ")
        prob = f"r(x) = {fmt(c.prob)}"
        top = "residual top-5: " + _alts(c.top)
        if greedy:
            head += "\ngreedy: the residual is one-hot on the target's top token"
    else:
        head = (f"BONUS · {token_display(c.text, True)!r} · round {rnd.index + 1}, position {rnd.k + 1}\n"
                f"all {rnd.k} drafts were accepted, so the target's distribution at position "
                f"{rnd.k + 1} (already computed in the same forward) gives one more token")
        prob = f"p(x) = {fmt(c.prob)}"
        top = ("target top-5 (confidence): " if greedy else "target top-5 p: ") + _alts(c.top)
    return "\n".join([head, prob, top])


def live_token_html(text: str, kind: str, title: str, **data) -> str:
    """One token span: class by provenance, hover title, data-* attributes for tools and tests."""
    shown = token_display(text) if kind in ("accepted", "correction", "bonus") else \
        token_display(text, visible_space=True)
    return (f'<span class="sv-tok sv-{kind}" {_attrs(data_verdict=kind, **data)} '
            f'title="{esc(title)}">{esc(shown)}</span>')


def round_fragment_html(rnd: Round, greedy: bool) -> str:
    """Everything a round adds to the live text, in reading order; built once per round."""
    parts = []
    for i, t in enumerate(rnd.drafted):
        verdict = rnd.verdict(i)
        parts.append(live_token_html(
            t.text, verdict, draft_hover(rnd, i, greedy), data_round=rnd.index + 1, data_pos=i + 1,
            data_token_id=t.token_id, data_q=fmt(t.q), data_p=fmt(t.p), data_a=fmt(t.accept_prob),
            data_u=fmt(t.u)))
        if verdict == "rejected" and rnd.correction is not None:
            c = rnd.correction
            parts.append(live_token_html(c.text, "correction", choice_hover(rnd, "correction", c, greedy),
                                         data_round=rnd.index + 1, data_pos=i + 1, data_token_id=c.token_id,
                                         data_r=fmt(c.prob)))
    if rnd.correction is not None and rnd.rejected_at is None:  # defensive: a correction with no rejection
        c = rnd.correction
        parts.append(live_token_html(c.text, "correction", choice_hover(rnd, "correction", c, greedy),
                                     data_round=rnd.index + 1, data_token_id=c.token_id, data_r=fmt(c.prob)))
    if rnd.bonus is not None:
        b = rnd.bonus
        parts.append(live_token_html(b.text, "bonus", choice_hover(rnd, "bonus", b, greedy),
                                     data_round=rnd.index + 1, data_pos=rnd.k + 1, data_token_id=b.token_id,
                                     data_p=fmt(b.prob)))
    return f'<span class="sv-round" data-round="{rnd.index + 1}">{"".join(parts)}</span>'


class LiveText:
    """The streamed text: the prompt, then one cached fragment per round (append-only)."""

    def __init__(self, prompt: str, greedy: bool, prompt_chars: int = 600):
        self.greedy = greedy
        shown = prompt if len(prompt) <= prompt_chars else "…" + prompt[-prompt_chars:]
        self._head = (f'<span class="sv-prompt" title="your prompt (the model also sees the chat template)">'
                      f'{esc(shown)}</span><span class="sv-arrow" aria-hidden="true"> ⟶ </span>')
        self._parts: list[str] = []

    def add(self, rnd: Round) -> None:
        self._parts.append(round_fragment_html(rnd, self.greedy))

    def __len__(self) -> int:
        return len(self._parts)

    def html(self) -> str:
        return self._head + "".join(self._parts)


# ---------------------------------------------------------------- the legend
def legend_html(greedy: bool | None = None) -> str:
    items = []
    for kind in ("accepted", "rejected", "discarded", "correction", "bonus"):
        sample = {"accepted": "token", "rejected": "token", "discarded": "token",
                  "correction": "token", "bonus": "token"}[kind]
        items.append(f'<span class="sv-legend-item"><span class="sv-tok sv-{kind}">{sample}</span> '
                     f'<span class="sv-legend-text">{esc(DESCRIPTIONS[kind])}</span></span>')
    rule = ("Each round the small <b>draft</b> model proposes K tokens (probabilities <b>q</b>); the big "
            "<b>target</b> model checks all of them in one pass (probabilities <b>p</b>). A draft token x is "
            "kept when a random <b>u</b> is below <b>a = min(1, p(x)/q(x))</b>. Hover over any token for its numbers.")
    if greedy:
        rule += (" <b>Greedy mode</b> (temperature 0): a draft token is kept iff it is the target's own top "
                 "choice; the percentages shown as <i>confidence</i> are for reading only.")
    return f'<div class="sv-legend">{"".join(items)}<p class="sv-rule">{rule}</p></div>'


# ---------------------------------------------------------------- round cards
def _bar(value: float, kind: str, label: str) -> str:
    width = 0.0 if value is None or math.isnan(value) else max(0.0, min(1.0, value)) * 100
    return (f'<span class="sv-bar" title="{esc(label)} = {esc(fmt(value))}">'
            f'<span class="sv-bar-fill sv-bar-{kind}" style="width:{width:.1f}%"></span></span>'
            f'<span class="sv-num">{esc(fmt(value))}</span>')


def _accept_bar(a: float, u: float) -> str:
    """The acceptance probability a as a filled bar, with u marked as a tick: u left of the edge = accept."""
    aw = 0.0 if math.isnan(a) else max(0.0, min(1.0, a)) * 100
    uw = None if math.isnan(u) else max(0.0, min(1.0, u)) * 100
    tick = "" if uw is None else f'<span class="sv-u" style="left:{uw:.1f}%" title="u = {esc(fmt(u))}"></span>'
    rel = "" if uw is None else ("&lt;" if u < a else "≥")
    return (f'<span class="sv-abar" title="a = min(1, p/q) = {esc(fmt(a))}; u = {esc(fmt(u))}">'
            f'<span class="sv-abar-fill" style="width:{aw:.1f}%"></span>{tick}</span>'
            f'<span class="sv-num">u {esc(fmt(u, 2))} {rel} a {esc(fmt(a, 2))}</span>')


def round_card_html(rnd: Round, greedy: bool) -> str:
    """One card per round: drafted tokens with q/p bars, a with u marked, verdicts, correction, bonus."""
    n_acc = rnd.n_accepted
    ms = lambda s: f"{1000 * s:.0f} ms"  # noqa: E731
    head = (f'<div class="sv-card-head"><b>Round {rnd.index + 1}</b>'
            f'<span>drafted {rnd.k} · accepted {n_acc} · emitted {len(rnd.emitted)}</span>'
            f'<span class="sv-card-time">draft {ms(rnd.draft_seconds)} · verify {ms(rnd.verify_seconds)}</span></div>')
    qh, ph = ("draft confidence", "target confidence") if greedy else ("q(x) draft", "p(x) target")
    rows = [f'<tr><th>#</th><th>draft token</th><th>{qh}</th><th>{ph}</th>'
            f'<th>a = min(1, p/q), u marked</th><th>verdict</th></tr>']
    for i, t in enumerate(rnd.drafted):
        verdict = rnd.verdict(i)
        qv, pv = (t.q_confidence, t.p_confidence) if greedy else (t.q, t.p)
        rows.append(
            f'<tr class="sv-row-{verdict}" data-pos="{i + 1}">'
            f'<td class="sv-pos">{i + 1}</td>'
            f'<td><span class="sv-tok sv-{verdict}">{esc(token_display(t.text, True))}</span></td>'
            f'<td>{_bar(qv, "q", qh)}</td><td>{_bar(pv, "p", ph)}</td>'
            f'<td>{_accept_bar(t.accept_prob, t.u) if verdict != "discarded" else "<span class=sv-muted>not checked</span>"}</td>'
            f'<td><span class="sv-verdict sv-v-{verdict}">{MARKERS[verdict]} {verdict}</span></td></tr>')
    extra = []
    if rnd.correction is not None:
        c = rnd.correction
        extra.append(
            f'<div class="sv-card-extra"><span class="sv-tok sv-correction">{esc(token_display(c.text, True))}</span> '
            f'<b>correction</b> at position {(rnd.rejected_at or 0) + 1}, drawn from the residual max(0, p − q) '
            f'(r = {esc(fmt(c.prob))}). Residual top-5: {_alt_chips(c.top)}</div>')
    if rnd.bonus is not None:
        b = rnd.bonus
        extra.append(
            f'<div class="sv-card-extra"><span class="sv-tok sv-bonus">{esc(token_display(b.text, True))}</span> '
            f'<b>bonus</b> at position {rnd.k + 1}: all drafts accepted, one more token from p '
            f'(p = {esc(fmt(b.prob))}). {"Target confidence" if greedy else "p"} top-5: {_alt_chips(b.top)}</div>')
    if rnd.eos:
        extra.append('<div class="sv-card-extra sv-muted">end of sequence reached</div>')
    table = f'<table class="sv-card-table">{"".join(rows)}</table>' if rnd.drafted else \
        '<div class="sv-muted">no draft this round (budget left room for one token)</div>'
    return f'<div class="sv-card" data-round="{rnd.index + 1}">{head}{table}{"".join(extra)}</div>'


def _alt_chips(alts: Sequence[Alt]) -> str:
    return " ".join(f'<span class="sv-chip">{esc(token_display(a.text, True))} <i>{esc(fmt(a.prob, 2))}</i></span>'
                    for a in alts[:5]) or "—"


class RoundLog:
    """Cards cached per round; shown newest first, the newest `limit` of them."""

    def __init__(self, greedy: bool, limit: int = 40):
        self.greedy, self.limit = greedy, limit
        self._cards: list[str] = []

    def add(self, rnd: Round) -> None:
        self._cards.append(round_card_html(rnd, self.greedy))

    def __len__(self) -> int:
        return len(self._cards)

    def html(self) -> str:
        if not self._cards:
            return '<div class="sv-muted">Round cards appear here, newest first.</div>'
        shown = self._cards[::-1][: self.limit]
        note = "" if len(self._cards) <= self.limit else \
            (f'<div class="sv-muted">Showing the newest {self.limit} of {len(self._cards)} rounds; '
             f'the round inspector reaches every round.</div>')
        return note + "".join(shown)


# ---------------------------------------------------------------- metrics and messages
def _tile(label: str, value: str, hint: str = "", key: str = "") -> str:
    return (f'<div class="sv-tile" data-metric="{esc(key)}" title="{esc(hint)}"><div class="sv-tile-value">{esc(value)}</div>'
            f'<div class="sv-tile-label">{esc(label)}</div></div>')


def metrics_html(m: dict, *, done: bool = False, prefill_seconds: float | None = None,
                 baseline_tps: float | None = None) -> str:
    """Tiles for trace.metrics(...): tokens/s, acceptance rate, τ, rounds, tokens, timing split."""
    tps = m.get("tokens_per_s", float("nan"))
    tiles = [
        _tile("tokens / s (speculative)", fmt(tps, 1), "emitted tokens / wall time of the decode loop", "tps"),
        _tile("acceptance rate α̂", pct(m.get("acceptance_rate", float("nan"))),
              "accepted draft tokens / drafted tokens", "acceptance"),
        _tile("mean accepted length τ", fmt(m.get("tau", float("nan")), 2),
              "tokens emitted per round (accepted drafts + correction or bonus); plain decoding has τ = 1", "tau"),
        _tile("rounds", str(m.get("rounds", 0)), "draft/verify rounds so far", "rounds"),
        _tile("tokens", str(m.get("tokens", 0)), "tokens emitted so far", "tokens"),
    ]
    ds, vs = m.get("draft_seconds", 0.0), m.get("verify_seconds", 0.0)
    if ds + vs > 0:
        tiles.append(_tile("time drafting / verifying", f"{pct(ds / (ds + vs))} / {pct(vs / (ds + vs))}",
                           "share of the decode loop spent in the draft model vs the target's verification", "split"))
    if baseline_tps is not None and not math.isnan(baseline_tps) and baseline_tps > 0:
        tiles.append(_tile("speedup vs target alone", f"{tps / baseline_tps:.2f}×",
                           "speculative tokens/s over the target decoding alone, same prompt and settings", "speedup"))
    foot = ""
    if prefill_seconds is not None:
        foot = f'<div class="sv-muted">prompt prefill {fmt(prefill_seconds, 2)} s (not counted in tokens/s)</div>'
    state = "final" if done else "live"
    return f'<div class="sv-tiles" data-state="{state}">{"".join(tiles)}</div>{foot}'


def status_html(message: str, kind: str = "info") -> str:
    """A message box: kind in info, ok, warn, error. The message is escaped."""
    icon = {"info": "ℹ", "ok": "✓", "warn": "⚠", "error": "✗", "run": "⏳"}.get(kind, "ℹ")
    return (f'<div class="sv-status sv-status-{esc(kind)}" role="status" data-kind="{esc(kind)}">'
            f'<span class="sv-status-icon" aria-hidden="true">{icon}</span> {esc(message)}</div>')


def compare_html(spec_tps: float, base_tps: float, *, greedy: bool, first_diff: int | None,
                 identical: bool | None, dtype: str = "", n_spec: int = 0, n_base: int = 0) -> str:
    """The comparison with the target alone: speedup and, in greedy mode, an identical/different badge."""
    speed = spec_tps / base_tps if base_tps and base_tps > 0 and not math.isnan(base_tps) else float("nan")
    parts = [f'<div class="sv-compare-row"><span class="sv-big" data-speedup="{esc(fmt(speed, 3))}">'
             f'{esc(fmt(speed, 2))}× speedup</span> <span class="sv-muted">speculative {esc(fmt(spec_tps, 1))} tok/s '
             f'vs target alone {esc(fmt(base_tps, 1))} tok/s (run after, never at the same time)</span></div>']
    if greedy and identical is not None:
        if identical:
            parts.append('<span class="sv-badge sv-badge-same" data-identical="true">✓ identical output: '
                         f'greedy speculative decoding produced exactly the target\'s own {n_base} tokens</span>')
        else:
            low = dtype in ("bfloat16", "float16", "bf16", "fp16", "torch.bfloat16", "torch.float16")
            why = (f" ({esc(dtype)} rounding near a tie between two top tokens flips the argmax; the algorithm "
                   f"is exact, run in fp32 to see identical output)") if low else \
                  " (numerical rounding near a tie between two top tokens; batched and single-token forwards round differently)"
            where = f"at token {first_diff + 1}" if first_diff is not None else "in length"
            parts.append(f'<span class="sv-badge sv-badge-diff" data-identical="false">≠ outputs differ {where}'
                         f'{why}</span>')
    elif not greedy:
        parts.append('<span class="sv-muted">Sampling mode: outputs are different random draws from the same '
                     'distribution, so they are not expected to match token for token.</span>')
    return f'<div class="sv-compare">{"".join(parts)}</div>'


def trace_summary_html(prompt: str, draft: str, target: str, k: int, sampling: dict, extra: str = "") -> str:
    s = ", ".join(f"{esc(k_)}={esc(v)}" for k_, v in sampling.items())
    return (f'<div class="sv-muted">draft <b>{esc(draft)}</b> → target <b>{esc(target)}</b> · K = {esc(k)} · {s}'
            f'{" · " + esc(extra) if extra else ""}</div>')


def plain_rounds_text(rounds: Iterable[Round]) -> str:
    """The emitted token texts, concatenated (for tests and exports)."""
    out = []
    for r in rounds:
        for i, t in enumerate(r.drafted):
            if t.accepted:
                out.append(t.text)
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
