"""Accepted length against the law: how many drafts each round accepted, beside what independent acceptances predict.

A chain round of K drafts accepts j of them with probability α^j (1 − α) for j < K and α^K at j = K when every
draft is accepted independently with probability α (`theory.accepted_length_law`, a truncated geometric); the round's own
token from the target (correction or bonus) comes on top and is not counted here (tokens emitted = j + 1, so the
law's mean + 1 is the theory's τ). α is fitted from the same rounds by maximum likelihood:
accepted / (accepted + rejected), the drafts discarded after a rejection left out (`metrics`' `alpha_verified`).
Rounds of different K (adaptive K, a hybrid's lookup rounds, the last round cut by the budget) each get their own
K's law; the expected counts are the sum of the rounds' laws.

A tree round goes down its accepted path; its law is measured from the rounds themselves: at each depth d, the rate
of going on = rounds that went past d / (those + rounds whose children at d were all rejected). A round that ended
at a leaf or at an end of sequence is not counted as a failure. The measured per-depth law reproduces the bars by
construction, so the test is against the one-rate law (the same rate at every depth, the tree's α).

The reading is one sentence: whether the counts fit the one-rate law (`stats.fit`: Pearson's χ² over pooled groups,
one parameter fitted, and the total variation distance), and, where they do not, which way they miss.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from .. import stats, theory
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .charts import captioned_layout, empty_figure, hover_template, plotly_safe
from .format import PALETTE, display_number

SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class AcceptedLaw:
    """The counts of a run's rounds by drafts accepted, and what the law predicts for the same rounds."""

    kind: str                      # "chain" or "tree"
    counts: list[int]              # rounds that accepted j drafts, j = 0..the longest round's reach
    expected: list[float]          # rounds the one-rate law predicts at each j (the same total)
    alpha: float                   # the one rate: accepted / (accepted + rejected)
    rates: list[float]             # per depth d: going on past d / reaching d with a try (NaN: never tried)
    measured: list[float] | None   # trees: the rounds the measured per-depth law predicts at each j
    all_or_nothing: tuple[int, float]   # rounds that accepted none or all of their reach: (observed, expected)
    fit: stats.Fit
    skipped: int                   # rounds with nothing drafted: they test nothing, left out

    @property
    def rounds(self) -> int:
        return sum(self.counts)

    @property
    def certain(self) -> bool:
        """α is 0 or 1: the law puts every round at one length, and there is nothing to test."""
        return self.alpha in (0.0, 1.0)


def tree_depth(rnd: Round) -> int:
    """How deep a tree round could go: its deepest node's depth (a root's child is at depth 1)."""
    depth: list[int] = []
    for node in rnd.tree or ():
        depth.append(1 if node.parent < 0 else depth[node.parent] + 1)
    return max(depth, default=0)


def reach(rnd: Round) -> int:
    """The most drafts the round could have accepted: K for a chain, the tree's depth for a tree."""
    return tree_depth(rnd) if rnd.tree else rnd.k


def _failed(rnd: Round) -> bool:
    """The round stopped at a rejection (not at its reach, an end of sequence or a leaf)."""
    return rnd.rejected_at is not None


def per_depth_rates(rounds: Sequence[Round], depth: int) -> list[float]:
    """Per depth d < `depth`: rounds that went past d / (those + rounds rejected at d); NaN where none tried."""
    rates = []
    for d in range(depth):
        went = sum(1 for r in rounds if r.n_accepted > d)
        stopped = sum(1 for r in rounds if r.n_accepted == d and _failed(r))
        rates.append(went / (went + stopped) if went + stopped else float("nan"))
    return rates


def _expected(rounds: Sequence[Round], rates: Sequence[float], width: int) -> list[float]:
    """The sum of the rounds' laws, each cut at the round's own reach (a depth never tried goes no further)."""
    total = [0.0] * width
    for r in rounds:
        law = theory.depth_law([0.0 if rate != rate else rate for rate in rates[:reach(r)]])
        for j, share in enumerate(law):
            total[j] += share
    return total


