"""The decoder: exact losslessness of the rule, greedy equality, boundaries, caches, trace."""
import itertools

import pytest
import torch

from specviz import SamplingConfig, Trace, autoregressive_generate, metrics, speculative_generate
from specviz import speculative as spec
from specviz.trace import TraceFormatError
from tiny import noisy_copy, tiny_model

GREEDY = SamplingConfig(temperature=0)


def run(target, draft, prompt, **kw):
    return list(speculative_generate(target, draft, prompt, **kw))


def emitted(rounds):
    return [t for r in rounds for t in r.emitted]


def baseline(target, prompt, **kw):
    return [s.token_id for s in autoregressive_generate(target, prompt, **kw)]


# ------------------------------------------------------------ exact enumeration of the rule
@pytest.mark.parametrize("seed", range(20))
def test_verification_step_emits_exactly_p(seed):
    """P(emit x) = q(x)·a(x) + P(reject)·r(x), built from the implementation's own a and r."""
    g = torch.Generator().manual_seed(seed)
    vocab = 12
    P = torch.softmax(3 * torch.randn(1, vocab, generator=g, dtype=torch.float64), -1)
    Q = torch.softmax(3 * torch.randn(1, vocab, generator=g, dtype=torch.float64), -1)
    if seed % 4 == 0:  # zeros on either side, as top-k / top-p produce
        P[0, :3] = 0
        Q[0, 5:8] = 0
        P, Q = P / P.sum(), Q / Q.sum()
    xs = torch.arange(vocab)
    ok = Q[0] > 0
    a = torch.zeros(vocab, dtype=torch.float64)
    a[ok] = spec.acceptance_prob(P[0, xs[ok]], Q[0, xs[ok]])
    p_reject = (Q[0] * (1 - a)).sum()
    emit = Q[0] * a + p_reject * spec.residual(P, Q)[0]
    assert torch.allclose(emit, P[0], atol=1e-6), (emit - P[0]).abs().max()


def test_residual_rows_are_distributions_even_when_p_equals_q():
    P = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    r = spec.residual(P, P.clone())
    assert torch.allclose(r.sum(-1), torch.ones(2)) and (r >= 0).all()


