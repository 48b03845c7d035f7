"""The decoder loop: greedy equality with the target alone, boundaries, EOS, caches, options."""
import dataclasses
from types import SimpleNamespace

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, metrics, run_to_end, speculative_generate
from specviz.runtime import decoding
from specviz.runtime.state import runtime_of
from specviz.engine import model_drafter
from specviz.engine import speculative as spec
from tiny import noisy_copy, tiny_model

GREEDY = SamplingConfig(temperature=0)


def run(target, draft, prompt, **kw):
    return list(speculative_generate(target, draft, prompt, **kw))


def emitted(rounds):
    return [t for r in rounds for t in r.emitted]


def baseline(target, prompt, **kw):
    return [s.token_id for s in autoregressive_generate(target, prompt, **kw)]


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
def cache_path(static) -> dict:
    """The keyword arguments of a cache path: dynamic (False), static (True), or the graphs' buffers ("graphs")."""
    return dict(compile="graphs") if static == "graphs" else dict(static_cache=static)


@pytest.mark.parametrize("static", [False, True, "graphs"])
def test_cropped_caches_give_the_logits_of_a_fresh_prefill(monkeypatch, static):
    """Every cached forward (after rejections and crops) equals a cache-free forward over the same tokens."""
    target = tiny_model(41)
    draft = noisy_copy(target, 2, 0.6)
    calls = []
    real_forward = spec.forward_logits

    def spy(model, ids, cache, keep, eager=False):
        before = cache.get_seq_length()
        out = real_forward(model, ids, cache, keep, eager)
        calls.append((model, before, ids.reshape(-1).clone(), out.reshape(-1, out.shape[-1]).clone(), keep))
        return out

    monkeypatch.setattr(spec, "forward_logits", spy)     # the target's verify forwards
    monkeypatch.setattr(model_drafter, "forward_logits", spy)  # the draft model's forwards
    monkeypatch.setattr(decoding, "forward_logits", spy)  # both prefills
    prompt = [1, 2, 3]
    rounds = run(target, draft, prompt, k=4, sampling=SamplingConfig(1.0), seed=5, max_new_tokens=30,
                 **cache_path(static))
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


# ------------------------------------------------------------ options
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


# ------------------------------------------------------------ the static-cache path
@pytest.mark.parametrize("k", [1, 4, 8])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_static_cache_path_gives_the_same_tokens_as_the_dynamic_one(k, temperature):
    """Same seed, same tokens: a rollback that only moves the cache position loses nothing."""
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    cfg = SamplingConfig(temperature)
    dynamic = emitted(run(target, draft, [1, 2, 3], k=k, sampling=cfg, seed=4, max_new_tokens=30))
    static = emitted(run(target, draft, [1, 2, 3], k=k, sampling=cfg, seed=4, max_new_tokens=30, static_cache=True))
    assert static == dynamic
    plain = baseline(target, [1, 2, 3], sampling=cfg, seed=4, max_new_tokens=30, static_cache=True)
    assert plain == baseline(target, [1, 2, 3], sampling=cfg, seed=4, max_new_tokens=30)
    if cfg.greedy:
        assert static == plain


def test_compile_options_are_checked(tiny_pair):
    target, draft = tiny_pair
    with pytest.raises(ValueError, match="compile must be"):
        run(target, draft, [1], compile="fast")
    with pytest.raises(ValueError, match="static cache"):
        run(target, draft, [1], compile="on", static_cache=False)
    with pytest.raises(ValueError, match="compile must be"):
        baseline(target, [1], compile="yes")


@pytest.mark.parametrize("method", ["model", "hybrid", "ngram"])
def test_the_compiled_path_warms_each_model_once_and_decodes_like_the_static_one(monkeypatch, method):
    """compile="on" without torch.compile (CPU): the target warms its verify shapes, a model drafter its own
    draft steps (the lookup none), the report says so, and the tokens are the static cache's."""
    target = tiny_model(11, eos_token_id=3)
    draft = noisy_copy(target, 4, 0.5)
    monkeypatch.setattr(decoding, "compiled_forward", lambda model: model.forward)
    monkeypatch.setattr(decoding, "_compiled_base", lambda model: model.get_decoder().forward)
    warmed = []
    monkeypatch.setattr(spec, "warm_up", lambda model, lengths, *a, **kw: warmed.append((model, lengths)))
    monkeypatch.setattr(model_drafter, "warm_up", lambda model, lengths, *a, **kw: warmed.append((model, lengths)))
    cfg = SamplingConfig(0.9)
    compiled, report = run_to_end(speculative_generate(target, draft, [1, 2, 1, 2], k=3, sampling=cfg, seed=5,
                                                       max_new_tokens=24, drafter=method, compile="on"))
    static = run(target, draft, [1, 2, 1, 2], k=3, sampling=cfg, seed=5, max_new_tokens=24, drafter=method,
                 static_cache=True)
    assert emitted(compiled) == emitted(static)
    expected = [("target", [1, 2, 3, 4])] + ([] if method == "ngram" else [("draft", [1, 2])])
    assert sorted(("target" if m is target else "draft", lengths) for m, lengths in warmed) == sorted(expected)
    assert report.warmup_seconds >= 0 and report.prefill_seconds >= 0 and report.drafter_seconds is None
    for model in (target, draft):
        runtime_of(model).static_cache = None


