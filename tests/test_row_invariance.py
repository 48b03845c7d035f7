"""A verify row is computed exactly as one-token decoding computes it.

The harness (specviz.runtime.invariance) compares every module's input and output, row by row, between
a multi-row forward and one-row forwards over the same cache. Models here have Qwen2.5's head
size (128) and grouped queries, with contexts long enough that plain SDPA over all rows at once
rounds differently (the broken variant the harness must catch).
"""
import copy
import warnings

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.models.quant import q4a8
from specviz.runtime import attention
from specviz.runtime.attention import ROWS, use_row_invariant_attention
from specviz.runtime.invariance import chain_report, identity_limit, tree_report
from specviz.engine.tree import TreeShape
from specviz.models.prepare import prepare_models
from specviz.models.quant.weights import convert_target_weights

# q4a8 (specviz's own kernels) where they build here; tests/test_models_quant_q4a8.py covers the fallback
KINDS = ["int4", "int8"] + (["q4a8"] if q4a8.unavailable() is None else [])

VOCAB = 512
QWEN = Qwen2Config(vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                   tie_word_embeddings=False)
LLAMA = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                    tie_word_embeddings=False)


def quantized(config, kind: str, dtype: torch.dtype, seed: int = 0):
    """A random model with its linear layers stored as `kind` (as the app stores a target), in `dtype`, prepared to
    decode as load_pair prepares its target."""
    torch.manual_seed(seed)
    cls = Qwen2ForCausalLM if isinstance(config, Qwen2Config) else LlamaForCausalLM
    model = cls(copy.deepcopy(config)).eval()
    convert_target_weights(model, kind, strict_grid=False)
    if dtype != torch.float32:
        model.to(dtype)
    return prepare_models(model)


def tokens(n: int, seed: int) -> list[int]:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def plain_sdpa(model):
    for config in {id(c): c for c in (model.config, model.config.get_text_config())}.values():
        config._attn_implementation = "sdpa"