# ------------------------------------------------------------ greedy: token-for-token equal
@pytest.mark.parametrize("k", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("prompt", [[3], [1, 2, 3], [5, 9, 1, 0, 7, 7, 2]])
@pytest.mark.parametrize("noise", [0.0, 0.3, None])
def test_greedy_matches_target_alone(k, prompt, noise):
    target = tiny_model(11)
    draft = tiny_model(12) if noise is None else noisy_copy(target, 3, noise)
    rounds = run(target, draft, prompt, k=k, sampling=GREEDY, max_new_tokens=30)
    assert emitted(rounds) == baseline(target, prompt, sampling=GREEDY, max_new_tokens=30)
    if noise == 0.0:  # an identical draft is always accepted: every round emits K+1 (the budget permitting)
        assert all(r.bonus is not None and r.rejected_at is None for r in rounds)


def test_greedy_rounds_have_coherent_verdicts():
    target = tiny_model(11)
    rounds = run(target, noisy_copy(target, 4, 0.5), [1, 2], k=4, sampling=GREEDY, max_new_tokens=40)
    assert any(r.correction for r in rounds) and any(r.bonus for r in rounds)
    for r in rounds:
        for i, t in enumerate(r.drafted):
            assert t.accept_prob in (0.0, 1.0) and t.accepted == (t.accept_prob == 1.0 and
                                                                  (r.rejected_at is None or i < r.rejected_at))
        m = r.n_accepted
        assert r.emitted[:m] == [t.token_id for t in r.drafted[:m]]
        if r.rejected_at is not None:
            assert r.rejected_at == m and r.correction.token_id == r.emitted[-1] and r.bonus is None
            assert r.drafted[m].token_id != r.correction.token_id
        else:
            assert r.bonus.token_id == r.emitted[-1] and len(r.emitted) == r.k + 1


# ------------------------------------------------------------ boundaries
def test_k_one_and_one_token_prompt(tiny_pair):
    target, draft = tiny_pair
    rounds = run(target, draft, [4], k=1, sampling=GREEDY, max_new_tokens=9)
    assert emitted(rounds) == baseline(target, [4], sampling=GREEDY, max_new_tokens=9)
    assert all(r.k <= 1 for r in rounds)


@pytest.mark.parametrize("max_new", [1, 2, 3, 5, 7, 13])
@pytest.mark.parametrize("k", [1, 4, 16])
def test_max_new_tokens_is_exact_and_k_shrinks_near_the_end(max_new, k):
    target = tiny_model(21)
    for temperature in (0.0, 1.0):
        rounds = run(target, noisy_copy(target, 5, 0.2), [1, 2], k=k, max_new_tokens=max_new,
                     sampling=SamplingConfig(temperature), seed=1)
        out = emitted(rounds)
        assert len(out) == max_new
        produced = 0
        for r in rounds:
            assert r.k <= min(k, max_new - produced - 1)  # K larger than the tokens left is clipped
            produced += len(r.emitted)


def test_eos_inside_a_round_stops_exactly_there():
    target = tiny_model(31)
    plain = baseline(target, [1, 2], sampling=GREEDY, max_new_tokens=20)
    eos = plain[5]
    first = plain.index(eos)
    # An identical draft accepts everything, so EOS arrives as an accepted draft inside a round.
    rounds = run(target, noisy_copy(target, 1, 0.0), [1, 2], k=8, sampling=GREEDY, max_new_tokens=20,
                 eos_token_id=eos)
    out = emitted(rounds)
    assert out == plain[: first + 1] and out[-1] == eos
    last = rounds[-1]
    assert last.eos and last.emitted[-1] == eos and len(last.drafted) == len(last.emitted)
    assert last.bonus is None and last.correction is None
    assert baseline(target, [1, 2], sampling=GREEDY, max_new_tokens=20, eos_token_id=eos) == out
    # ignore_eos runs on to the budget
    assert len(emitted(run(target, target, [1, 2], k=8, sampling=GREEDY, max_new_tokens=20,
                           eos_token_id=eos, ignore_eos=True))) == 20


def test_eos_as_correction_or_bonus_stops(tiny_pair):
    target, draft = tiny_pair
    plain = baseline(target, [1, 2], sampling=GREEDY, max_new_tokens=12)
    eos = plain[3]
    rounds = run(target, draft, [1, 2], k=3, sampling=GREEDY, max_new_tokens=12, eos_token_id=eos)
    assert emitted(rounds) == plain[: plain.index(eos) + 1]


def test_bad_arguments_are_refused(tiny_pair):
    target, draft = tiny_pair
    for kw in (dict(k=0), dict(k=33), dict(k=2.5), dict(max_new_tokens=0), dict(max_new_tokens=10**9)):
        with pytest.raises(ValueError):
            run(target, draft, [1], **kw)
    for ids in ([], torch.zeros(2, 3, dtype=torch.long)):
        with pytest.raises(ValueError):
            run(target, draft, ids)


def test_tensor_and_list_inputs_agree(tiny_pair):
    target, draft = tiny_pair
    cfg = SamplingConfig(temperature=1.0)
    a = run(target, draft, [1, 2, 3], sampling=cfg, seed=7, max_new_tokens=15)
    b = run(target, draft, torch.tensor([[1, 2, 3]]), sampling=cfg, seed=7, max_new_tokens=15)
    assert emitted(a) == emitted(b)


def test_seed_makes_sampling_reproducible(tiny_pair):
    target, draft = tiny_pair
    cfg = SamplingConfig(temperature=1.0, top_k=8)
    a = emitted(run(target, draft, [1, 2], sampling=cfg, seed=3, max_new_tokens=25))
    b = emitted(run(target, draft, [1, 2], sampling=cfg, seed=3, max_new_tokens=25))
    c = emitted(run(target, draft, [1, 2], sampling=cfg, seed=4, max_new_tokens=25))
    assert a == b and a != c


def test_draft_with_padded_vocabulary_is_truncated_to_the_shared_part():
    target = tiny_model(11, vocab=16)
    draft = tiny_model(12, vocab=20)  # padding rows beyond the tokenizer, as Qwen 0.5B vs 7B
    rounds = run(target, draft, [1, 2], k=3, sampling=SamplingConfig(1.0), max_new_tokens=30)
    assert max(emitted(rounds)) < 16


# ------------------------------------------------------------ caches
def test_cropped_caches_give_the_logits_of_a_fresh_prefill(monkeypatch):
    """Every cached forward (after rejections and crops) equals a cache-free forward over the same tokens."""
    target = tiny_model(41)
    draft = noisy_copy(target, 2, 0.6)
    calls = []
    real_forward = spec.forward_logits

    def spy(model, ids, cache, keep):
        before = cache.get_seq_length()
        out = real_forward(model, ids, cache, keep)
        calls.append((model, before, ids.clone(), out.clone(), keep))
        return out

    monkeypatch.setattr(spec, "forward_logits", spy)
    prompt = [1, 2, 3]
    rounds = run(target, draft, prompt, k=4, sampling=SamplingConfig(1.0), seed=5, max_new_tokens=30)
    assert any(r.rejected_at is not None for r in rounds) and any(r.bonus for r in rounds)
    sequence = prompt + emitted(rounds)
    fed = {id(target): [], id(draft): []}   # what each cache has read, replayed from the calls
    checked = 0
    for model, before, ids, out, keep in calls:
        context = fed[id(model)][:before]    # a crop keeps a prefix of what was read
        if model is target:                  # the target's cache only ever holds decided tokens
            assert context == sequence[:before]
        fed[id(model)] = context + ids.tolist()
        with torch.inference_mode():
            fresh = model(input_ids=torch.tensor([fed[id(model)]])).logits[0, -keep:]
        assert torch.allclose(out, fresh, atol=1e-4), (before, ids)
        checked += 1
    assert checked > 20


# ------------------------------------------------------------ trace
def test_trace_records_numbers_consistently(tiny_pair):
    target, draft = tiny_pair
    cfg = SamplingConfig(temperature=0.8, top_k=10)
    rounds = run(target, draft, [1, 2], k=4, sampling=cfg, seed=2, max_new_tokens=40)
    for r in rounds:
        for i, t in enumerate(r.drafted):
            assert t.accept_prob == pytest.approx(min(1.0, t.p / t.q), rel=1e-5)
            assert 0 <= t.u < 1
            if i < r.n_accepted:
                assert t.accepted and t.u < t.accept_prob
            if i == r.rejected_at:
                assert not t.accepted and t.u >= t.accept_prob and r.verdict(i) == "rejected"
            assert [a.prob for a in t.top_q] == sorted((a.prob for a in t.top_q), reverse=True)
            assert t.q == pytest.approx(next((a.prob for a in t.top_q if a.token_id == t.token_id), t.q))
        if r.correction:
            assert r.correction.top[0].prob >= r.correction.prob > 0
        assert r.draft_seconds >= 0 and r.verify_seconds > 0 and r.seconds >= r.verify_seconds


def test_metrics_follow_the_conventions():
    target = tiny_model(11)
    rounds = run(target, noisy_copy(target, 4, 0.4), [1, 2], k=4, sampling=SamplingConfig(1.0),
                 seed=0, max_new_tokens=60)
    m = metrics(rounds)
    assert m["tokens"] == 60 == len(emitted(rounds))
    assert m["tau"] == pytest.approx(60 / len(rounds))
    assert m["acceptance_rate"] == pytest.approx(sum(r.n_accepted for r in rounds) / sum(r.k for r in rounds))
    assert len(m["per_position"]) == 4 and all(0 <= a <= 1 for a in m["per_position"])
    # acceptance can only fall along a round: position i+1 is accepted only if position i was
    assert all(a >= b - 1e-12 for a, b in zip(m["per_position"], m["per_position"][1:]))


def make_trace(rounds, **kw):
    base = dict(prompt="hi <b>", prompt_ids=[1, 2], draft_model="d", target_model="t", k=4,
                max_new_tokens=40, seed=0, sampling=SamplingConfig(0.8).to_dict(), rounds=rounds,
                output_text="x", prefill_seconds=0.01, device="cpu", dtype="torch.float32")
    base.update(kw)
    return Trace(**base)


def test_json_round_trip_is_exact(tiny_pair):
    target, draft = tiny_pair
    rounds = run(target, draft, [1, 2], k=4, sampling=SamplingConfig(0.8), seed=2, max_new_tokens=40)
    trace = make_trace(rounds)
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("format"), "not a specviz trace"),
    (lambda d: d.update(version=99), "unsupported trace version"),
    (lambda d: d["rounds"][0].update(emitted="abc"), "rounds[0].emitted"),
    (lambda d: d["rounds"][0]["drafted"][0].update(q="1"), "drafted[0].q"),
    (lambda d: d["rounds"][0].update(extra=1), "unknown field"),
    (lambda d: d["rounds"][0].pop("index"), "rounds[0].index: missing"),
])
def test_malformed_traces_are_refused_with_a_location(tiny_pair, mutate, message):
    import json

    target, draft = tiny_pair
    rounds = run(target, draft, [1, 2], k=3, sampling=SamplingConfig(0.8), seed=2, max_new_tokens=10)
    data = json.loads(make_trace(rounds).to_json())
    mutate(data)
    with pytest.raises(TraceFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Trace.from_json(json.dumps(data))
    with pytest.raises(TraceFormatError):
        Trace.from_json("{not json")


def test_record_off_keeps_tokens_and_verdicts(tiny_pair):
    target, draft = tiny_pair
    cfg = SamplingConfig(0.9)
    full = run(target, draft, [1, 2], k=4, sampling=cfg, seed=9, max_new_tokens=30)
    bare = run(target, draft, [1, 2], k=4, sampling=cfg, seed=9, max_new_tokens=30, record=False)
    assert emitted(full) == emitted(bare)
    assert [[t.accepted for t in r.drafted] for r in full] == [[t.accepted for t in r.drafted] for r in bare]
    assert metrics(full)["tau"] == metrics(bare)["tau"]


def test_adaptive_drafting_stops_on_low_confidence_and_stays_exact():
    target = tiny_model(11)
    draft = noisy_copy(target, 4, 0.5)
    fixed = run(target, draft, [1, 2], k=8, sampling=GREEDY, max_new_tokens=40)
    adaptive = run(target, draft, [1, 2], k=8, sampling=GREEDY, max_new_tokens=40, adaptive_threshold=0.5)
    assert emitted(adaptive) == emitted(fixed) == baseline(target, [1, 2], sampling=GREEDY, max_new_tokens=40)
    shortened = [r for r in adaptive if r.k < min(8, 40 - sum(len(x.emitted) for x in adaptive[:r.index]) - 1)]
    assert shortened, "no round stopped early"
    for r in shortened:  # it stopped right after a token the draft was unsure of
        assert r.drafted[-1].q_confidence < 0.5
        assert all(t.q_confidence >= 0.5 for t in r.drafted[:-1])
    with pytest.raises(ValueError):
        run(target, draft, [1], adaptive_threshold=1.5)


def test_first_difference_names_the_first_diverging_token():
    from specviz.trace import first_difference

    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2      # one output stopped early (EOS)
