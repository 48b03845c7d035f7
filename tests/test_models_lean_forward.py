"""The lean layer stack (specviz.models.lean_forward) computes transformers' forward bit for bit, where it runs.

Random Qwen2 and Llama models with Qwen2.5's head size and grouped queries, their projections stored as q4a8 (the
only layers the stack takes); contexts long enough that a different reduction order would show.
"""
import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.limits import LEAN_MAX_ROWS
from specviz.models import lean_forward
from specviz.models.quant import q4a8
from specviz.models.quant.weights import convert_target_weights
from specviz.models.prepare import prepare_models
from specviz.runtime.decoding import (KVCache, forward_hidden, forward_logits, lean_available, prefill,
                                      transformers_forwards)
from specviz.engine.tree import TreeShape
from specviz.runtime.masked import forward_masked, verify_mask, verify_positions
from specviz.runtime.invariance import chain_report, tree_report
from specviz.runtime.state import runtime_of

pytestmark = pytest.mark.skipif(q4a8.unavailable() is not None, reason="the q4a8 kernels do not build here")

VOCAB = 512
SHAPE = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=2048, tie_word_embeddings=False)
FAMILIES = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "llama": (LlamaConfig, LlamaForCausalLM)}


def model_of(family: str, dtype: torch.dtype, kind: str = "q4a8", seed: int = 0):
    config_cls, model_cls = FAMILIES[family]
    torch.manual_seed(seed)
    model = model_cls(config_cls(**copy.deepcopy(SHAPE))).eval()
    convert_target_weights(model, kind, strict_grid=False)
    model.to(dtype)
    return prepare_models(model)   # as load_pair ends: the row-invariant attention, the lean stack built