def accepted_law(rounds: Sequence[Round]) -> AcceptedLaw | None:
    """The run's counts and laws; None when no round drafted anything."""
    tried = [r for r in rounds if reach(r) > 0]
    if not tried:
        return None
    width = max(reach(r) for r in tried) + 1
    counts = [0] * width
    for r in tried:
        counts[r.n_accepted] += 1
    accepted = sum(r.n_accepted for r in tried)
    failures = sum(1 for r in tried if _failed(r))
    alpha = accepted / (accepted + failures) if accepted + failures else 1.0
    expected = _expected(tried, [alpha] * (width - 1), width)
    is_tree = any(r.tree for r in tried)
    rates = per_depth_rates(tried, width - 1)
    measured = _expected(tried, rates, width) if is_tree else None
    ends = sum(1 for r in tried if r.n_accepted in (0, reach(r)))
    ends_expected = sum(theory.depth_law([alpha] * reach(r))[0] + alpha ** reach(r) for r in tried)
    return AcceptedLaw("tree" if is_tree else "chain", counts, expected, alpha, rates, measured,
                       (ends, ends_expected), stats.fit(counts, expected, fitted=1), len(rounds) - len(tried))


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def reading(law: AcceptedLaw | None, lang: str = DEFAULT_LANG) -> str:
    """One sentence for a student: does the one-rate law fit these rounds, and if not, which way do they miss."""
    if law is None:
        return t("law.none", lang)
    tv, alpha = display_number(law.fit.tv, 2), display_number(law.alpha, 2)
    if law.certain:
        return t("law.certain", lang, alpha=alpha)
    if law.fit.p is None:
        return t("law.too_few", lang, rounds=law.rounds, tv=tv, least=int(stats.MIN_EXPECTED))
    if law.fit.p >= SIGNIFICANCE:
        return t("law.fits", lang, p=_p(law.fit.p), tv=tv, alpha=alpha)
    observed, expected = law.all_or_nothing
    key = "law.breaks_runs" if observed > expected else "law.breaks_position"
    return t(key, lang, p=_p(law.fit.p), tv=tv, ends=observed, expected=f"{expected:.0f}")


def _law_traces(fig: go.Figure, law: AcceptedLaw, x: list[int], lang: str) -> None:
    """The law's expected rounds as markers on a line (and a tree's measured per-depth law beside them)."""
    if law.measured is not None:
        fig.add_scatter(x=x, y=law.measured, mode="markers", name=plotly_safe(t("law.measured_series", lang)),
                        marker=dict(symbol="diamond-open", size=12, color=PALETTE["bonus"], line=dict(width=2)),
                        hovertemplate=hover_template("law.measured_hover", lang, j="%{x}", n="%{y:.1f}"))
    name = t("law.tree_series" if law.kind == "tree" else "law.chain_series", lang, alpha=f"{law.alpha:.2f}")
    fig.add_scatter(x=x, y=law.expected, mode="lines+markers", name=plotly_safe(name),
                    line=dict(color=PALETTE["correction"], dash="dot", width=2),
                    marker=dict(symbol="circle-open", size=10, line=dict(width=2)),
                    hovertemplate=hover_template("law.law_hover", lang, j="%{x}", n="%{y:.1f}"))


def accepted_law_figure(rounds: Sequence[Round], lang: str = DEFAULT_LANG) -> go.Figure:
    """Bars: rounds by drafts accepted; markers: the rounds the law predicts at each count; the reading below."""
    title = t("law.title", lang)
    law = accepted_law(rounds)
    if law is None:
        return empty_figure(title, t("law.none", lang))
    x = list(range(len(law.counts)))
    n = law.rounds
    fig = go.Figure()
    fig.add_bar(x=x, y=law.counts, name=plotly_safe(t("law.observed_series", lang)), marker_color=PALETTE["accepted"],
                opacity=0.85, customdata=[c / n for c in law.counts],
                hovertemplate=hover_template("law.observed_hover", lang, j="%{x}", n="%{y}", share="%{customdata:.0%}"))
    _law_traces(fig, law, x, lang)
    notes = [reading(law, lang), t("law.convention", lang)]
    if law.kind == "tree":
        notes.append(t("law.tree_note", lang))
    if law.skipped:
        notes.append(t("law.skipped", lang, n=law.skipped))
    captioned_layout(fig, title, notes, t("law.x", lang), t("law.y", lang), xaxis=dict(dtick=1))
    return fig
