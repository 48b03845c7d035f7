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

from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .html import PALETTE, esc, token_display, verdict_word
from .format import ratio_shown

_LAYOUT = dict(template="plotly_white", margin=dict(l=55, r=20, t=95, b=45), height=360,
               font=dict(size=13), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.2, x=0)


def _safe(text: str) -> str:
    """Plotly renders a subset of HTML in titles, legends, ticks and hovers: escape (quotes stay, Plotly shows them)."""
    return esc(text, quote=False)


def _hover(key: str, lang: str, **plotly_fields) -> str:
    """A hover template: the table's text with Plotly's %{...} fields put in, escaped; a newline becomes <br>."""
    return _safe(t(key, lang, **plotly_fields)).replace("\n", "<br>") + "<extra></extra>"


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=_safe(title), **_LAYOUT)
    fig.add_annotation(text=_safe(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14, color="#6e7781"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _label(text: str) -> str:
    """A token as an axis category: Plotly renders a subset of HTML in tick labels and hovers, so escape it."""
    return _safe(_shown(text))


def _shown(text: str) -> str:
    return token_display(text, visible_space=True)


def _drafted_bars(fig: go.Figure, rnd: Round, position: int, greedy: bool, what: str, lang: str) -> tuple[str, str]:
    """Bars of q, p (and the residual at a rejection) over the top tokens of a drafted position; (title, subtitle)."""
    tk = rnd.drafted[position - 1]
    verdict = rnd.verdict(position - 1)
    ids: list[int] = []
    labels: dict[int, str] = {}
    for tok_id, text in [(a.token_id, a.text) for a in list(tk.top_p) + list(tk.top_q)] + [(tk.token_id, tk.text)]:
        if tok_id not in labels:
            ids.append(tok_id)
            labels[tok_id] = _label(text)
    pmap = {a.token_id: a.prob for a in tk.top_p}
    qmap = {a.token_id: a.prob for a in tk.top_q}
    pmap.setdefault(tk.token_id, tk.p_confidence if greedy else tk.p)
    qmap.setdefault(tk.token_id, tk.q_confidence if greedy else tk.q)
    ids.sort(key=lambda i: -max(pmap.get(i, 0.0), qmap.get(i, 0.0)))
    # Same-text tokens (different ids) get the id appended so categories stay distinct.
    seen: dict[str, int] = {}
    x = []
    for i in ids:
        lab = labels[i]
        seen[lab] = seen.get(lab, 0) + 1
        x.append(lab if seen[lab] == 1 else f"{lab} #{i}")
    marks = [t("chart.drafted_mark", lang) if i == tk.token_id else "" for i in ids]
    fig.add_bar(name=_safe(t("chart.q_series", lang, what=what)), x=x, y=[qmap.get(i) for i in ids],
                marker_color=PALETTE["q"], hovertemplate="%{x}: q = %{y:.3f}<extra></extra>")
    fig.add_bar(name=_safe(t("chart.p_series", lang, what=what)), x=x, y=[pmap.get(i) for i in ids],
                marker_color=PALETTE["p"], text=marks, textposition="outside", textfont=dict(size=12),
                hovertemplate="%{x}: p = %{y:.3f}<extra></extra>")
    if verdict == "rejected" and rnd.correction is not None:
        rmap = {a.token_id: a.prob for a in rnd.correction.top}
        fig.add_bar(name=_safe(t("chart.residual_series", lang)), x=x, y=[rmap.get(i) for i in ids],
                    marker_color=PALETTE["residual"], marker_pattern_shape="/",
                    hovertemplate="%{x}: r = %{y:.3f}<extra></extra>")
        extra = [a for a in rnd.correction.top if a.token_id not in labels]
        if extra:
            fig.add_bar(name=_safe(t("chart.residual_outside", lang)), x=[_label(a.text) for a in extra],
                        y=[a.prob for a in extra], marker_color=PALETTE["residual"], marker_pattern_shape="/",
                        showlegend=False)
    word = verdict_word(verdict, lang)
    n = ratio_shown(tk.p, tk.q, tk.accept_prob, tk.u)   # so min(1, p/q) of the shown p and q is the shown a
    sub = t("chart.inspector_sub", lang, token=repr(_shown(tk.text)), q=n.q, p=n.p, a=n.a, u=n.u, verdict=word)
    if verdict == "rejected" and rnd.correction is not None:
        sub += t("chart.inspector_sub_correction", lang, token=repr(_shown(rnd.correction.text)))
    return t("chart.inspector_position", lang, round=rnd.index + 1, pos=position, verdict=word), sub


def _bonus_bars(fig: go.Figure, rnd: Round, position: int, what: str, lang: str) -> tuple[str, str]:
    b = rnd.bonus
    fig.add_bar(name=_safe(t("chart.p_series", lang, what=what)), x=[_label(a.text) for a in b.top],
                y=[a.prob for a in b.top], marker_color=PALETTE["bonus"],
                text=[t("chart.bonus_mark", lang) if a.token_id == b.token_id else "" for a in b.top],
                textposition="outside")
    return (t("chart.inspector_bonus", lang, round=rnd.index + 1, pos=position),
            t("chart.inspector_bonus_sub", lang, k=rnd.k, token=repr(_shown(b.text)), p=f"{b.prob:.3f}"))


def inspector_figure(rnd: Round | None, position: int, greedy: bool, lang: str = DEFAULT_LANG) -> go.Figure:
    """p and q over the top tokens at one position (1-based) of a round.

    Positions 1..K are the drafted tokens; position K+1 (or the rejected
    position) also shows what the target drew there. At a rejected position the
    residual r(x) = max(0, p - q)/Σ that the correction was drawn from is
    shown as a third series (the decoder's exact top-5 of it).
    """
    if rnd is None:
        return _empty(t("chart.inspector", lang), t("chart.inspector_empty", lang))
    if not rnd.drafted and rnd.bonus is None and rnd.correction is None:
        return _empty(t("chart.inspector", lang), t("chart.inspector_nothing", lang))
    position = max(1, min(int(position), rnd.k + (1 if rnd.bonus is not None else 0) or 1))
    what = t("chart.confidence" if greedy else "chart.probability", lang)
    fig = go.Figure()
    if position <= rnd.k:
        title, sub = _drafted_bars(fig, rnd, position, greedy, what, lang)
    else:
        title, sub = _bonus_bars(fig, rnd, position, what, lang)
    if greedy:
        sub += t("chart.inspector_greedy", lang)
    top = max([v for tr in fig.data for v in (tr.y or ()) if v is not None] + [0.05])
    # The subtitle is wrapped into short lines on the left, clear of Plotly's toolbar at the top right; the legend
    # goes below the plot so it never covers them.
    lines = _wrap(sub, 62)
    fig.update_layout(title=dict(text=f"{_safe(title)}<br><sup>{'<br>'.join(_safe(x) for x in lines)}</sup>",
                                 x=0.01, xanchor="left", y=1.0, yref="container", yanchor="top", pad=dict(t=14)),
                      barmode="group", yaxis=dict(title=_safe(what), range=[0, min(1.0, top) * 1.2]),
                      xaxis=dict(title=_safe(t("chart.inspector_x", lang))),
                      **{**_LAYOUT, "height": 460 + 14 * len(lines), "legend": _LEGEND_BELOW,
                         "margin": dict(l=55, r=20, t=70 + 16 * len(lines), b=120)})
    return fig


def _wrap(text: str, width: int) -> list[str]:
    """Words of `text` in lines of at most about `width` characters (a Plotly title does not wrap itself)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def acceptance_by_position_figure(per_position: Sequence[float], counts: Sequence[int] | None = None,
                                  lang: str = DEFAULT_LANG) -> go.Figure:
    title = t("chart.acceptance", lang)
    if not per_position:
        return _empty(title, t("chart.no_rounds", lang))
    x = list(range(1, len(per_position) + 1))
    hover = (_hover("chart.acceptance_hover_counts", lang, pos="%{x}", share="%{y:.0%}", n="%{customdata}")
             if counts else _hover("chart.acceptance_hover", lang, pos="%{x}", share="%{y:.0%}"))
    fig = go.Figure()
    fig.add_bar(x=x, y=list(per_position), marker_color=PALETTE["accepted"], name=_safe(t("chart.accepted_share", lang)),
                text=[f"{100 * v:.0f}%" for v in per_position], textposition="outside",
                customdata=list(counts) if counts else None, hovertemplate=hover)
    fig.update_layout(title=dict(text=f"{_safe(title)}<br><sup>{_safe(t('chart.acceptance_sub', lang))}</sup>"),
                      xaxis=dict(title=_safe(t("chart.acceptance_x", lang)), dtick=1),
                      yaxis=dict(title=_safe(t("chart.acceptance_y", lang)), range=[0, 1.15], tickformat=".0%"),
                      showlegend=False, **_LAYOUT)
    return fig


def timeline_figure(rounds: Sequence[Round], limit: int = 200, lang: str = DEFAULT_LANG) -> go.Figure:
    """Per round: draft time and verify time stacked (ms), tokens emitted on a second axis."""
    title = t("chart.timeline", lang)
    if not rounds:
        return _empty(title, t("chart.no_rounds", lang))
    rounds = list(rounds)[-limit:]
    x = [r.index + 1 for r in rounds]
    fig = go.Figure()
    fig.add_bar(x=x, y=[1000 * r.draft_seconds for r in rounds], name=_safe(t("chart.draft_series", lang)),
                marker_color=PALETTE["q"], hovertemplate=_hover("chart.draft_hover", lang, round="%{x}", ms="%{y:.1f}"))
    fig.add_bar(x=x, y=[1000 * r.verify_seconds for r in rounds], name=_safe(t("chart.verify_series", lang)),
                marker_color=PALETTE["p"], hovertemplate=_hover("chart.verify_hover", lang, round="%{x}", ms="%{y:.1f}"))
    fig.add_scatter(x=x, y=[len(r.emitted) for r in rounds], name=_safe(t("chart.emitted_series", lang)), yaxis="y2",
                    mode="lines+markers", line=dict(color=PALETTE["bonus"], width=1.5), marker=dict(symbol="diamond"))
    fig.update_layout(title=_safe(title), barmode="stack", xaxis=dict(title=_safe(t("chart.timeline_x", lang))),
                      yaxis=dict(title="ms"),
                      yaxis2=dict(title=_safe(t("chart.timeline_y2", lang)), overlaying="y", side="right",
                                  rangemode="tozero", dtick=1, showgrid=False),
                      **{**_LAYOUT, "height": 400, "legend": _LEGEND_BELOW, "margin": dict(l=55, r=50, t=60, b=110)})
    return fig


def _mean(xs: Sequence[float]) -> float:
    good = [x for x in xs if not math.isnan(x)]
    return sum(good) / len(good) if good else float("nan")


def _sweep_reference_lines(fig: go.Figure, rows, ks: list[int], base: float, lang: str) -> None:
    """The target-alone line and the theory curve (both need the target's measured rate)."""
    fig.add_scatter(x=[min(ks) - 0.5, max(ks) + 0.5], y=[base, base], mode="lines", name=_safe(t("chart.target_alone", lang)),
                    line=dict(color="#000000", dash="dash", width=2),
                    hovertemplate=_hover("chart.target_alone_hover", lang, tps=f"{base:.1f}"))
    theory = [base * r.theory_speedup for r in rows]
    if any(not math.isnan(v) for v in theory):
        fig.add_scatter(x=ks, y=theory, mode="lines+markers", name=_safe(t("chart.theory_series", lang)),
                        line=dict(color=PALETTE["correction"], dash="dot", width=2), marker=dict(symbol="circle-open"),
                        hovertemplate=_hover("chart.theory_hover", lang, k="%{x}", tps="%{y:.1f}"))


def throughput_vs_k_figure(sweep, lang: str = DEFAULT_LANG) -> go.Figure:
    """Measured tokens/s per K, the target-alone line, the theory curve, acceptance per K, best K marked."""
    title = t("chart.sweep", lang)
    rows = sorted(getattr(sweep, "rows", None) or [], key=lambda r: r.k)
    if not rows:
        return _empty(title, t("chart.sweep_empty", lang))
    ks = [r.k for r in rows]
    base = float(getattr(sweep, "target_tokens_per_s", float("nan")))
    fig = go.Figure()
    fig.add_bar(x=ks, y=[r.tokens_per_s for r in rows], name=_safe(t("chart.measured_series", lang)),
                marker_color=PALETTE["accepted"], opacity=0.85,
                customdata=[[r.acceptance_rate, getattr(r, "tau", float("nan")), getattr(r, "speedup", float("nan"))]
                            for r in rows],
                hovertemplate=_hover("chart.measured_hover", lang, k="%{x}", tps="%{y:.1f}", acceptance="%{customdata[0]:.0%}",
                                     tau="%{customdata[1]:.2f}", speedup="%{customdata[2]:.2f}"))
    if not math.isnan(base):
        _sweep_reference_lines(fig, rows, ks, base, lang)
    fig.add_scatter(x=ks, y=[r.acceptance_rate for r in rows], mode="lines+markers", name=_safe(t("chart.acceptance_series", lang)),
                    yaxis="y2", line=dict(color=PALETTE["q"], width=2), marker=dict(symbol="square"),
                    hovertemplate=_hover("chart.acceptance_k_hover", lang, k="%{x}", acceptance="%{y:.0%}"))
    best_row = next((r for r in rows if r.k == getattr(sweep, "best_k", None)), None)
    if best_row is not None and not math.isnan(base) and not best_row.tokens_per_s > base:
        best_row = None   # the fastest K is still slower than the target alone: no star, say so
        fig.add_annotation(text=_safe(t("chart.none_faster", lang)), showarrow=False, x=0.5, y=1.0, xref="paper",
                           yref="paper", yanchor="bottom", font=dict(size=13, color=PALETTE["rejected"]))
    if best_row is not None:
        best = _safe(t("chart.best_k", lang, k=best_row.k))
        fig.add_scatter(x=[best_row.k], y=[best_row.tokens_per_s], mode="markers+text", name=best,
                        marker=dict(symbol="star", size=20, color=PALETTE["bonus"], line=dict(color="#000", width=1)),
                        text=[best], textposition="top center")
    alpha, c = _mean([getattr(r, "alpha", float("nan")) for r in rows]), _mean([getattr(r, "c", float("nan")) for r in rows])
    sub = "" if math.isnan(alpha) or math.isnan(c) else \
        f"<br><sup>{_safe(t('chart.sweep_sub', lang, alpha=f'{alpha:.2f}', c=f'{c:.2f}'))}</sup>"
    top = max([r.tokens_per_s for r in rows] + ([base] if not math.isnan(base) else []))
    fig.update_layout(title=dict(text=_safe(title) + sub), xaxis=dict(title=_safe(t("chart.sweep_x", lang)), dtick=1),
                      yaxis=dict(title=_safe(t("chart.sweep_y", lang)), range=[0, top * 1.25 if top > 0 else 1]),
                      yaxis2=dict(title=_safe(t("chart.sweep_y2", lang)), overlaying="y", side="right", range=[0, 1.05],
                                  tickvals=[0, 0.25, 0.5, 0.75, 1.0], tickformat=".0%", showgrid=False),
                      **{**_LAYOUT, "height": 460, "legend": _LEGEND_BELOW, "margin": dict(l=55, r=60, t=70, b=130)})
    return fig


# ---------------------------------------------------------------- shared with the run's figures in their own modules
empty_figure, hover_template, plotly_safe = _empty, _hover, _safe


def captioned_layout(fig: go.Figure, title: str, notes: Sequence[str], x_title: str, y_title: str, **extra) -> None:
    """A title with its notes wrapped under it on the left (clear of Plotly's toolbar), the legend below the plot,
    the height grown with the notes. Every text is escaped here."""
    lines = [line for note in notes for line in _wrap(note, 66)]    # 66: a phone's width at the notes' size
    sub = "<br>".join(_safe(line) for line in lines)
    # Plotly spaces a title's lines ~23 px apart whatever their size, and anchors the block at its first line's
    # baseline: the padding keeps that line in the figure, the margin keeps the plot under the last.
    fig.update_layout(title=dict(text=f"{_safe(title)}<br><sup>{sub}</sup>", x=0.01, xanchor="left", y=1.0,
                                 yref="container", yanchor="top", pad=dict(t=26)),
                      xaxis=dict(title=_safe(x_title), **extra.pop("xaxis", {})),
                      yaxis=dict(title=_safe(y_title), rangemode="tozero"),
                      **{**_LAYOUT, "height": 400 + 23 * len(lines), "legend": _LEGEND_BELOW,
                         "margin": dict(l=55, r=20, t=64 + 23 * len(lines), b=120)}, **extra)
