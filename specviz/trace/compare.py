"""The speculative run against the target alone: speedup and the identical-output check.

Pure arithmetic on the decoder's records (no Gradio, no torch), shared by the
web app and its tests. In greedy mode speculative decoding must reproduce the
target's own output token for token (docs/design.md); under sampling the two
runs are different draws from the same distribution, so only the speed is
compared.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .records import Step, first_difference

def speedup(spec_tokens_per_s: float | None, base_tokens_per_s: float | None) -> float:
    """spec / base, or NaN when either rate is missing, NaN or not positive."""
    if spec_tokens_per_s is None or base_tokens_per_s is None:
        return float("nan")
    if math.isnan(base_tokens_per_s) or base_tokens_per_s <= 0:
        return float("nan")
    return spec_tokens_per_s / base_tokens_per_s


def tokens_per_s(steps: Sequence[Step]) -> float:
    """Tokens per second of a target-alone run: its tokens over the sum of their step times."""
    seconds = sum(s.seconds for s in steps)
    return len(steps) / seconds if seconds > 0 else float("nan")


@dataclass(frozen=True)
class Comparison:
    spec_tokens_per_s: float
    base_tokens_per_s: float
    greedy: bool
    identical: bool | None       # greedy runs only: the outputs matched token for token
    first_diff: int | None       # index of the first differing token (None if the outputs are equal)
    n_spec: int
    n_base: int

    @property
    def speedup(self) -> float:
        return speedup(self.spec_tokens_per_s, self.base_tokens_per_s)


def compare_runs(spec_ids: Sequence[int], spec_tokens_per_s: float, steps: Sequence[Step],
                 greedy: bool) -> Comparison | None:
    """Compare a speculative output with the target alone; None when the target made no tokens (stopped)."""
    if not steps:
        return None
    spec_ids, base_ids = list(spec_ids), [s.token_id for s in steps]
    same = spec_ids == base_ids
    return Comparison(spec_tokens_per_s=spec_tokens_per_s, base_tokens_per_s=tokens_per_s(steps), greedy=greedy,
                      identical=same if greedy else None,
                      first_diff=None if same else first_difference(spec_ids, base_ids),
                      n_spec=len(spec_ids), n_base=len(base_ids))


def best_row(sweep):
    """The row of a K sweep (`specviz.bench.KSweep`, duck-typed) at its best K, or None."""
    return next((r for r in getattr(sweep, "rows", None) or [] if r.k == getattr(sweep, "best_k", None)), None)
