"""The what-if calculator and "why it is fast" as Plotly figures and HTML: curves, the worked example, the premise.

Pure functions of `specviz.classroom.whatif`'s records; no Gradio. Every
string reaches markup through `esc`; a verdict is a glyph and a word, and a
measurement whose spread cannot decide shows "?" and says so, never a tick.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..classroom.whatif import IMPLAUSIBLE_RATIO, MIN_REPEATS, PREMISE_RATIO
from ..strings import DEFAULT_LANG, t
from .format import PALETTE, display_number, esc


def _safe(text: str) -> str:
    return esc(text, quote=False)


# ---------------------------------------------------------------- the what-if calculator
def whatif_figure(curves, k: int, measured=None, lang: str = DEFAULT_LANG) -> go.Figure:
    """Expected tokens per round and speedup against K, the chosen K, the best K, and the run's own point."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(_safe(t("whatif.tokens", lang)), _safe(t("whatif.speedup", lang))))
    fig.add_scatter(x=curves.ks, y=curves.tokens, mode="lines+markers", name=_safe(t("whatif.tokens", lang)),
                    line=dict(color=PALETTE["accepted"]), row=1, col=1)
    fig.add_scatter(x=curves.ks, y=curves.speedup, mode="lines+markers", name=_safe(t("whatif.speedup", lang)),
                    line=dict(color=PALETTE["bonus"]), row=2, col=1)
    b = curves.best_k - 1
    fig.add_scatter(x=[curves.best_k], y=[curves.speedup[b]], mode="markers+text", text=[_safe(t("whatif.best", lang, k=curves.best_k))],
                    textposition="top center", marker=dict(symbol="star", size=16, color=PALETTE["bonus"]),
                    name=_safe(t("whatif.best", lang, k=curves.best_k)), row=2, col=1)
    fig.add_vline(x=k, line_dash="dot", line_color="#57606a")
    if measured is not None:
        fig.add_scatter(x=[measured.k], y=[measured.tau], mode="markers", name=_safe(t("whatif.measured", lang)),
                        marker=dict(symbol="diamond", size=13, color=PALETTE["correction"]), row=1, col=1)
    fig.add_hline(y=1.0, line_dash="dash", line_color="#8c959f", row=2, col=1)
    fig.update_layout(template="plotly_white", height=520, margin=dict(l=50, r=15, t=60, b=45), font=dict(size=13),
                      legend=dict(orientation="h", yanchor="top", y=-0.1, x=0), showlegend=True)
    fig.update_xaxes(title=_safe(t("whatif.k_axis", lang)), row=2, col=1)
    return fig


def whatif_html(alpha: float, k: int, c: float, curves, measured, worked, lang: str = DEFAULT_LANG) -> str:
    rows = [t("whatif.now", lang, alpha=display_number(alpha, 2), k=k, c=display_number(c, 3), tokens=display_number(curves.tokens[k - 1], 2),
              speedup=display_number(curves.speedup[k - 1], 2), best=curves.best_k)]
    if measured is not None:
        rows.append(t("whatif.measured_line" if measured.c_timed else "whatif.measured_estimated", lang,
                      alpha=display_number(measured.alpha, 2), k=measured.k, tau=display_number(measured.tau, 2), c=display_number(measured.c, 3)))
    else:
        rows.append(t("whatif.no_run", lang))
    rows.append(t("whatif.worked", lang, alpha=display_number(worked.alpha, 2), k=worked.k, c=display_number(worked.c, 3),
                  tokens=display_number(worked.tokens, 2), speedup=display_number(worked.speedup, 2), claimed=display_number(worked.claimed, 1),
                  c_claim=display_number(worked.c_for_claim, 3)))
    return '<div class="sv-cls-panel">' + "".join(f"<p>{esc(r)}</p>" for r in rows) + "</div>"