def tokens(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("context", [20, 300])
@pytest.mark.parametrize("loop", ["c++", "python"])
@torch.inference_mode()
def test_its_logits_and_hidden_states_are_transformers_bit_for_bit(family, dtype, context, loop):
    """Both loops over the layers: the extension's (csrc/lean_stack.cpp, where it runs) and the Python one."""
    model = model_of(family, dtype)
    assert lean_available(model)
    lean = lean_forward.lean_for(model)
    assert lean.stack is not None
    if loop == "python":
        lean.stack = None
    ctx = tokens(context, 1)
    for n in (1, 2, 5, LEAN_MAX_ROWS):
        new = tokens(n, 2 + n)
        lean_cache, plain_cache = prefill(model, ctx[None]), prefill(model, ctx[None])
        got = forward_logits(model, new, lean_cache, n)
        with transformers_forwards():
            want = forward_logits(model, new, plain_cache, n)
        assert got.dtype == want.dtype and torch.equal(got, want), (family, dtype, context, n)
        assert lean_cache.length == plain_cache.length == context - 1 + n
        lean_cache.crop(-n)
        plain_cache.crop(-n)
        hidden = forward_hidden(model, new, lean_cache, 2)
        with transformers_forwards():
            assert torch.equal(hidden, forward_hidden(model, new, plain_cache, 2))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_its_rotary_and_norm_round_as_atens_ops_do(dtype):
    """The one-call rotary and norm against the ATen ops transformers spells, on values wide enough that a
    product rounded twice, or a sum rounded once instead of each product, would show."""
    gen = torch.Generator().manual_seed(3)
    for n in (1, 5, 16):
        qkv = (torch.randn(n, 7 * 64, generator=gen) * 30).to(dtype)   # a joined product's output: q a strided view
        q = qkv[:, :6 * 64].view(n, 6, 64)
        cos, sin = (torch.randn(n, 1, 64, generator=gen).to(dtype) for _ in range(2))
        want = q * cos + _rotate_half(q) * sin
        assert torch.equal(lean_forward._rotary(q, cos, sin), want)
        x = (torch.randn(n, 896, generator=gen) * torch.logspace(-3, 3, 896)).to(dtype)
        weight = torch.randn(896, generator=gen).to(dtype)
        h = x.to(torch.float32)
        want = weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dtype)
        assert torch.equal(lean_forward._rms(x, weight, 1e-6), want)
    fused = q * cos + _rotate_half(q) * sin
    twice = (q.float() * cos.float() + _rotate_half(q).float() * sin.float()).to(dtype)   # one rounding, not three
    assert dtype == torch.float32 or not torch.equal(fused, twice)   # the check above can tell them apart


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("joined", [True, False])
def test_its_attention_inputs_are_the_split_rotary_and_cat_it_replaces(dtype, joined):
    """The C++ loop's one call per layer for q, k and v: q rotated and widened to fp32, the cache's keys (rotated) and
    values grown by the new rows, against the ATen ops (split, rotary, cat); two kv heads and a cropped cache (a view
    whose heads are not adjacent), as the packaged pair's after a rejection."""
    gen = torch.Generator().manual_seed(4)
    heads, kv_heads, d = 6, 2, 64
    widths = [heads * d, kv_heads * d, kv_heads * d]
    for n in (1, 5, 16):
        qkv = (torch.randn(n, sum(widths), generator=gen) * 30).to(dtype)
        q, k, v = qkv.split(widths, dim=-1)
        srcs, cols = ([qkv] * 3, [0, widths[0], widths[0] + widths[1]]) if joined else (
            [q.contiguous(), k.contiguous(), v.contiguous()], [0, 0, 0])
        cos, sin = (torch.randn(n, 1, d, generator=gen).to(dtype) for _ in range(2))
        keys, values = (torch.randn(1, kv_heads, 40, d, generator=gen).to(dtype)[:, :, :33] for _ in range(2))
        got_q, got_k, got_v = q4a8.extension().attention_inputs(srcs, cols, heads, cos, sin, keys, values)
        q, k, v = (t.view(n, -1, d) for t in (q, k, v))
        want_q = (q * cos + _rotate_half(q) * sin).to(torch.float32)
        want_k = torch.cat([keys, (k * cos + _rotate_half(k) * sin).transpose(0, 1)[None]], dim=-2)
        want_v = torch.cat([values, v.transpose(0, 1)[None]], dim=-2)
        for got, want in ((got_q, want_q), (got_k, want_k), (got_v, want_v)):
            assert got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want), (n, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_cache_grows_in_its_own_buffer_and_never_writes_into_anyone_elses(dtype):
    """Steps after the first write their rows into the buffer the first made (no copy of the old positions); after a
    crop the next rows go where the cropped ones were; a cache tensor the extension did not make is never written
    into, even where its storage runs on past it (a cropped prefill's cat, another tensor's view)."""
    gen = torch.Generator().manual_seed(5)
    heads, kv_heads, d = 4, 2, 64
    big = torch.randn(1, kv_heads, 40, d, generator=gen).to(dtype)
    before = big.clone()
    keys = values = big[:, :, :30]            # storage past the view: not the extension's, so never grown in place
    want_k, want_v = keys.clone(), values.clone()
    ext, storages = q4a8.extension(), []
    for step, n in enumerate((1, 3, 1, 8, 2, 1)):
        qkv = (torch.randn(n, (heads + 2 * kv_heads) * d, generator=gen) * 30).to(dtype)
        cos, sin = (torch.randn(n, 1, d, generator=gen).to(dtype) for _ in range(2))
        q, keys, values = ext.attention_inputs([qkv] * 3, [0, heads * d, (heads + kv_heads) * d], heads, cos, sin,
                                               keys, values)
        k, v = (t.view(n, kv_heads, d) for t in qkv[:, heads * d:].split(kv_heads * d, dim=-1))
        want_k = torch.cat([want_k, (k * cos + _rotate_half(k) * sin).transpose(0, 1)[None]], dim=-2)
        want_v = torch.cat([want_v, v.transpose(0, 1)[None]], dim=-2)
        assert torch.equal(keys, want_k) and torch.equal(values, want_v), step
        storages.append(keys.untyped_storage().data_ptr())
        if step == 3:   # a rejection: the cache cropped back, the next rows overwrite the dropped ones
            keys, values, want_k, want_v = keys[:, :, :-5], values[:, :, :-5], want_k[:, :, :-5], want_v[:, :, :-5]
    assert torch.equal(big, before)
    assert storages[0] != big.untyped_storage().data_ptr() and len(set(storages)) < len(storages)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_harness_checks_its_rows_and_catches_a_stack_that_differs(family, monkeypatch):
    model = model_of(family, torch.bfloat16)
    ctx, drafts = tokens(300, 1).tolist(), tokens(5, 7).tolist()
    report = chain_report(model, ctx, drafts)
    assert report.identical, report.line()
    monkeypatch.setattr(lean_forward, "_rms", lambda x, w, eps: w * (x.float() * torch.rsqrt(
        x.float().pow(2).mean(-1, keepdim=True) + 2 * eps)).to(x.dtype))   # an epsilon twice too large
    report = chain_report(model, ctx, drafts)
    assert not report.identical and set(report.diverged) == {"lean verify", "lean step"}, report.diverged
    shape = TreeShape.from_widths([2, 2, 1])
    report = tree_report(model, ctx, shape, tokens(shape.size, 9).tolist())
    assert not report.identical and report.diverged == ["lean tree verify"], report.diverged


@pytest.mark.parametrize("family", list(FAMILIES))
@torch.inference_mode()
def test_a_tree_verify_on_it_is_transformers_masked_forward_bit_for_bit(family):
    model = model_of(family, torch.bfloat16)
    shape, ctx = TreeShape.from_widths([3, 2, 1]), tokens(200, 1)
    ids = torch.cat([ctx[-1:], tokens(shape.size, 5)])[None]
    outs = []
    for plain in (False, True):
        cache = prefill(model, ctx[None])
        seen = cache.length
        positions, allowed = verify_positions(shape.depths, seen, 1), verify_mask(shape.ancestry, seen, 1)
        if plain:
            with transformers_forwards():
                outs.append(forward_masked(model, ids, cache, positions, allowed, shape.size + 1))
        else:
            outs.append(forward_masked(model, ids, cache, positions, allowed, shape.size + 1))
        assert cache.length == seen + shape.size + 1
    assert torch.equal(*outs)


@torch.inference_mode()
def test_greedy_speculative_output_is_the_target_alone_on_the_stack():
    target, draft = model_of("qwen2", torch.bfloat16, seed=0), model_of("qwen2", torch.bfloat16, seed=1)
    greedy = SamplingConfig(temperature=0.0)
    for seed in range(4):
        prompt = tokens(40 + 30 * seed, 100 + seed).tolist()
        alone = [s.token_id for s in autoregressive_generate(target, prompt, sampling=greedy, max_new_tokens=24)]
        rounds = speculative_generate(target, draft, prompt, k=4, sampling=greedy, max_new_tokens=24)
        assert [t for r in rounds for t in r.emitted][:24] == alone


@torch.inference_mode()
def test_the_extension_loop_grows_the_cache_as_dynamic_layers_do():
    """The C++ loop hands back each layer's keys and values with the new positions appended: the same tensors the
    Python loop's DynamicCache.update makes, so a later step (either loop) reads the same cache."""
    model = model_of("qwen2", torch.bfloat16)
    lean = lean_forward.lean_for(model)
    stack, caches = lean.stack, []
    for use in (stack, None):
        lean.stack = use
        cache = prefill(model, tokens(50, 1)[None])
        forward_logits(model, tokens(3, 2), cache, 1)
        caches.append(cache)
    lean.stack = stack
    for a, b in zip(caches[0].cache.layers, caches[1].cache.layers):
        assert a.keys.shape == b.keys.shape == (1, 1, 52, 128) and torch.equal(a.keys, b.keys)
        assert torch.equal(a.values, b.values)
    nxt = tokens(1, 3)
    assert torch.equal(forward_logits(model, nxt, caches[0], 1), forward_logits(model, nxt, caches[1], 1))


def test_it_joins_projections_of_one_kind_without_a_second_copy():
    model = model_of("qwen2", torch.bfloat16)
    lean = lean_forward.lean_for(model)
    attn, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    assert len(lean.layers[0].qkv.parts) == 1 and len(lean.layers[0].gate_up.parts) == 1
    joined = lean.layers[0].qkv.parts[0][0]
    for m in (attn.q_proj, attn.k_proj, attn.v_proj):
        assert m.packed.untyped_storage().data_ptr() == joined.untyped_storage().data_ptr()
    gate_up = lean.layers[0].gate_up.parts[0][0]
    assert mlp.gate_proj.packed.untyped_storage().data_ptr() == gate_up.untyped_storage().data_ptr()


def test_it_stays_out_where_it_would_not_compute_what_transformers_computes(monkeypatch):
    assert not lean_available(model_of("qwen2", torch.bfloat16, kind="int8"))   # PyTorch's own layers
    model = model_of("qwen2", torch.bfloat16)
    stack, calls = runtime_of(model).lean, []

    class Counting:   # the prepared stack, counting the forwards that take it
        def serves(self, m):
            return stack.serves(m)

        def __call__(self, *args, **kwargs):
            calls.append(args)
            return stack(*args, **kwargs)

    runtime_of(model).lean = Counting()
    with torch.inference_mode():
        cache = prefill(model, tokens(30, 1)[None])   # the prefill: transformers' batched forward
        assert not calls
        forward_logits(model, tokens(LEAN_MAX_ROWS + 1, 2), cache, 1)   # more rows than a verify
        assert not calls
        forward_logits(model, tokens(3, 3), cache, 1)
        assert len(calls) == 1
        forward_logits(model, tokens(1, 4), KVCache(model, static=True, max_len=64), 1)   # a static cache
        assert len(calls) == 1


def test_a_model_whose_layers_were_replaced_gets_a_new_stack():
    model = model_of("qwen2", torch.float32)
    first = lean_forward.lean_for(model)
    assert lean_forward.lean_for(model) is first and lean_available(model)
    attn = model.model.layers[0].self_attn
    attn.q_proj = copy.deepcopy(attn.q_proj)        # as a conversion to another precision replaces every module
    assert not lean_available(model)                # the prepared stack no longer serves it: transformers' forward
    assert runtime_of(model).lean is first          # until it is prepared again, never by a forward
    second = lean_forward.lean_for(model)
    assert second is not None and second is not first
    model.to(torch.bfloat16)                         # its scales and biases converted: built again
    third = lean_forward.lean_for(model)
    assert third is not None and third is not second
    attn.q_proj = torch.nn.Linear(256, 256, bias=True)   # a layer the stack does not take: transformers' forward
    assert lean_forward.lean_for(model) is None and not lean_available(model)


@torch.inference_mode()
def test_decoding_an_unprepared_model_leaves_it_as_it_was():
    """The decoder builds nothing on the models it is given: a q4a8 model nobody prepared decodes through transformers'
    forward on its own attention, its layers' weights where they were, and decodes the same the second time."""
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**copy.deepcopy(SHAPE))).eval()
    convert_target_weights(model, "q4a8", strict_grid=False)
    before = model.model.layers[0].self_attn.q_proj.packed
    runs = [[s.token_id for s in autoregressive_generate(model, [1, 2, 3], max_new_tokens=6)] for _ in range(2)]
    assert runs[0] == runs[1]
    assert model.config._attn_implementation == "sdpa" and runtime_of(model).lean is None
    assert model.model.layers[0].self_attn.q_proj.packed is before and not lean_available(model)
