"""Where the time goes, per round: drafting, the verify, and the rest, beside what the target alone takes.

Each round's bar stacks the times the decoder recorded (`Round.draft_seconds`: the drafter's proposal;
`Round.verify_seconds`: the target's forward, the acceptance rule and the one host sync that reads the verdict) and
the rest of the round's wall time (`Round.seconds` minus the two: keeping the accepted path in the caches, the
drafter's own bookkeeping and recording the round). The bars add up to the round's recorded wall time; a trace without
it (an older file: `seconds` 0) shows no rest. The page draws in another thread: its work is in no segment,
but where it competes for the same cores every segment grows.

The reference is per round: the tokens the round emitted times the target alone's time per token (from the run's
target-alone comparison). A bar above its mark is a round that cost more than the target alone would have taken for
the same tokens: that is where a run is slower, and the bar's segments say why (too many draft steps, a verify that
costs more than one token, or the rest). Without a target-alone time there is no mark, and the caption says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .charts import captioned_layout, empty_figure, hover_template, plotly_safe
from .format import PALETTE, pct

LIMIT = 200    # the newest rounds drawn (a long run's bars stay readable and the figure bounded)


@dataclass(frozen=True)
class RoundTime:
    """One round's wall time in seconds, split in three, and the target alone's time for the same tokens."""

    index: int
    draft: float
    verify: float
    rest: float
    tokens: int
    target_alone: float | None

    @property
    def total(self) -> float:
        return self.draft + self.verify + self.rest

    @property
    def slower(self) -> bool | None:
        """The round cost more than the target alone would have for its tokens (None without a reference)."""
        return None if self.target_alone is None else self.total > self.target_alone


def round_times(rounds: Sequence[Round], target_token_s: float | None = None) -> list[RoundTime]:
    """Each round's three parts; `target_token_s`: the target alone's seconds per token (None: not measured)."""
    base = target_token_s if target_token_s and target_token_s > 0 else None
    out = []
    for r in rounds:
        timed = r.draft_seconds + r.verify_seconds
        rest = r.seconds - timed if r.seconds > timed else 0.0
        out.append(RoundTime(r.index, r.draft_seconds, r.verify_seconds, rest, len(r.emitted),
                             None if base is None else base * len(r.emitted)))
    return out


def summary(times: Sequence[RoundTime], lang: str = DEFAULT_LANG) -> str:
    """The run's time in three shares, and how many rounds cost more than the target alone would have."""
    total = sum(x.total for x in times)
    if total <= 0:
        return t("rtime.untimed", lang)
    draft, verify = pct(sum(x.draft for x in times) / total), pct(sum(x.verify for x in times) / total)
    if any(x.rest > 0 for x in times):
        line = t("rtime.shares", lang, draft=draft, verify=verify, rest=pct(sum(x.rest for x in times) / total))
    else:   # an older trace: no round's wall time beyond its two parts
        line = t("rtime.shares_two", lang, draft=draft, verify=verify)
    if times[0].target_alone is None:
        return line + " " + t("rtime.no_reference", lang)
    slower = sum(1 for x in times if x.slower)
    return line + " " + t("rtime.slower", lang, slower=slower, rounds=len(times))


def round_time_figure(rounds: Sequence[Round], target_token_s: float | None = None, lang: str = DEFAULT_LANG,
                      limit: int = LIMIT) -> go.Figure:
    """Per round (the newest `limit`): draft, verify and the rest stacked in ms; the target alone's time for the
    round's tokens as a mark."""
    title = t("rtime.title", lang)
    if not rounds:
        return empty_figure(title, t("chart.no_rounds", lang))
    every = round_times(rounds, target_token_s)
    times = every[-limit:]
    x = [r.index + 1 for r in times]
    fig = go.Figure()
    for key, part, colour in (("rtime.draft_series", "draft", PALETTE["q"]),
                              ("rtime.verify_series", "verify", PALETTE["p"]),
                              ("rtime.rest_series", "rest", PALETTE["discarded"])):
        name = t(key, lang)
        fig.add_bar(x=x, y=[1000 * getattr(r, part) for r in times], name=plotly_safe(name), marker_color=colour,
                    hovertemplate=hover_template("rtime.part_hover", lang, round="%{x}", part=name, ms="%{y:.1f}"))
    if times[0].target_alone is not None:
        fig.add_scatter(x=x, y=[1000 * r.target_alone for r in times], mode="markers",
                        name=plotly_safe(t("rtime.target_series", lang)), customdata=[r.tokens for r in times],
                        marker=dict(symbol="line-ew-open", size=18, color="#000000", line=dict(width=3)),
                        hovertemplate=hover_template("rtime.target_hover", lang, round="%{x}", n="%{customdata}",
                                             ms="%{y:.1f}"))
    notes = [summary(every, lang), t("rtime.caption", lang)]
    if len(every) > limit:
        notes.append(t("rtime.newest", lang, shown=limit, total=len(every)))
    captioned_layout(fig, title, notes, t("chart.timeline_x", lang), "ms", barmode="stack")
    return fig
