"""CUDA graphs without torch.compile (specviz.runtime.graphs): the resolver, and the buffers' bookkeeping on a CPU.

On a CPU `compile="graphs"` runs the graph path's fixed buffers without capture
("buffers"): the same ids/positions buffers, per-shape entries and in-place
rollback a captured graph replays, so the exact and greedy tests below (and
tests/test_engine_speculative.py, tests/test_engine_lossless.py) cover its bookkeeping.
"""
import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, run_to_end, speculative_generate
from specviz.runtime import decoding, graphs, zerogpu
from specviz.runtime.state import runtime_of
from specviz.runtime.decoding import Forwards, KVCache, forward_logits, prefill, resolve_compile, resolve_forwards
from specviz.engine.drafters import ModelDrafter
from tiny import noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")
GREEDY = SamplingConfig()


def emitted(rounds):
    return [t for r in rounds for t in r.emitted]


def spec(target, draft, prompt, **kw):
    return emitted(speculative_generate(target, draft, prompt, **kw))


def alone(target, prompt, **kw):
    return [s.token_id for s in autoregressive_generate(target, prompt, **kw)]


# ------------------------------------------------------------ the resolver
def test_auto_picks_plain_graphs_on_zero_gpu_and_torch_compile_on_a_dedicated_gpu(monkeypatch):
    monkeypatch.setattr(zerogpu, "inductor_available", lambda: True)
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert resolve_forwards("auto", "cuda") == Forwards(True, True, "inductor")
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert resolve_forwards("auto", "cuda") == Forwards(True, True, "graphs")
    assert resolve_forwards("on", "cuda").backend == "inductor"       # asked for explicitly: still torch.compile
    assert resolve_forwards("auto", "cpu") == Forwards(False, False, "eager")


