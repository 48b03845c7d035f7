"""Why not just compare tokens? The same drafts through the real rule and through exact matching.

Exact matching accepts a draft x ~ q only when the target's own sample y ~ p is
the same token, so P(accept) = Σ_x p(x)·q(x), never above the rule's (p·q ≤ min(p, q)), and far below it
when p and q spread over many tokens; close to it where both put nearly everything on one token.
The rule accepts x with probability min(1, p(x)/q(x)), so P(accept) =
Σ_x q(x)·min(1, p(x)/q(x)) = Σ_x min(p(x), q(x)), and it still emits exactly p.
Both rates are measured here from real draws (one seeded generator, the same
drafts for both) and put beside their formulas, computed on the same full p and q.
Pure torch: the page only formats what this returns.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..engine.rule import acceptance_prob
from .lab import MAX_SAMPLES

MAX_DRAWS = MAX_SAMPLES   # the lab's own bound on N: the page hands this its checked sample count


@dataclass(frozen=True)
class TokenComparison:
    n: int                 # drafts drawn (the same drafts went through both tests)
    rule_rate: float       # share the real rule accepted
    exact_rate: float      # share whose target sample equalled the draft
    rule_formula: float    # Σ min(p, q)
    exact_formula: float   # Σ p·q

    # The page's "±": the standard error of each measured share (from the measurement, not the formula).
    @property
    def rule_se(self) -> float:
        return standard_error(self.rule_rate, self.n)

    @property
    def exact_se(self) -> float:
        return standard_error(self.exact_rate, self.n)


def rule_formula(p: torch.Tensor, q: torch.Tensor) -> float:
    """Σ_x min(p(x), q(x)): the rule's acceptance probability for one draft."""
    return float(torch.minimum(p.double(), q.double()).sum())


def exact_formula(p: torch.Tensor, q: torch.Tensor) -> float:
    """Σ_x p(x)·q(x): the chance that independent samples of p and q coincide."""
    return float((p.double() * q.double()).sum())


def standard_error(rate: float, n: int) -> float:
    """Binomial standard error of a share measured over n draws."""
    return math.sqrt(max(rate * (1.0 - rate), 0.0) / max(n, 1))


def rule_accepts(p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """[n] bool: u < min(1, p(x)/q(x)) through `specviz.engine.rule.acceptance_prob`, the function the decoder uses."""
    u = torch.rand(drafts.shape[0], generator=gen, device=p.device)
    return u < acceptance_prob(p[drafts], q[drafts])


def exact_accepts(p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """[n] bool: the target draws its own token from p; the draft is kept only if the two are equal."""
    own = torch.multinomial(p, drafts.shape[0], replacement=True, generator=gen)
    return own == drafts


Accepts = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]


def compare(p: torch.Tensor, q: torch.Tensor, n: int, gen: torch.Generator,
            exact_fn: Accepts = exact_accepts) -> TokenComparison:
    """Draw n drafts from q, test each by the rule and by exact matching, and return both rates and formulas.

    n outside 1..MAX_DRAWS is refused (ValueError), never clamped: the page checks its box first.
    `exact_fn` is a hook for the tests' broken variant; the page always uses the default.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_DRAWS:
        raise ValueError(f"n must be a whole number from 1 to {MAX_DRAWS}, not {n!r}")
    drafts = torch.multinomial(q, n, replacement=True, generator=gen)
    rule = rule_accepts(p, q, drafts, gen)
    exact = exact_fn(p, q, drafts, gen)
    return TokenComparison(n=n, rule_rate=float(rule.double().mean()), exact_rate=float(exact.double().mean()),
                           rule_formula=rule_formula(p, q), exact_formula=exact_formula(p, q))


def measure(p: torch.Tensor, q: torch.Tensor, n: int, seed: int) -> TokenComparison:
    """`compare` with its own generator seeded by `seed`, so the page's figures repeat exactly."""
    return compare(p, q, n, torch.Generator(device=p.device).manual_seed(int(seed)))