def premise_figure(pr, lang: str = DEFAULT_LANG) -> go.Figure:
    """The target's forward time per number of positions (median, with each repetition's points when repeated)."""
    fig = go.Figure()
    if pr is not None:
        fig.add_scatter(x=pr.positions, y=[1000 * s for s in pr.target], mode="lines+markers",
                        name=_safe(t("why.target_series", lang)), line=dict(color=PALETTE["p"]))
        fig.add_hline(y=1000 * pr.draft_1, line_dash="dash", line_color=PALETTE["q"],
                      annotation_text=_safe(t("why.draft_series", lang)))
    fig.update_layout(title=_safe(t("why.title", lang)), template="plotly_white", height=340, font=dict(size=13),
                      margin=dict(l=55, r=15, t=60, b=45), xaxis=dict(title=_safe(t("why.x", lang)), dtick=1),
                      yaxis=dict(title=_safe(t("why.y", lang)), rangemode="tozero"))
    return fig


VERDICTS = {"holds": ("✓", "sv-cls-verdict-ok", "why.holds"), "fails": ("✗", "sv-cls-verdict-bad", "why.fails"),
            "noisy": ("?", "sv-cls-verdict-noisy", "why.noisy")}
ENDINGS = {"stopped": "why.stopped", "budget": "why.budget"}


def premise_html(pr, device: str, lang: str = DEFAULT_LANG, *, done: int | None = None, total: int | None = None,
                 ended: str = "") -> str:
    """The verdict on a `whatif.PremiseSpread` in words and glyph, with its spread; while it runs (`done` of
    `total` repetitions) the numbers so far and no verdict. `ended`: "" (finished), "stopped" or "budget"."""
    if pr is None:
        return ""
    numbers = dict(n=pr.positions[-1], ratio=display_number(pr.ratio, 2), device=device,
                   lo=display_number(pr.lo, 2), hi=display_number(pr.hi, 2), reps=len(pr.ratios),
                   bound=display_number(PREMISE_RATIO, 1), floor=display_number(IMPLAUSIBLE_RATIO, 1),
                   draft=display_number(1000 * pr.draft_1, 1), target=display_number(1000 * pr.target[0], 1))
    running = done is not None and total is not None and done < total and not ended
    if running:
        return (f'<div class="sv-cls-panel" data-verdict="running" data-done="{done}">'
                f'{esc(t("why.progress", lang, done=done, total=total, **numbers))}</div>')
    if ended and len(pr.ratios) < MIN_REPEATS:
        return _too_few(pr, numbers, ended, total or len(pr.ratios), lang)
    glyph, cls, key = VERDICTS[pr.verdict]
    line = t(key, lang, **numbers)
    spread = t("why.spread", lang, **numbers)
    note = t(ENDINGS[ended], lang, done=len(pr.ratios), total=total or len(pr.ratios)) if ended else ""
    return (f'<div class="sv-cls-panel" data-verdict="{esc(pr.verdict)}" data-holds="{str(pr.holds).lower()}" '
            f'data-ratio="{pr.ratio:.3f}" data-lo="{pr.lo:.3f}" data-hi="{pr.hi:.3f}" data-reps="{len(pr.ratios)}">'
            f'<span class="{cls}">{glyph}</span> {esc(line)} <span class="sv-muted">{esc(spread)}</span>'
            + (f'<div class="sv-muted">{esc(note)}</div>' if note else "") + "</div>")


TOO_FEW = {"stopped": "why.too_few", "budget": "why.too_few_budget"}


def _too_few(pr, numbers: dict, ended: str, total: int, lang: str) -> str:
    """Stopped (or out of time) before MIN_REPEATS repetitions: say so and give the numbers so far, never a
    "too noisy" verdict with a spread of one repetition ("from 2.15× to 2.15×")."""
    line = t(TOO_FEW[ended], lang, done=len(pr.ratios), total=total, **{k: numbers[k] for k in
                                                                        ("device", "n", "ratio", "target")})
    return (f'<div class="sv-cls-panel" data-verdict="too_few" data-holds="false" data-ratio="{pr.ratio:.3f}" '
            f'data-reps="{len(pr.ratios)}"><span class="sv-cls-verdict-noisy">?</span> {esc(line)}</div>')
