"""Expected behaviour under independent acceptances (Leviathan et al. 2023, docs/design.md).

alpha: probability that one draft token is accepted; k: draft length;
c: cost of one draft forward over the cost of one target forward.
"""
from __future__ import annotations


def _check(alpha: float, k: int, c: float = 0.0) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if k < 0 or int(k) != k:
        raise ValueError(f"k must be a whole number >= 0, got {k}")
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")


def expected_tokens_per_round(alpha: float, k: int) -> float:
    """(1 - alpha^(k+1)) / (1 - alpha): accepted drafts plus the correction or bonus."""
    _check(alpha, k)
    if alpha == 1.0:
        return float(k + 1)  # the limit of the geometric sum
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def expected_speedup(alpha: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Tokens per unit time over plain decoding: E[tokens] / (k*c + verify_cost).

    verify_cost is the cost of one target forward over k+1 positions relative to a
    one-token forward (1 in the memory-bound ideal; measured, it is a little more).
    """
    _check(alpha, k, c)
    return expected_tokens_per_round(alpha, k) / (k * c + verify_cost)


def optimal_k(alpha: float, c: float, k_max: int = 16) -> int:
    """The k in 1..k_max with the highest expected speedup (the first one on ties)."""
    return max(range(1, k_max + 1), key=lambda k: (expected_speedup(alpha, k, c), -k))


def depth_law(rates) -> list[float]:
    """P(a round goes exactly j deep), j = 0..len(rates), when it goes on past depth d with probability rates[d].

    The chain's law is this with one rate at every depth; a tree's measured law takes a rate per depth."""
    law, reach = [], 1.0
    for rate in rates:
        law.append(reach * (1.0 - rate))
        reach *= rate
    law.append(reach)
    return law


def accepted_length_law(alpha: float, k: int) -> list[float]:
    """P(j drafts accepted), j = 0..k, under independent acceptances: alpha^j (1 - alpha) for j < k and alpha^k at
    j = k, a truncated geometric. The round's own token (correction or bonus) is not counted: tokens emitted = j + 1,
    so the law's mean + 1 is `expected_tokens_per_round`."""
    _check(alpha, k)
    return depth_law([alpha] * k)
