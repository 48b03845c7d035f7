"""Plotly figures: round inspector, per-position acceptance, draft/verify timeline, throughput vs K.

Inputs are the decoder's records (`Round`) and the benchmark's `KSweep`
(duck-typed: `.rows` with `.k, .tokens_per_s, .acceptance_rate, .alpha, .tau,
.c, .theory_speedup, .speedup`, plus `.target_tokens_per_s` and `.best_k`).
Colours follow `html.PALETTE` (Okabe-Ito).
"""
from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go

from ..trace import Round
from .html import PALETTE, token_display

_LAYOUT = dict(template="plotly_white", margin=dict(l=55, r=20, t=95, b=45), height=360,
               font=dict(size=13), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.2, x=0)


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, **_LAYOUT)
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14, color="#6e7781"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _label(text: str) -> str:
    """A token as an axis category: Plotly renders a subset of HTML in tick labels and hovers, so escape it."""
    return _html_safe(_shown(text))


def _shown(text: str) -> str:
    return token_display(text, visible_space=True)


def inspector_figure(rnd: Round | None, position: int, greedy: bool) -> go.Figure:
    """p and q over the top tokens at one position (1-based) of a round.

    Positions 1..K are the drafted tokens; position K+1 (or the rejected
    position) also shows what the target drew there. At a rejected position the
    residual r(x) = max(0, p - q)/Σ that the correction was drawn from is
    shown as a third series (the decoder's exact top-5 of it).
    """
    title = "Round inspector"
    if rnd is None:
        return _empty(title, "Run or replay to inspect a round")
    if not rnd.drafted and rnd.bonus is None and rnd.correction is None:
        return _empty(title, "nothing recorded for this round")
    position = max(1, min(int(position), rnd.k + (1 if rnd.bonus is not None else 0) or 1))
    what = "confidence (untempered softmax)" if greedy else "probability"
    fig = go.Figure()
    if position <= rnd.k:
        t = rnd.drafted[position - 1]
        verdict = rnd.verdict(position - 1)
        ids: list[int] = []
        labels: dict[int, str] = {}
        for tok_id, text in [(a.token_id, a.text) for a in list(t.top_p) + list(t.top_q)] + [(t.token_id, t.text)]:
            if tok_id not in labels:
                ids.append(tok_id)
                labels[tok_id] = _label(text)
        pmap = {a.token_id: a.prob for a in t.top_p}
        qmap = {a.token_id: a.prob for a in t.top_q}
        if not greedy:
            pmap.setdefault(t.token_id, t.p)
            qmap.setdefault(t.token_id, t.q)
        else:
            pmap.setdefault(t.token_id, t.p_confidence)
            qmap.setdefault(t.token_id, t.q_confidence)
        ids.sort(key=lambda i: -max(pmap.get(i, 0.0), qmap.get(i, 0.0)))
        # Same-text tokens (different ids) get the id appended so categories stay distinct.
        seen: dict[str, int] = {}
        x = []
        for i in ids:
            lab = labels[i]
            seen[lab] = seen.get(lab, 0) + 1
            x.append(lab if seen[lab] == 1 else f"{lab} #{i}")
        marks = ["◀ drafted" if i == t.token_id else "" for i in ids]
        fig.add_bar(name=f"q(x) draft {what}", x=x, y=[qmap.get(i) for i in ids], marker_color=PALETTE["q"],
                    hovertemplate="%{x}: q = %{y:.3f}<extra></extra>")
        fig.add_bar(name=f"p(x) target {what}", x=x, y=[pmap.get(i) for i in ids], marker_color=PALETTE["p"],
                    text=marks, textposition="outside", textfont=dict(size=12),
                    hovertemplate="%{x}: p = %{y:.3f}<extra></extra>")
        if verdict == "rejected" and rnd.correction is not None:
            rmap = {a.token_id: a.prob for a in rnd.correction.top}
            fig.add_bar(name="residual max(0, p − q), normalised", x=x, y=[rmap.get(i) for i in ids],
                        marker_color=PALETTE["residual"], marker_pattern_shape="/",
                        hovertemplate="%{x}: r = %{y:.3f}<extra></extra>")
            extra = [a for a in rnd.correction.top if a.token_id not in labels]
            if extra:
                fig.add_bar(name="residual (tokens outside both top-5)", x=[_label(a.text) for a in extra],
                            y=[a.prob for a in extra], marker_color=PALETTE["residual"], marker_pattern_shape="/",
                            showlegend=False)
        sub = (f"drafted {_shown(t.text)!r}: q = {t.q:.3f}, p = {t.p:.3f}, a = min(1, p/q) = {t.accept_prob:.3f}, "
               f"u = {t.u:.3f} → {verdict}")
        if verdict == "rejected" and rnd.correction is not None:
            sub += f"; correction {_shown(rnd.correction.text)!r}"
        title = f"Round {rnd.index + 1}, position {position}: {verdict}"
    else:
        b = rnd.bonus
        x = [_label(a.text) for a in b.top]
        fig.add_bar(name=f"p(x) target {what}", x=x, y=[a.prob for a in b.top], marker_color=PALETTE["bonus"],
                    text=["◀ bonus" if a.token_id == b.token_id else "" for a in b.top], textposition="outside")
        title = f"Round {rnd.index + 1}, position {position}: bonus token"
        sub = f"all {rnd.k} drafts accepted; bonus {_shown(b.text)!r} drawn from p (p = {b.prob:.3f})"
    if greedy:
        sub += " · greedy: bars are confidence; acceptance = same top token"
    top = max([v for tr in fig.data for v in (tr.y or ()) if v is not None] + [0.05])
    fig.update_layout(title=dict(text=f"{title}<br><sup>{_html_safe(sub)}</sup>", y=0.97, yanchor="top"), barmode="group",
                      yaxis=dict(title=what, range=[0, min(1.0, top) * 1.2]), xaxis=dict(title="token (top candidates)"),
                      **{**_LAYOUT, "height": 430, "margin": dict(l=55, r=20, t=115, b=40)})
    return fig


