"""The what-if calculator: the theory's curves for chosen α, K, c, a worked example, and the measured point.

Pure arithmetic over `specviz.theory` (independent acceptances, docs/design.md):
expected tokens per round (1 − α^(K+1)) / (1 − α) and speedup
E[tokens] / (K·c + verify_cost). No Gradio, no torch.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .. import theory
from ..trace.records import Round, metrics

K_MAX = 16
C_MAX = 2.0
PREMISE_RATIO = 1.5    # a verify forward over K+1 positions costing more than this × one position: premise fails
# More positions cannot cost much less than one: a repetition below this ratio measured noise, not the model.
IMPLAUSIBLE_RATIO = 0.8
MIN_REPEATS = 3        # fewer repetitions than this show no spread worth a verdict


@dataclass(frozen=True)
class Curves:
    ks: list[int]
    tokens: list[float]      # expected tokens per round at each K
    speedup: list[float]     # expected speedup at each K
    best_k: int


def curves(alpha: float, c: float, verify_cost: float = 1.0, k_max: int = K_MAX) -> Curves:
    ks = list(range(1, k_max + 1))
    return Curves(ks, [theory.expected_tokens_per_round(alpha, k) for k in ks],
                  [theory.expected_speedup(alpha, k, c, verify_cost) for k in ks], theory.optimal_k(alpha, c, k_max))


# The worked example: a 70B target with an 8B draft, K = 5, α = 0.78. "claimed" is the top of the 2–2.5× that Chen
# et al. 2023 ("Accelerating Large Language Model Decoding with Speculative Sampling", DeepMind, arXiv 2302.01318)
# measured with Chinchilla 70B in a distributed setup, the published figure the page cites beside the formula's.
WORKED = {"alpha": 0.78, "k": 5, "c": 8 / 70, "claimed": 2.5}


@dataclass(frozen=True)
class Worked:
    alpha: float
    k: int
    c: float
    claimed: float
    tokens: float            # what the formula gives for E[tokens per round]
    speedup: float           # what the formula gives for the speedup (verify cost 1)
    c_for_claim: float       # the c that would make the formula give the claimed speedup (NaN if none can)


def worked_example() -> Worked:
    a, k, c, claimed = WORKED["alpha"], WORKED["k"], WORKED["c"], WORKED["claimed"]
    tokens = theory.expected_tokens_per_round(a, k)
    c_claim = (tokens / claimed - 1.0) / k
    return Worked(a, k, c, claimed, tokens, theory.expected_speedup(a, k, c),
                  c_claim if c_claim >= 0 else float("nan"))


@dataclass(frozen=True)
class Measured:
    alpha: float             # alpha_verified of the run (the per-token α the theory assumes)
    k: int
    tau: float               # tokens per round, measured
    c: float                 # the cost ratio: timed if known, else estimated from the run's own timings
    c_timed: bool


def measured_point(rounds: list[Round], k: int, c_timed: float | None = None) -> Measured | None:
    """The run's own point on the curves; None when it has no drafted token."""
    m = metrics(rounds)
    if not m["drafted"] or math.isnan(m["alpha_verified"]):
        return None
    c = c_timed
    if c is None:
        # One draft forward per drafted token against one target forward per round: the run's own c.
        per_draft = m["draft_seconds"] / m["drafted"]
        per_verify = m["verify_seconds"] / m["rounds"]
        c = per_draft / per_verify if per_verify > 0 else float("nan")
    return Measured(m["alpha_verified"], int(k), m["tau"], c, c_timed is not None)


@dataclass(frozen=True)
class Premise:
    positions: list[int]     # 1 .. K+1
    target: list[float]      # seconds of one target forward over that many positions
    draft_1: float           # seconds of one draft forward over one position
    ratio: float             # target over K+1 positions / target over 1
    holds: bool              # the verify forward costs about one forward, as the speedup assumes


def premise(target_by_positions: dict[int, float], draft_1: float) -> Premise:
    """`target_by_positions`: positions -> seconds (from bench.forward_costs: target_k[k] is k+1 positions)."""
    pos = sorted(target_by_positions)
    secs = [target_by_positions[n] for n in pos]
    ratio = secs[-1] / secs[0] if secs and secs[0] > 0 else float("nan")
    return Premise(pos, secs, draft_1, ratio, bool(ratio <= PREMISE_RATIO))


@dataclass(frozen=True)
class PremiseSpread:
    """The premise measured several times: the median per position, and how far the repetitions' ratios spread.

    `verdict` is "holds", "fails" or "noisy": noisy whenever the spread could
    put the ratio on either side of PREMISE_RATIO, or a repetition measured more
    positions as clearly cheaper than one (only noise does that), so the page
    never shows a tick (or a cross) for what the timer's noise decided.
    """

    positions: list[int]
    target: list[float]      # median seconds over the repetitions, per number of positions
    draft_1: float           # median seconds of one draft forward
    ratios: list[float]      # each repetition's target over K+1 positions / over 1
    ratio: float             # their median
    lo: float
    hi: float
    verdict: str

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"


def premise_verdict(ratios: list[float], bound: float = PREMISE_RATIO) -> str:
    """"holds" when every repetition is at most `bound`, "fails" when every one is above it, else "noisy"."""
    finite = [r for r in ratios if math.isfinite(r) and r > 0]
    if len(finite) < MIN_REPEATS or len(finite) < len(ratios):
        return "noisy"
    lo, hi = min(finite), max(finite)
    if lo < IMPLAUSIBLE_RATIO or lo <= bound < hi:
        return "noisy"
    return "holds" if hi <= bound else "fails"


def premise_spread(repeats: list[Premise]) -> PremiseSpread | None:
    """The repetitions (each a `premise(...)` over the same positions) summed up; None before the first one."""
    if not repeats:
        return None
    positions = repeats[0].positions
    target = [statistics.median(r.target[i] for r in repeats) for i in range(len(positions))]
    ratios = [r.ratio for r in repeats]
    finite = [r for r in ratios if math.isfinite(r)] or [float("nan")]
    return PremiseSpread(positions, target, statistics.median(r.draft_1 for r in repeats), ratios,
                         statistics.median(finite), min(finite), max(finite), premise_verdict(ratios))
