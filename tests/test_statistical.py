"""End to end, the speculative decoder samples from the target's distribution.

For tiny models the exact joint distribution of the first two emitted tokens is
enumerated from the target alone; 20,000 seeded runs of the decoder must fit it
(chi-square goodness of fit, cells with small expectation pooled), and no run
may land on a sequence the target gives probability zero. The same test must
reject deliberately broken rules, which shows it has the power to fail.
"""
import pytest
import torch
from scipy.stats import chisquare

from specviz import SamplingConfig, speculative_generate
from specviz import speculative as spec
from specviz.sampling import probabilities
from tiny import exact_joint, noisy_copy, tiny_model

N_SAMPLES = 20_000
N_TOKENS = 2
VOCAB = 8
PROMPT = [1, 2]
P_VALUE_FLOOR = 1e-3   # a correct decoder fails this with probability 0.001 per case (and seeds are fixed)


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    target = tiny_model(51, vocab=VOCAB, scale=0.6)
    # Partly agreeing draft: frequent acceptances (bonus tokens happen) and frequent rejections.
    return target, noisy_copy(target, 7, 0.8)


def sample_counts(target, draft, k, cfg, n=N_SAMPLES, **options):
    counts = {}
    torch.set_num_threads(1)  # tiny forwards: threads only add overhead
    for seed in range(n):
        out = []
        for rnd in speculative_generate(target, draft, PROMPT, k=k, sampling=cfg, seed=seed,
                                        max_new_tokens=k + 1, record=False, ignore_eos=True,
                                        **options):
            out += rnd.emitted
            if len(out) >= N_TOKENS:
                break
        key = tuple(out[:N_TOKENS])
        counts[key] = counts.get(key, 0) + 1
    return counts


def goodness_of_fit(counts, exact, n):
    impossible = {seq: c for seq, c in counts.items() if exact.get(seq, 0.0) == 0.0}
    cells = sorted(exact, key=exact.get, reverse=True)
    observed, expected, pooled_o, pooled_e = [], [], 0, 0.0
    for seq in cells:
        e = exact[seq] * n
        if e >= 5:
            observed.append(counts.get(seq, 0))
            expected.append(e)
        else:
            pooled_o += counts.get(seq, 0)
            pooled_e += e
    if pooled_e > 0:
        observed.append(pooled_o)
        expected.append(pooled_e)
    scale = sum(observed) / sum(expected)  # float rounding of the enumerated mass
    return impossible, chisquare(observed, [e * scale for e in expected]).pvalue


def exact_target(target, cfg):
    return exact_joint(target, PROMPT, N_TOKENS, lambda logits: probabilities(logits[None], cfg)[0])


CASES = [(k, t, top_k) for k in (1, 3, 5) for t, top_k in ((1.0, 0), (0.7, 4))] + [(3, 1.0, 4), (3, 0.7, 0)]


@pytest.mark.statistical
@pytest.mark.parametrize("k, temperature, top_k", CASES)
def test_first_tokens_follow_the_target_distribution(models, k, temperature, top_k):
    target, draft = models
    cfg = SamplingConfig(temperature=temperature, top_k=top_k)
    counts = sample_counts(target, draft, k, cfg)
    impossible, p_value = goodness_of_fit(counts, exact_target(target, cfg), N_SAMPLES)
    assert not impossible, f"sampled sequences the target gives probability 0: {impossible}"
    assert p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.8)])
def test_adaptive_draft_length_and_top_p_keep_the_target_distribution(models, temperature, top_p):
    """Stopping a round early depends on the draft's own samples: still lossless."""
    target, draft = models
    cfg = SamplingConfig(temperature=temperature, top_p=top_p)
    counts = sample_counts(target, draft, 5, cfg, adaptive_threshold=0.3)
    impossible, p_value = goodness_of_fit(counts, exact_target(target, cfg), N_SAMPLES)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


def _always_accept(p_x, q_x):
    return torch.ones_like(p_x)


def _residual_is_p(P, Q):
    return P


@pytest.mark.statistical
@pytest.mark.parametrize("rule, broken", [("acceptance_prob", _always_accept), ("residual", _residual_is_p)],
                         ids=["always-accept", "residual=p"])
def test_the_same_test_catches_a_broken_rule(models, monkeypatch, rule, broken):
    target, draft = models
    monkeypatch.setattr(spec, rule, broken)
    cfg = SamplingConfig(temperature=1.0)
    counts = sample_counts(target, draft, 3, cfg)
    _, p_value = goodness_of_fit(counts, exact_target(target, cfg), N_SAMPLES)
    assert p_value < 1e-6, f"a broken rule went unnoticed (p = {p_value:.2e})"


def test_the_models_exercise_both_branches(models):
    """Guard for the statistical cases: both rejections and bonus tokens occur with these models."""
    target, draft = models
    rounds = [r for s in range(50) for r in speculative_generate(target, draft, PROMPT, k=3, seed=s,
                                                                  sampling=SamplingConfig(1.0),
                                                                  max_new_tokens=8, record=False)]
    rejected = sum(r.rejected_at is not None for r in rounds)
    assert 0.2 < rejected / len(rounds) < 0.9