def _html_safe(s: str) -> str:
    # Plotly renders a subset of HTML in titles: escape what comes from tokens.
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def acceptance_by_position_figure(per_position: Sequence[float], counts: Sequence[int] | None = None) -> go.Figure:
    title = "Acceptance by draft position"
    if not per_position:
        return _empty(title, "no rounds yet")
    x = list(range(1, len(per_position) + 1))
    fig = go.Figure()
    fig.add_bar(x=x, y=list(per_position), marker_color=PALETTE["accepted"], name="accepted fraction",
                text=[f"{100 * v:.0f}%" for v in per_position], textposition="outside",
                customdata=list(counts) if counts else None,
                hovertemplate="position %{x}: %{y:.0%}" + (" of %{customdata} rounds" if counts else "") + "<extra></extra>")
    fig.update_layout(title=dict(text=f"{title}<br><sup>position i is only reached when 1..i−1 were accepted</sup>"),
                      xaxis=dict(title="draft position i", dtick=1), yaxis=dict(title="accepted", range=[0, 1.15],
                                                                                tickformat=".0%"),
                      showlegend=False, **_LAYOUT)
    return fig


def timeline_figure(rounds: Sequence[Round], limit: int = 200) -> go.Figure:
    """Per round: draft time and verify time stacked (ms), tokens emitted on a second axis."""
    title = "Time per round: drafting vs verifying"
    if not rounds:
        return _empty(title, "no rounds yet")
    rounds = list(rounds)[-limit:]
    x = [r.index + 1 for r in rounds]
    fig = go.Figure()
    fig.add_bar(x=x, y=[1000 * r.draft_seconds for r in rounds], name="draft (K small-model steps)",
                marker_color=PALETTE["q"], hovertemplate="round %{x}: draft %{y:.1f} ms<extra></extra>")
    fig.add_bar(x=x, y=[1000 * r.verify_seconds for r in rounds], name="verify (1 target pass)",
                marker_color=PALETTE["p"], hovertemplate="round %{x}: verify %{y:.1f} ms<extra></extra>")
    fig.add_scatter(x=x, y=[len(r.emitted) for r in rounds], name="tokens emitted", yaxis="y2",
                    mode="lines+markers", line=dict(color=PALETTE["bonus"], width=1.5), marker=dict(symbol="diamond"))
    fig.update_layout(title=title, barmode="stack", xaxis=dict(title="round"), yaxis=dict(title="ms"),
                      yaxis2=dict(title="tokens", overlaying="y", side="right", rangemode="tozero", dtick=1,
                                  showgrid=False), **_LAYOUT)
    return fig


