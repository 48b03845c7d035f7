"""End to end, the speculative decoder samples from the target's distribution.

For tiny models the exact joint distribution of the first two emitted tokens is
enumerated from the target alone; 20,000 independent samples of the decoder must
fit it (chi-square goodness of fit, cells with small expectation pooled), and no
sample may land on a sequence the target gives probability zero. The same test
must reject deliberately broken rules, which shows it has the power to fail.

The samples come from the decoder's own round (`decode_round`: the model
drafter, the target's verify forward, `specviz.engine.rule`), thousands of rows per
forward (`specviz.engine.lossless.sample_prefixes`), so a case costs seconds, not minutes.
"""
from functools import lru_cache

import pytest
import torch
from scipy.stats import chisquare

from specviz import SamplingConfig, speculative_generate
from specviz.engine import rule
from specviz.engine.options import decode_options
from specviz.engine.lossless import (chi_square_fit, chi_square_pvalue, exact_prefixes, sample_prefixes,
                                     total_variation)
from tiny import noisy_copy, tiny_model

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


@lru_cache(maxsize=None)
def _exact(target, cfg):
    return exact_prefixes(target, PROMPT, N_TOKENS, cfg)


def fit(models, k, cfg, seed=0, **options):
    target, draft = models
    replay = options.pop("replay", False)
    counts = sample_prefixes(target, draft, PROMPT, N_TOKENS, N_SAMPLES,
                             decode_options(k=k, sampling=cfg, seed=seed, **options), replay=replay)
    assert sum(counts.values()) == N_SAMPLES
    return chi_square_fit(counts, _exact(target, cfg))


CASES = [(k, t, top_k) for k in (1, 3, 5) for t, top_k in ((1.0, 0), (0.7, 4))] + [(3, 1.0, 4), (3, 0.7, 0)]


@pytest.mark.statistical
@pytest.mark.parametrize("k, temperature, top_k", CASES)
def test_first_tokens_follow_the_target_distribution(models, k, temperature, top_k):
    impossible, p_value = fit(models, k, SamplingConfig(temperature=temperature, top_k=top_k))
    assert not impossible, f"sampled sequences the target gives probability 0: {impossible}"
    assert p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.8)])
def test_adaptive_draft_length_and_top_p_keep_the_target_distribution(models, temperature, top_p):
    """Stopping a round early depends on the draft's own samples: still lossless."""
    impossible, p_value = fit(models, 5, SamplingConfig(temperature=temperature, top_p=top_p),
                              adaptive_threshold=0.3)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
@pytest.mark.parametrize("method, temperature", [("model", 1.0), ("hybrid", 0.7)])
def test_the_static_cache_path_keeps_the_target_distribution(models, method, temperature):
    """The same round read through prefilled static caches (the compiled path's cache, without graphs)."""
    impossible, p_value = fit(models, 3, SamplingConfig(temperature=temperature), drafter=method, static_cache=True)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
@pytest.mark.parametrize("k, temperature", [(3, 1.0), (5, 0.7)])
def test_the_graph_buffers_path_keeps_the_target_distribution(models, k, temperature):
    """The round's forwards through the CUDA-graph path's fixed buffers (uncaptured on a CPU)."""
    impossible, p_value = fit(models, k, SamplingConfig(temperature=temperature), replay=True)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


# Prompt lookup proposes "5 2 3" after the last "2 3". The hybrid needs a 3-token match, so its first
# round drafts with the model; in the second, rows whose first token was 4 or 5 end in "2 3 4" or
# "2 3 5", which recur, and take the lookup, while the rest draft with the model: one round mixes both.
PROMPT_WITH_REPEATS = [2, 3, 4, 2, 3, 5, 2, 3]