def test_auto_picks_plain_graphs_where_torch_compile_is_unavailable(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    monkeypatch.setattr(zerogpu, "inductor_available", lambda: False)
    assert resolve_forwards("auto", "cuda:0").backend == "graphs"


@pytest.mark.parametrize("value, zero", [("true", True), ("1", True), ("True", True), ("false", False),
                                         ("", False), (None, False)])
def test_zero_gpu_is_read_from_the_spaces_variable(value, zero):
    assert zerogpu.on_zero_gpu({} if value is None else {"SPACES_ZERO_GPU": value}) is zero


def test_graphs_off_cuda_runs_the_buffers_uncaptured_and_contradictions_are_refused():
    assert resolve_forwards("graphs", "cpu") == Forwards(True, True, "buffers")
    assert resolve_forwards("graphs", "cuda") == Forwards(True, True, "graphs")
    assert resolve_compile("graphs", "cpu") == (True, True)
    with pytest.raises(ValueError, match="static cache"):
        resolve_forwards("graphs", "cpu", static_cache=False)
    with pytest.raises(ValueError, match="compile must be"):
        resolve_forwards("cudagraphs", "cpu")


# ------------------------------------------------------------ the buffers path decodes exactly
@pytest.mark.parametrize("k", [1, 4, 8])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_graph_buffers_give_the_dynamic_paths_tokens(k, temperature):
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    cfg = SamplingConfig(temperature)
    kw = dict(k=k, sampling=cfg, seed=4, max_new_tokens=30)
    assert spec(target, draft, [1, 2, 3], compile="graphs", **kw) == spec(target, draft, [1, 2, 3], **kw)
    plain = alone(target, [1, 2, 3], sampling=cfg, seed=4, max_new_tokens=30)
    assert alone(target, [1, 2, 3], sampling=cfg, seed=4, max_new_tokens=30, compile="graphs") == plain
    if cfg.greedy:
        assert spec(target, draft, [1, 2, 3], compile="graphs", **kw) == plain


@pytest.mark.parametrize("method", ["model", "hybrid", "ngram"])
def test_every_drafter_decodes_through_the_buffers_like_the_static_cache(method):
    target = tiny_model(11, eos_token_id=3)
    draft = noisy_copy(target, 4, 0.5)
    kw = dict(k=3, sampling=SamplingConfig(0.9), seed=5, max_new_tokens=24, drafter=method)
    rounds, report = run_to_end(speculative_generate(target, draft, [1, 2, 1, 2], compile="graphs", **kw))
    assert emitted(rounds) == spec(target, draft, [1, 2, 1, 2], static_cache=True, **kw)
    assert report.warmup_seconds >= 0       # warm-up (capture on a GPU) is timed apart from the decoding


def test_a_trimmed_draft_head_reads_hidden_states_through_the_buffers():
    target = tiny_model(11)
    draft = noisy_copy(target, 4, 0.5)
    subset = torch.arange(0, 12)
    options = dict(static=True, max_len=40, compiled=True, backend="buffers")
    replayed = ModelDrafter(draft, 16, cache_options=options, vocab_subset=subset)
    plain = ModelDrafter(draft, 16, vocab_subset=subset)
    tokens = torch.tensor([[1, 2, 3, 4]])
    for drafter in (replayed, plain):
        drafter.begin(tokens)
    gen_a, gen_b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    a = replayed.propose(tokens, 4, SamplingConfig(1.0), gen_a)
    b = plain.propose(tokens, 4, SamplingConfig(1.0), gen_b)
    assert torch.equal(a.ids, b.ids) and torch.allclose(a.q, b.q, atol=1e-5)
    assert any(key[1] == 1 for key in runtime_of(draft).graphs[True].forwards)


# ------------------------------------------------------------ bookkeeping
def test_one_entry_per_shape_its_buffers_overwritten_and_its_output_copied_out():
    model = tiny_model(21)
    cache = prefill(model, torch.tensor([[1, 2, 3]]), static=True, max_len=32, compiled=True, backend="buffers")
    assert cache.length == 2                                       # the last prompt token is the first step's
    first = forward_logits(model, torch.tensor([3]), cache, 1)
    second = forward_logits(model, torch.tensor([5]), cache, 1)
    held = runtime_of(model).graphs[False]
    assert list(held.forwards) == [((1, 1), 1)]                    # one entry served both calls
    entry = held.forwards[((1, 1), 1)]
    assert entry.ids.tolist() == [[5]] and entry.positions.tolist() == [3]
    assert not torch.equal(first, second)                          # the first result was not overwritten
    fresh = model(input_ids=torch.tensor([[1, 2, 3, 5]])).logits[0, -1:]
    assert torch.allclose(second, fresh, atol=1e-4)
    cache.crop(-2)                                                 # a rollback: only the positions move
    again = forward_logits(model, torch.tensor([3, 5]), cache, 2)
    assert entry.positions.tolist() == [3] and held.forwards[((1, 2), 2)].positions.tolist() == [2, 3]
    assert torch.allclose(again[-1], fresh[0], atol=1e-4)
    graphs.forget(model)


def test_a_failed_capture_decodes_eagerly_and_says_why():
    """capture=True on a CPU: the capture fails, the call still returns the eager logits, the failure is kept."""
    model = tiny_model(21)
    cache = prefill(model, torch.tensor([[1, 2, 3]]), static=True, max_len=32)
    held = graphs.graph_set(model, cache.cache, hidden=False, capture=True)
    out = held.forward(torch.tensor([[3]]), 2, 1)
    fresh = model(input_ids=torch.tensor([[1, 2, 3]])).logits[:, -1:]
    assert torch.allclose(out, fresh, atol=1e-4)
    assert held.failure and graphs.failure_of(model) == held.failure
    assert held.forwards[((1, 1), 1)].graph is None
    assert int(cache.cache.layers[0].cumulative_length) == 3       # the failed capture left the length as it was
    graphs.forget(model)
    assert graphs.failure_of(model) is None


def test_a_new_cache_drops_the_graphs_of_the_old_one():
    model = tiny_model(21)
    a = KVCache(model, static=True, max_len=16)
    b = KVCache(model, static=True, max_len=16)
    first = graphs.graph_set(model, a.cache, hidden=False, capture=False)
    assert graphs.graph_set(model, a.cache, hidden=False, capture=False) is first
    assert graphs.graph_set(model, b.cache, hidden=False, capture=False) is not first
    graphs.forget(model)


def test_the_decoder_reports_a_capture_failure(monkeypatch):
    monkeypatch.setattr(decoding, "resolve_forwards", lambda *a, **kw: Forwards(True, True, "graphs"))
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    rounds, report = run_to_end(speculative_generate(target, draft, [1, 2, 3], k=3, sampling=GREEDY,
                                                     max_new_tokens=12))
    assert emitted(rounds) == alone(target, [1, 2, 3], sampling=GREEDY, max_new_tokens=12)
    assert report.graphs_fallback
    for model in (target, draft):
        graphs.forget(model)
        runtime_of(model).static_cache = None
