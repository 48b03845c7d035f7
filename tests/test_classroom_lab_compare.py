"""Why not just compare tokens: the formulas on hand-made p, q, the measured rates converging to them
(fixed seed, binomial tolerance), and a broken exact matching (against the argmax) that the check catches."""
from __future__ import annotations

import math

import pytest
import torch

from specviz.classroom import lab, lab_compare as compare
from specviz.engine.sampling import SamplingConfig

N = compare.MAX_DRAWS
Z = 4.5   # standard errors allowed: a false alarm is rarer than 1 in 100,000 per check


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _close(measured: float, formula: float, n: int) -> bool:
    # Binomial tolerance around the true rate; 1e-12 lets a certain event (rate 0 or 1) match exactly.
    return abs(measured - formula) <= Z * math.sqrt(formula * (1 - formula) / n) + 1e-12


def _converges(c: compare.TokenComparison) -> bool:
    return _close(c.rule_rate, c.rule_formula, c.n) and _close(c.exact_rate, c.exact_formula, c.n)


def argmax_accepts(p, q, drafts, gen):
    """BROKEN on purpose: compares the draft with the target's argmax instead of a sample from p."""
    return drafts == p.argmax()


SKEWED = (torch.tensor([0.5, 0.3, 0.2]), torch.tensor([0.2, 0.3, 0.5]))


# ---------------------------------------------------------------- (a) the formulas
def test_equal_distributions_accept_always_by_the_rule_and_by_sum_of_squares_by_matching():
    p = torch.tensor([0.5, 0.25, 0.125, 0.125])
    assert compare.rule_formula(p, p) == pytest.approx(1.0)
    assert compare.exact_formula(p, p) == pytest.approx(0.25 + 0.0625 + 2 * 0.015625)


def test_disjoint_supports_accept_nothing_either_way():
    p, q = torch.tensor([0.6, 0.4, 0.0, 0.0]), torch.tensor([0.0, 0.0, 0.7, 0.3])
    assert compare.rule_formula(p, q) == 0.0 and compare.exact_formula(p, q) == 0.0
    c = compare.compare(p, q, 500, _gen())
    assert c.rule_rate == 0.0 and c.exact_rate == 0.0


def test_the_formulas_on_a_hand_made_pair():
    p, q = SKEWED
    assert compare.rule_formula(p, q) == pytest.approx(0.2 + 0.3 + 0.2)
    assert compare.exact_formula(p, q) == pytest.approx(0.1 + 0.09 + 0.1)


# ---------------------------------------------------------------- (b) measured rates converge to the formulas
@pytest.mark.parametrize("seed", [0, 1])
def test_measured_rates_converge_on_a_hand_made_pair(seed):
    c = compare.compare(*SKEWED, N, _gen(seed))
    assert c.n == N and _converges(c)
    assert c.rule_rate > c.exact_rate   # the point of the lesson, measured


def test_measured_rates_converge_on_the_labs_real_distributions():
    d = lab.tiny_distributions("The cat", SamplingConfig(temperature=0.6))
    c = compare.compare(d.p, d.q, N, _gen(3))
    assert _converges(c)
    assert c.rule_formula >= c.exact_formula


def test_equal_distributions_are_always_accepted_by_the_rule():
    p = torch.softmax(torch.randn(50, generator=_gen(5)), -1)
    c = compare.compare(p, p, N, _gen(6))
    assert c.rule_rate == 1.0 and _converges(c)


# ---------------------------------------------------------------- (c) a broken matching fails (b)
def test_matching_against_the_argmax_instead_of_a_sample_fails_the_convergence_check():
    c = compare.compare(*SKEWED, N, _gen(0), exact_fn=argmax_accepts)
    assert not _converges(c)
    d = lab.tiny_distributions("The cat", SamplingConfig(temperature=0.6))
    assert not _converges(compare.compare(d.p, d.q, N, _gen(3), exact_fn=argmax_accepts))


def test_an_exact_matching_that_secretly_uses_the_rule_fails_the_convergence_check():
    """The lesson's two lines would agree if "exact matching" were the rule under another name: the check sees it."""
    c = compare.compare(*SKEWED, N, _gen(0), exact_fn=compare.rule_accepts)
    assert not _converges(c) and abs(c.exact_rate - c.rule_formula) < 0.05
    d = lab.tiny_distributions("The cat", SamplingConfig(temperature=0.6))
    assert not _converges(compare.compare(d.p, d.q, N, _gen(3), exact_fn=compare.rule_accepts))


# ---------------------------------------------------------------- bounds
@pytest.mark.parametrize("n", [0, -1, compare.MAX_DRAWS + 1, 2.5, True, "100"])
def test_the_draw_count_is_refused_out_of_range_not_clamped(n):
    with pytest.raises(ValueError):
        compare.compare(*SKEWED, n, _gen())


def test_the_same_seed_gives_the_same_measurement():
    assert compare.compare(*SKEWED, 1000, _gen(9)) == compare.compare(*SKEWED, 1000, _gen(9))
