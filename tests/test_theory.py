import random

import pytest

from specviz import theory


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.75, 0.95])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_expected_tokens_match_a_simulation_of_independent_acceptances(alpha, k):
    rng = random.Random(0)
    n = 100_000
    total = 0
    for _ in range(n):
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        total += accepted + 1          # plus the correction or the bonus
    assert theory.expected_tokens_per_round(alpha, k) == pytest.approx(total / n, rel=0.01)


def test_limits_and_speedup():
    assert theory.expected_tokens_per_round(1.0, 4) == 5.0
    assert theory.expected_tokens_per_round(0.0, 4) == 1.0
    # free drafts and a perfect draft: K+1 tokens per target forward
    assert theory.expected_speedup(1.0, 4, 0.0) == 5.0
    assert theory.expected_speedup(0.8, 4, 0.3, verify_cost=1.1) == pytest.approx(
        (1 - 0.8 ** 5) / 0.2 / (4 * 0.3 + 1.1))


def test_optimal_k_is_the_argmax_of_the_speedup():
    for alpha, c in [(0.6, 0.05), (0.8, 0.3), (0.9, 0.37), (0.95, 0.01), (0.2, 0.5)]:
        best = theory.optimal_k(alpha, c, k_max=16)
        assert all(theory.expected_speedup(alpha, best, c) >= theory.expected_speedup(alpha, k, c)
                   for k in range(1, 17))
    assert theory.optimal_k(0.95, 0.01) > theory.optimal_k(0.6, 0.3)   # better drafts, cheaper drafts: longer K


@pytest.mark.parametrize("args", [(-0.1, 2), (1.1, 2), (0.5, -1), (0.5, 1.5)])
def test_bad_inputs_are_refused(args):
    with pytest.raises(ValueError):
        theory.expected_tokens_per_round(*args)