def throughput_vs_k_figure(sweep) -> go.Figure:
    """Measured tokens/s per K, the target-alone line, the theory curve, acceptance per K, best K marked."""
    title = "Throughput vs K"
    rows = sorted(getattr(sweep, "rows", None) or [], key=lambda r: r.k)
    if not rows:
        return _empty(title, "run a sweep to fill this chart")
    ks = [r.k for r in rows]
    base = float(getattr(sweep, "target_tokens_per_s", float("nan")))
    fig = go.Figure()
    fig.add_bar(x=ks, y=[r.tokens_per_s for r in rows], name="measured tokens/s (speculative)",
                marker_color=PALETTE["accepted"], opacity=0.85,
                customdata=[[r.acceptance_rate, getattr(r, "tau", float("nan")), getattr(r, "speedup", float("nan"))]
                            for r in rows],
                hovertemplate=("K=%{x}: %{y:.1f} tok/s<br>acceptance %{customdata[0]:.0%}, τ %{customdata[1]:.2f}, "
                               "speedup %{customdata[2]:.2f}×<extra></extra>"))
    if not math.isnan(base):
        fig.add_scatter(x=[min(ks) - 0.5, max(ks) + 0.5], y=[base, base], mode="lines", name="target alone",
                        line=dict(color="#000000", dash="dash", width=2),
                        hovertemplate=f"target alone: {base:.1f} tok/s<extra></extra>")
        theory = [base * r.theory_speedup for r in rows]
        if any(not math.isnan(v) for v in theory):
            fig.add_scatter(x=ks, y=theory, mode="lines+markers", name="theory from measured α and c",
                            line=dict(color=PALETTE["correction"], dash="dot", width=2), marker=dict(symbol="circle-open"),
                            hovertemplate="K=%{x}: theory %{y:.1f} tok/s<extra></extra>")
    fig.add_scatter(x=ks, y=[r.acceptance_rate for r in rows], mode="lines+markers", name="acceptance rate α̂",
                    yaxis="y2", line=dict(color=PALETTE["q"], width=2), marker=dict(symbol="square"),
                    hovertemplate="K=%{x}: acceptance %{y:.0%}<extra></extra>")
    best = getattr(sweep, "best_k", None)
    best_row = next((r for r in rows if r.k == best), None)
    if best_row is not None:
        fig.add_scatter(x=[best_row.k], y=[best_row.tokens_per_s], mode="markers+text", name=f"best K = {best_row.k}",
                        marker=dict(symbol="star", size=20, color=PALETTE["bonus"], line=dict(color="#000", width=1)),
                        text=[f"best K = {best_row.k}"], textposition="top center")
    alpha = [getattr(r, "alpha", float("nan")) for r in rows]
    cs = [getattr(r, "c", float("nan")) for r in rows]
    sub = ""
    good_a = [a for a in alpha if not math.isnan(a)]
    good_c = [c for c in cs if not math.isnan(c)]
    if good_a and good_c:
        sub = f"<br><sup>mean measured α = {sum(good_a) / len(good_a):.2f}, cost ratio c = {sum(good_c) / len(good_c):.2f}</sup>"
    top = max([r.tokens_per_s for r in rows] + ([base] if not math.isnan(base) else []))
    fig.update_layout(title=dict(text=title + sub), xaxis=dict(title="K (draft tokens per round)", dtick=1),
                      yaxis=dict(title="tokens / s", range=[0, top * 1.25 if top > 0 else 1]),
                      yaxis2=dict(title="acceptance rate", overlaying="y", side="right", range=[0, 1.05], tickvals=[0, 0.25, 0.5, 0.75, 1.0],
                                  tickformat=".0%", showgrid=False),
                      **{**_LAYOUT, "height": 460, "legend": _LEGEND_BELOW, "margin": dict(l=55, r=60, t=70, b=130)})
    return fig
