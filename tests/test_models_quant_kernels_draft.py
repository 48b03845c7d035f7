"""Int8 draft weights: the product they compute, where they are chosen, and that the output stays the target's."""
import copy

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.models.quant import kernels
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.engine.sampling import probabilities
from tiny import noisy_copy, tiny_model

needs_int8 = pytest.mark.skipif(not hasattr(torch, "_weight_int8pack_mm"), reason="this torch has no int8 product")


def int8(model):
    return kernels.use_linear_path(copy.deepcopy(model), "int8")


@needs_int8
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(7,), (1, 1), (1, 5), (3, 4)])
def test_int8_linear_is_the_product_with_the_rounded_weights(bias, shape):
    torch.manual_seed(0)
    lin = torch.nn.Linear(48, 80, bias=bias)
    x = torch.randn(*shape, 48)
    fast = kernels.Int8WeightLinear(lin)
    w = lin.weight.detach()
    step = fast.scales.float()[:, None]
    # Each weight is within half a step of its row's int8 grid, the dense view is that grid,
    # and the grid spans the row (the largest weight uses nearly all 127 steps).
    assert (fast.dense_weight() - w).abs().le(step / 2 + 1e-7).all()
    assert (fast.int8_weight.abs().amax(1) >= 125).all()
    assert fast.int8_weight.dtype == torch.int8 and fast.int8_weight.abs().max() <= 127
    with torch.inference_mode():
        out = fast(x)
        want = torch.nn.functional.linear(x.bfloat16().float(), fast.dense_weight(), lin.bias)
    assert out.shape == lin(x).shape and out.dtype == x.dtype
    torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)   # bf16 output rounding
    assert (out - lin(x)).abs().max() > 0   # a different product: it is not the fp32 layer in disguise


@needs_int8
def test_every_linear_layer_of_a_draft_becomes_int8():
    model = int8(tiny_model(3))
    assert kernels.linear_path(model) == "int8"
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    assert isinstance(model.get_output_embeddings(), kernels.Int8WeightLinear)
    assert kernels.output_weight(model).shape == (16, 32)


def test_draft_weights_are_chosen_by_device_and_dtype(monkeypatch):
    monkeypatch.delenv(kernels.DRAFT_ENV_VAR, raising=False)
    want = "int8" if hasattr(torch, "_weight_int8pack_mm") else "as-loaded"
    if want == "int8" and hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu"):
        want = "int4"   # faster still where PyTorch has the 4-bit CPU kernel
    assert kernels.resolve_draft_weights("auto", "cpu", torch.float32) == want
    assert kernels.resolve_draft_weights("auto", "cpu", torch.bfloat16) == want   # bf16 pairs too (measured)
    assert kernels.resolve_draft_weights("auto", "cuda", torch.float32) == "as-loaded"
    assert kernels.resolve_draft_weights("as-loaded", "cpu", torch.float32) == "as-loaded"
    monkeypatch.setenv(kernels.DRAFT_ENV_VAR, "as-loaded")
    assert kernels.resolve_draft_weights("auto", "cpu", torch.float32) == "as-loaded"
    monkeypatch.setenv(kernels.DRAFT_ENV_VAR, "int2")
    with pytest.raises(ValueError, match=kernels.DRAFT_ENV_VAR):
        kernels.resolve_draft_weights("auto", "cpu", torch.float32)
    with pytest.raises(ValueError, match="fp32 or bf16 pair"):
        kernels.resolve_draft_weights("int8", "cpu", torch.float16)
    with pytest.raises(ValueError, match="one of"):
        kernels.resolve_draft_weights("fp8", "cpu", torch.float32)


@needs_int8
def test_greedy_output_with_an_int8_draft_equals_the_target_alone():
    target = tiny_model(11)
    draft = int8(noisy_copy(target, 3, 0.4))
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(target, draft, [1, 2, 3], k=4, sampling=greedy, max_new_tokens=40))
    spec = [t for r in rounds for t in r.emitted]
    alone = [s.token_id for s in autoregressive_generate(target, [1, 2, 3], sampling=greedy, max_new_tokens=40)]
    assert spec == alone
    assert any(r.rejected_at is not None for r in rounds) and any(r.bonus is not None for r in rounds)


@needs_int8
@pytest.mark.statistical
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampling_with_an_int8_draft_keeps_the_target_distribution(temperature):
    target = tiny_model(51, vocab=8, scale=0.6)
    draft = noisy_copy(target, 7, 0.8)
    small = int8(draft)
    cfg = SamplingConfig(temperature=temperature)
    with torch.inference_mode():   # the int8 draft is a different q, not the fp32 one rounded away
        q_fp32 = probabilities(draft(torch.tensor([[1, 2, 3]])).logits, cfg)
        q_int8 = probabilities(small(torch.tensor([[1, 2, 3]])).logits, cfg)
    assert (q_fp32 - q_int8).abs().max() > 1e-4
    counts = sample_prefixes(target, small, [1, 2], 2, 20_000, decode_options(k=3, sampling=cfg))
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"