def test_the_shared_static_cache_is_reused_and_grown(tiny_pair):
    """Compiled runs replay graphs on one cache per model: the second run must reuse it, a longer one grow it."""
    target, _ = tiny_pair
    first = decoding._shared_static_cache(target, 40)
    assert decoding._shared_static_cache(target, 100) is first          # within the 256 allocated
    bigger = decoding._shared_static_cache(target, 300)
    assert bigger is not first and decoding._shared_static_cache(target, 300) is bigger
    runtime_of(target).static_cache = None


# ------------------------------------------------------------ one loop for chains and trees
@pytest.mark.parametrize("how", [dict(k=3), dict(k=3, drafter="hybrid"), dict(tree="2x2"), dict(tree="dynamic:4")])
def test_chains_and_trees_run_through_the_one_round_and_chains_skip_the_mask(monkeypatch, how):
    """Every round of either shape goes through `decode_round` and `rounds`; a chain's verify builds no tree mask
    (its fast path: causal forward, static caches and graphs), a tree's always does."""
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    shapes, masked = [], []
    one_round, forward_masked = spec.decode_round, spec.forward_masked

    def spy_round(sides, tokens, depth, *args):
        state = one_round(sides, tokens, depth, *args)
        shapes.append(state[0].proposal.shape)
        return state

    def spy_masked(*args):
        masked.append(True)
        return forward_masked(*args)

    monkeypatch.setattr(spec, "decode_round", spy_round)
    monkeypatch.setattr(spec, "forward_masked", spy_masked)
    rounds = run(target, draft, [1, 2, 3], sampling=GREEDY, max_new_tokens=20, **how)
    assert emitted(rounds) == baseline(target, [1, 2, 3], sampling=GREEDY, max_new_tokens=20)
    assert len(shapes) == len(rounds)
    trees = [shape for shape in shapes if not shape.is_chain()]   # every proposal has a shape; a chain's is width one
    assert len(masked) == len(trees)
    if "tree" in how:   # a round whose tree came out one node wide (or empty, at the budget's end) is its chain
        assert trees and all(r.drafter == "tree" and (r.tree or not r.drafted) for r in rounds)
    else:
        assert trees == [] and all(r.tree is None for r in rounds)


@pytest.mark.parametrize("refused", [dict(compile="graphs"), dict(compile="on"), dict(static_cache=True)])
def test_a_tree_on_compiled_forwards_or_a_static_cache_is_refused_in_words(tiny_pair, refused):
    """Never silently eager: the tree says why it cannot run as asked (the page refuses it earlier, in its
    language: input.tree_compile)."""
    target, draft = tiny_pair
    with pytest.raises(ValueError, match="draft tree runs on dynamic caches"):
        run(target, draft, [1, 2], tree="2x2", max_new_tokens=4, **refused)
    assert emitted(run(target, draft, [1, 2], tree="2x2", max_new_tokens=4, compile="auto"))   # auto: eager


def test_building_the_drafter_is_set_up_timed_apart_from_the_rounds(monkeypatch):
    """A trimmed head is cut and packed when the drafter is built (~2 s once a process on the packaged draft): the
    run reports it as `drafter_seconds`, and the CLI's tokens/s leave it out as they leave out the prefill."""
    import time as time_module

    from specviz.cli import generate as cli_generate

    target = tiny_model(11)
    draft = noisy_copy(target, 4, 0.2)
    real = spec.make_drafter

    # The set-up sleeps far longer than a round of these tiny models takes even on a loaded machine 2-4x slower
    # (a whole run of 8 tokens took 1.5 s under CI's two workers): a round that carried it could not pass.
    setup_s = 4.0

    def slow(*args, **kwargs):
        time_module.sleep(setup_s)
        return real(*args, **kwargs)

    monkeypatch.setattr(spec, "make_drafter", slow)
    rounds, report = run_to_end(speculative_generate(target, draft, [1, 2, 3], k=3, sampling=SamplingConfig(0),
                                                     max_new_tokens=8))
    assert report.drafter_seconds >= setup_s and report.warmup_seconds is None
    assert max(r.seconds for r in rounds) < setup_s   # no round carries it

    pair = SimpleNamespace(target=target, draft=draft, tokenizer=None, eos_token_ids=None, decode=lambda ids: "")
    args = SimpleNamespace(drafter="model", k=3, max_new_tokens=8, seed=0, adaptive=None, compile="off", lookup_k=None)
    _, report, wall = cli_generate._decode(args, pair, [1, 2, 3], SamplingConfig(0))
    assert report.drafter_seconds >= setup_s and wall < setup_s


# ------------------------------------------------------------ a chain is the width-one tree
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_chain_and_the_same_chain_as_a_width_one_tree_give_identical_tokens_and_records(temperature):
    """`Tree("1x1x1")` is the chain of 3, drafted, verified and recorded as that chain (`Tree.as_chain`): every
    round's record is the same, field for field, but the clock's."""
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)

    def records(**how):
        rounds = run(target, draft, [1, 2, 3, 1, 2], sampling=SamplingConfig(temperature), max_new_tokens=16,
                     seed=5, **how)
        return [dataclasses.replace(r, draft_seconds=0.0, verify_seconds=0.0, seconds=0.0) for r in rounds]

    chain = records(k=3)
    assert chain and records(tree="1x1x1") == chain == records(tree="-1,0,1")


def test_k_given_with_a_tree_is_refused_in_words(tiny_pair):
    """`k` is a chain's length; a tree's size is in its shape: the two together are refused, never one dropped."""
    with pytest.raises(ValueError, match="give k or tree, not both"):
        run(*tiny_pair, [1, 2], k=4, tree="2x2", max_new_tokens=4)