@pytest.mark.parametrize("config", [QWEN, LLAMA], ids=["qwen2", "llama"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("context", [20, 300, 700])
def test_verify_rows_are_bit_identical_to_one_token_steps(config, kind, dtype, context):
    model = quantized(config, kind, dtype)
    assert use_row_invariant_attention(model)
    assert (attention.kernel() is not None) == (q4a8.unavailable() is None)   # the one-query kernel where it builds
    check_rows(model, context)


def check_rows(model, context):
    ctx = tokens(context, 1)
    for k in (1, 3, 7):
        report = chain_report(model, ctx, tokens(k, 2 + k))
        assert report.identical, report.line()
        assert report.compared > 20 * (k + 1)   # every module's input and output, every row
    shape = TreeShape.from_widths([2, 2, 1])
    report = tree_report(model, ctx, shape, tokens(shape.size, 9))
    assert report.identical, report.line()
    report = chain_report(model, ctx, tokens(5, 3), static=True)   # the static cache's masked one-row step too
    assert report.identical, report.line()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_one_sdpa_call_per_row_is_bit_identical_too(dtype, monkeypatch):
    """Where specviz's extension does not build, each row is PyTorch's SDPA over its keys: the same promise."""
    monkeypatch.setattr(attention, "kernel", lambda: None)
    model = quantized(QWEN, "int4", dtype)
    assert use_row_invariant_attention(model)
    check_rows(model, 300)


@pytest.mark.parametrize("dtype, context", [(torch.float32, 700), (torch.bfloat16, 300)], ids=["fp32", "bf16"])
def test_attention_over_all_rows_at_once_fails_the_harness(dtype, context):
    """The broken variant: plain SDPA over the K+1 queries at once. The harness names the attention."""
    model = quantized(QWEN, "int4", dtype)
    plain_sdpa(model)
    ctx = tokens(context, 1)
    reports = [chain_report(model, ctx, tokens(5, 3)),
               tree_report(model, ctx, TreeShape.from_widths([2, 2, 1]), tokens(10, 9))]
    broken = [r for r in reports if not r.identical]
    assert broken, [r.line() for r in reports]
    first = broken[0].first
    assert first.module.endswith("self_attn.o_proj (input)"), broken[0].line()   # the function before o_proj
    assert "the function before" in broken[0].line() and first.max_abs_diff > 0


class RowCountLinear(torch.nn.Linear):
    """A product whose rounding depends on how many rows it is given: what a dense GEMM may do."""

    row_invariant = True   # it claims to be: the harness must not believe it

    def forward(self, x):
        y = super().forward(x)
        rows = x.reshape(-1, x.shape[-1]).shape[0]
        return y + (rows > 1) * 1e-6 * y.sign()


def test_the_harness_catches_any_module_whose_rows_depend_on_the_row_count():
    model = quantized(QWEN, "int8", torch.float32)
    use_row_invariant_attention(model)
    mlp = model.model.layers[1].mlp
    broken = RowCountLinear(mlp.up_proj.in_features, mlp.up_proj.out_features)
    mlp.up_proj = broken
    report = chain_report(model, tokens(30, 1), tokens(3, 2))
    assert not report.identical
    assert report.first.module == "model.layers.1.mlp.up_proj" and report.first.kind == "RowCountLinear"


def test_identity_limit_names_what_is_not_row_invariant():
    assert identity_limit(quantized(QWEN, "int4", torch.bfloat16)) is None
    assert identity_limit(quantized(QWEN, "int8", torch.float32)) is None
    assert identity_limit(quantized(QWEN, "int4", torch.float32), compiled=True) == "compiled"
    torch.manual_seed(0)
    dense = Qwen2ForCausalLM(copy.deepcopy(QWEN)).eval()
    assert identity_limit(prepare_models(dense)) == "dense"   # fp32 nn.Linear (oneDNN/MKL)
    unprepared = quantized(QWEN, "int4", torch.bfloat16)
    plain_sdpa(unprepared)   # as built outside load_pair: the decoder no longer gives it the row-by-row attention
    assert identity_limit(unprepared) == "attention"
    eager = quantized(QWEN, "int4", torch.float32)
    eager.config._attn_implementation = "eager"
    assert identity_limit(eager) == "attention"


def test_preparation_gives_the_row_invariant_attention_and_the_decoder_changes_nothing():
    """load_pair's preparation gives the models the row-invariant attention; the decoder reads them as given."""
    target, draft = quantized(QWEN, "int4", torch.bfloat16), quantized(QWEN, "int4", torch.bfloat16, seed=1)
    assert target.config._attn_implementation == draft.config._attn_implementation == ROWS
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a prepared target runs without a word
        list(speculative_generate(target, draft, tokens(10, 1), k=2, sampling=SamplingConfig(temperature=0),
                                  max_new_tokens=4, record=False))
    plain_sdpa(target)
    with pytest.warns(RuntimeWarning, match="not prepared.*prepare_models"):
        list(speculative_generate(target, draft, tokens(10, 1), k=2, sampling=SamplingConfig(temperature=0),
                                  max_new_tokens=4, record=False))
    assert target.config._attn_implementation == "sdpa"
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # said once per model, not once per run
        list(speculative_generate(target, draft, tokens(10, 1), k=2, max_new_tokens=2, record=False))


def greedy_outputs(target, draft, prompt, **options):
    greedy = SamplingConfig(temperature=0)
    spec = [t for r in speculative_generate(target, draft, prompt, sampling=greedy, max_new_tokens=24, record=False,
                                            ignore_eos=True, **options) for t in r.emitted]
    plain = [s.token_id for s in autoregressive_generate(target, prompt, sampling=greedy, max_new_tokens=24,
                                                         ignore_eos=True)]
    return spec, plain


@pytest.mark.parametrize("options", [{"k": 3}, {"k": 7}, {"tree": "2x2x1"}, {"tree": "dynamic:6"}],
                         ids=["chain3", "chain7", "tree", "dynamic"])
def test_greedy_output_is_the_target_alone_over_many_prompts_in_bf16(options):
    """bf16 activations, 4-bit weights (the app's CPU default), long prompts: token for token on every prompt."""
    target = quantized(QWEN, "int4", torch.bfloat16)
    draft = quantized(QWEN, "int4", torch.bfloat16, seed=1)
    for seed in range(12):
        spec, plain = greedy_outputs(target, draft, tokens(260 + 7 * seed, 100 + seed), **options)
        assert spec == plain, f"prompt {seed}: first difference at {next(i for i, (a, b) in enumerate(zip(spec, plain)) if a != b)}"