@lru_cache(maxsize=None)
def _exact_after(target, prompt, cfg):
    return exact_prefixes(target, list(prompt), N_TOKENS, cfg)


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["ngram", "hybrid"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_prompt_lookup_and_hybrid_drafting_keep_the_target_distribution(models, method, temperature):
    """One-hot q (lookup) and rows mixing lookup and model drafts: the same exact rule."""
    target, draft = models
    cfg = SamplingConfig(temperature=temperature)
    counts = sample_prefixes(target, draft, PROMPT_WITH_REPEATS, N_TOKENS, N_SAMPLES,
                             decode_options(k=3, sampling=cfg, drafter=method))
    impossible, p_value = chi_square_fit(counts, _exact_after(target, tuple(PROMPT_WITH_REPEATS), cfg))
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
def test_hybrid_drafting_with_the_adaptive_stop_keeps_the_target_distribution(models):
    """The bench's hybrid: lookup rows, model rows that stop at different points, one round."""
    target, draft = models
    cfg = SamplingConfig(temperature=0.7)
    counts = sample_prefixes(target, draft, PROMPT_WITH_REPEATS, N_TOKENS, N_SAMPLES,
                             decode_options(k=3, sampling=cfg, drafter="hybrid", adaptive_threshold=0.3))
    impossible, p_value = chi_square_fit(counts, _exact_after(target, tuple(PROMPT_WITH_REPEATS), cfg))
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
def test_hybrid_drafting_with_longer_lookup_rounds_keeps_the_target_distribution(models):
    """lookup_k past k: lookup rows of up to 5 tokens beside model rows of 2, one round."""
    target, draft = models
    cfg = SamplingConfig(temperature=0.7)
    counts = sample_prefixes(target, draft, PROMPT_WITH_REPEATS, N_TOKENS, N_SAMPLES,
                             decode_options(k=2, lookup_k=5, sampling=cfg, drafter="hybrid"))
    impossible, p_value = chi_square_fit(counts, _exact_after(target, tuple(PROMPT_WITH_REPEATS), cfg))
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
def test_a_one_hot_rule_that_forgets_to_remove_the_rejected_token_is_caught(models, monkeypatch):
    """Resampling the correction from p itself (x not removed) is biased when q is one-hot."""
    target, draft = models
    monkeypatch.setattr(rule, "residual", _residual_is_p)
    cfg = SamplingConfig(temperature=1.0)
    counts = sample_prefixes(target, draft, PROMPT_WITH_REPEATS, N_TOKENS, N_SAMPLES,
                             decode_options(k=3, sampling=cfg, drafter="ngram"))
    _, p_value = chi_square_fit(counts, _exact_after(target, tuple(PROMPT_WITH_REPEATS), cfg))
    assert p_value < 1e-6, f"a broken one-hot rule went unnoticed (p = {p_value:.2e})"


def _always_accept(p_x, q_x):
    return torch.ones_like(p_x)


def _residual_is_p(P, Q):
    return P


@pytest.mark.statistical
@pytest.mark.parametrize("name, broken", [("acceptance_prob", _always_accept), ("residual", _residual_is_p)],
                         ids=["always-accept", "residual=p"])
def test_the_same_test_catches_a_broken_rule(models, monkeypatch, name, broken):
    monkeypatch.setattr(rule, name, broken)
    _, p_value = fit(models, 3, SamplingConfig(temperature=1.0))
    assert p_value < 1e-6, f"a broken rule went unnoticed (p = {p_value:.2e})"


def test_the_models_exercise_both_branches(models):
    """Guard for the statistical cases: both rejections and bonus tokens occur with these models."""
    target, draft = models
    rounds = [r for s in range(50) for r in speculative_generate(target, draft, PROMPT, k=3, seed=s,
                                                                  sampling=SamplingConfig(1.0),
                                                                  max_new_tokens=8, record=False)]
    rejected = sum(r.rejected_at is not None for r in rounds)
    assert 0.2 < rejected / len(rounds) < 0.9


def test_batched_samples_match_the_one_row_decoder_on_average(models):
    """The batched path and speculative_generate (batch of one) agree in distribution of the first token."""
    target, draft = models
    cfg = SamplingConfig(temperature=1.0)
    one_row = [next(iter(speculative_generate(target, draft, PROMPT, k=3, sampling=cfg, seed=s,
                                              max_new_tokens=4, record=False))).emitted[0] for s in range(400)]
    batched = sample_prefixes(target, draft, PROMPT, 1, 4000, decode_options(k=3, sampling=cfg, seed=1))
    exact = _exact(target, cfg)
    first = {}
    for seq, pr in exact.items():
        first[seq[:1]] = first.get(seq[:1], 0.0) + pr
    for counts in (batched, {(t,): one_row.count(t) for t in set(one_row)}):
        assert total_variation(counts, first) < 0.08


def test_chi_square_pvalue_matches_scipy():
    observed, expected = [18, 30, 52, 7], [20.0, 25.0, 55.0, 7.0]
    assert chi_square_pvalue(observed, expected)[1] == pytest.approx(chisquare(observed, expected).pvalue, rel=1e-9)


def test_enumeration_is_a_distribution(models):
    target, _ = models
    exact = _exact(target, SamplingConfig(0.7, top_k=4))
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-5)
    assert all(len(seq) == N_TOKENS for seq in exact)
