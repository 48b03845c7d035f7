"""The target at other precisions (bf16, int8, 4-bit): the products, the Q4_K grid, the choice, and losslessness.

Speculative decoding on a quantized target must give exactly that quantized
target's distribution: the decoder and the target-alone baseline run the same
object. The tests check that on each precision, and that a decoder that mixes
two precisions (verifying with one, comparing with another) is caught.
"""
import copy

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.models.quant import q4a8, weights
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.models.prepare import prepare_models
from tiny import noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")
# q4a8 where its kernels build here (tests/test_models_quant_q4a8.py covers the fallback where they do not)
HAS_Q4A8 = q4a8.unavailable() is None
KINDS = ("bf16", "int8", "int4") + (("q4a8",) if HAS_Q4A8 else ())


def quantized(model, kind):
    """A copy of `model` with its weights stored as `kind`, prepared to decode as load_pair prepares a target."""
    out = copy.deepcopy(model)
    weights.convert_target_weights(out, kind, strict_grid=False)
    return prepare_models(out)


def q4k_parts(out: int, inp: int, seed: int = 0, drop_ends: float = 0.3):
    """Weights as a dequantized Q4_K tensor holds them: w = d*sc*q - dmin*m per group of 32, q in 0..15.

    Returns (w [out, inp], step, minimum [out, inp/32]): the grid each group was really built on.
    A share of the groups never uses code 0 or 15, so (max - min) / 15 is not their step.
    """
    g = torch.Generator().manual_seed(seed)
    groups = inp // 32
    step = (torch.randint(1, 64, (out, groups), generator=g).float() * 1e-3)
    minimum = torch.randint(0, 64, (out, groups), generator=g).float() * 2e-3
    q = torch.randint(0, 16, (out, groups, 32), generator=g)
    narrow = torch.rand(out, groups, generator=g) < drop_ends
    q = torch.where(narrow[..., None], q.clamp(2, 12), q)
    return (q.float() * step[..., None] - minimum[..., None]).reshape(out, inp), step, minimum


def q4k_like(out: int, inp: int, seed: int = 0, drop_ends: float = 0.3) -> torch.Tensor:
    return q4k_parts(out, inp, seed, drop_ends)[0]


def test_a_q4k_tensor_is_reproduced_exactly_on_the_4bit_grid():
    w = q4k_like(64, 256)
    grid = weights.int4_grid(w)
    assert weights.grid_error(w, grid) < 1e-4
    assert grid[0].min() >= 0 and grid[0].max() <= 15
    # a 6-bit tensor is not on any 4-bit grid: it keeps its bits as int8
    six_bit = torch.randint(-32, 32, (64, 256)).float() * 1e-3
    assert weights.grid_error(six_bit, weights.int4_grid(six_bit)) > 0.1
    layer = torch.nn.Linear(256, 64, bias=False)
    with torch.no_grad():
        layer.weight.copy_(w)
    assert weights.on_int4_grid(layer)
    model = torch.nn.Sequential(layer, torch.nn.Linear(256, 64, bias=False))
    assert weights.convert_target_weights(model, "int4") == {"int4": 1, "int8": 1}
    assert isinstance(model[0], weights.Int4WeightLinear) and weights.target_weights(model) == "int4"


# ------------------------------------------------------------ the stored 4-bit weights against the original ones
def bf16_half_ulp(x: torch.Tensor) -> torch.Tensor:
    """The most that rounding x to bf16 (8 significant bits) moves it: half a unit in its last place."""
    x = x.double()
    _, e = torch.frexp(x.abs())              # |x| = m * 2**e with 0.5 <= m < 1: an ulp is 2**(e - 8)
    return torch.where(x == 0, 0.0, torch.ldexp(torch.ones_like(x), e - 9))


def stored_error(layer: weights.Int4WeightLinear, original: torch.Tensor, step: torch.Tensor,
                 lo: torch.Tensor, grid_share: float) -> torch.Tensor:
    """Per group [out, in/32]: the largest |stored - original| over what the storage may move a weight.

    `step` and `lo` are the group's grid worked out from the original weights (never from the layer),
    `grid_share` the share of a step that snapping to the grid may cost (1/2 for rounding to the nearest
    code; none, up to fp32 arithmetic, for weights already on the grid). The kernel keeps its scale and
    zero = lo + 8*step in bf16, so a stored weight (code - 8)*scale + zero moves by up to 8 half-ulps of
    the step and a half-ulp of the zero; `dense_weight()` reads it back through a bf16 product, one more
    rounding (bounded at twice the weight's size, the largest it can be before that rounding).
    The stored weights are read through the kernel (its packed layout is the ISA's), but the expected
    values come from the original tensor only. A result <= 1 everywhere: every weight within bounds.
    """
    out, inp = original.shape
    w = original.double().reshape(out, inp // weights.GROUP, weights.GROUP)
    stored = layer.dense_weight().double().reshape(w.shape)
    step, lo = step.double(), lo.double()
    zero = lo + 8 * step
    size = torch.maximum(w.abs(), stored.abs()).amax(-1)
    allowed = (grid_share * step + 8 * bf16_half_ulp(step) + bf16_half_ulp(zero) + bf16_half_ulp(2 * size)
               + 1e-6 * step)    # fp32 arithmetic on the way (the scale's division, the product's sums)
    return (stored - w).abs().amax(-1) / allowed


def linear_with(w: torch.Tensor) -> torch.nn.Linear:
    layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    with torch.no_grad():
        layer.weight.copy_(w)
    return layer


def test_a_q4k_tensor_is_stored_as_its_own_weights_up_to_bf16_scales():
    """The kernel multiplies by the Q4_K tensor's own weights: only its bf16 scale and zero move them."""
    w, step, minimum = q4k_parts(64, 256)
    layer = weights.Int4WeightLinear(linear_with(w))
    ratio = stored_error(layer, w, step, -minimum, grid_share=1e-3)
    assert ratio.max() <= 1, f"group {divmod(int(ratio.argmax()), ratio.shape[1])} off by {ratio.max():.2f}x the bound"
    assert (layer.dense_weight() - w).abs().max() > 0    # the bound has work to do: bf16 scales do move weights


def test_requantized_weights_are_stored_within_half_a_step_of_the_original():
    """Weights on no 4-bit grid (a requantized layer): each within half its group's step, plus bf16's share."""
    w = torch.randn(48, 128, generator=torch.Generator().manual_seed(3))
    groups = w.reshape(48, 4, weights.GROUP)
    lo, hi = groups.amin(-1), groups.amax(-1)
    layer = weights.Int4WeightLinear(linear_with(w), exact=False)
    ratio = stored_error(layer, w, (hi - lo) / 15, lo, grid_share=0.5)
    assert ratio.max() <= 1, f"group {divmod(int(ratio.argmax()), ratio.shape[1])} off by {ratio.max():.2f}x the bound"
    # Not vacuous: the weights are off the grid, so the half step is really spent.
    assert stored_error(layer, w, (hi - lo) / 15, lo, grid_share=0.0).max() > 1


def off_by_one_code(w: torch.Tensor, group: tuple[int, int]) -> weights.Int4WeightLinear:
    """A broken conversion: one group's codes one step too high (a rounding slip in one block)."""
    codes, scale, lo = weights.int4_grid(w)
    row, g = group
    block = codes[row, g * weights.GROUP:(g + 1) * weights.GROUP]
    block.copy_(torch.where(block < 15, block + 1, block - 1))
    return weights.Int4WeightLinear(linear_with(w), grid=(codes, scale, lo))


def untransposed_scales(w: torch.Tensor) -> weights.Int4WeightLinear:
    """A broken conversion: scales and zeros laid out [out, in/32] where the kernel reads [in/32, out]."""
    layer = weights.Int4WeightLinear(linear_with(w))
    sz = layer.scales_and_zeros                                  # [in/32, out, 2]
    layer.scales_and_zeros = sz.transpose(0, 1).contiguous().reshape(sz.shape)
    return layer


@pytest.mark.parametrize("broken", ["codes", "scales"])
def test_the_stored_weights_check_catches_a_broken_conversion(broken):
    w, step, minimum = q4k_parts(64, 256)
    group = divmod(int(step.argmax()), step.shape[1])   # the widest step: bf16's share is smallest there
    layer = off_by_one_code(w, group) if broken == "codes" else untransposed_scales(w)
    ratio = stored_error(layer, w, step, -minimum, grid_share=1e-3)
    assert ratio.max() > 1
    if broken == "codes":
        assert ratio[group] > 1 and (ratio > 1).sum() == 1, "exactly the broken group must fail"
    # The check this one adds to: the product agrees with dense_weight() for the broken layer too,
    # since both go through the same kernel (the gap this test closes).
    x = torch.randn(3, 256)
    with torch.inference_mode():
        torch.testing.assert_close(layer(x), torch.nn.functional.linear(x.bfloat16().float(), layer.dense_weight()),
                                   rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 64), (1, 7, 64), (5, 64)])
def test_int4_and_bf16_layers_compute_the_product_with_their_weights(bias, shape):
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 48, bias=bias)
    x = torch.randn(*shape)
    for fast in (weights.Int4WeightLinear(lin), weights.Bf16WeightLinear(lin)):
        with torch.inference_mode():
            out = fast(x)
            want = torch.nn.functional.linear(x.bfloat16().float(), fast.dense_weight(), lin.bias)
        assert out.shape == lin(x).shape and out.dtype == x.dtype
        torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)
        assert (out - lin(x)).abs().max() > 0   # really another product


def test_target_weights_are_resolved_by_device_and_dtype(monkeypatch):
    monkeypatch.delenv(weights.TARGET_ENV_VAR, raising=False)
    assert weights.resolve_target_weights("auto", "cpu", torch.float32) == "auto"   # measured at load
    assert weights.resolve_target_weights("auto", "cuda", torch.bfloat16) == "as-loaded"
    assert weights.resolve_target_weights("bf16", "cpu", torch.bfloat16) == "as-loaded"
    assert weights.resolve_target_weights("int4", "cpu", torch.bfloat16) == "int4"
    with pytest.raises(ValueError, match="CPU"):
        weights.resolve_target_weights("int8", "cuda", torch.bfloat16)
    with pytest.raises(ValueError, match="one of"):
        weights.resolve_target_weights("fp8", "cpu", torch.float32)
    monkeypatch.setenv(weights.TARGET_ENV_VAR, "int8")
    assert weights.resolve_target_weights("auto", "cpu", torch.float32) == "int8"
    assert weights.candidate_weights("cpu", torch.float32) == ["as-loaded", "bf16", "int8", "int4"] + (
        ["q4a8"] if HAS_Q4A8 else [])
    with pytest.raises(ValueError, match="CPU"):
        weights.resolve_target_weights("q4a8", "cuda", torch.bfloat16)
    assert "bf16" not in weights.candidate_weights("cpu", torch.bfloat16)


def test_the_probe_times_every_candidate_on_the_largest_layer():
    kinds = ["as-loaded", "int8", "int4"] + (["q4a8"] if HAS_Q4A8 else [])
    probe = weights.probe_target_weights(tiny_model(3), kinds, repeats=2)
    assert set(probe["ms"]) == set(probe["ms_verify"]) == set(kinds) and probe["choice"] in probe["ms"]
    assert probe["layer"] == "32x64"


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_speculation_on_a_quantized_target_equals_that_target_alone(kind):
    target = tiny_model(11)
    small = quantized(target, kind)
    with torch.inference_mode():   # a different function, not the fp32 target in disguise
        x = torch.tensor([[1, 2, 3]])
        assert (small(x).logits - target(x).logits).abs().max() > 1e-3
    draft = noisy_copy(target, 3, 0.4)
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(small, draft, [1, 2, 3], k=4, sampling=greedy, max_new_tokens=40))
    alone = [s.token_id for s in autoregressive_generate(small, [1, 2, 3], sampling=greedy, max_new_tokens=40)]
    assert [t for r in rounds for t in r.emitted] == alone
    assert any(r.rejected_at is not None for r in rounds)


@pytest.mark.statistical
@pytest.mark.parametrize("kind, temperature, top_k, top_p", [("int4", 1.0, 0, 1.0), ("int4", 0.7, 5, 0.9),
                                                              ("int8", 0.7, 0, 1.0), ("bf16", 1.0, 0, 0.9)]
                         + ([("q4a8", 1.0, 0, 1.0), ("q4a8", 0.7, 5, 0.9)] if HAS_Q4A8 else []))
def test_sampling_on_a_quantized_target_keeps_its_distribution(kind, temperature, top_k, top_p):
    target = quantized(tiny_model(51, vocab=8, scale=0.6), kind)
    draft = quantized(noisy_copy(tiny_model(51, vocab=8, scale=0.6), 7, 0.8), "int8")
    cfg = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p)
    counts = sample_prefixes(target, draft, [1, 2], 2, 20_000, decode_options(k=3, sampling=cfg))
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
def test_a_decoder_that_verifies_with_another_precision_is_caught():
    """The bug this design rules out: speculation on a 4-bit target, measured against the fp32 target."""
    full = tiny_model(51, vocab=8, scale=1.5)
    small = quantized(full, "int4")
    draft = noisy_copy(full, 7, 0.8)
    cfg = SamplingConfig(temperature=1.0)
    counts = sample_prefixes(small, draft, [1, 2], 2, 20_000, decode_options(k=3, sampling=cfg))
    _, p_value = chi_square_fit(counts, exact_prefixes(full, [1, 2], 2, cfg))
    assert p_value < 1e-6, f"mixing precisions went unnoticed (p = {p_value:.2e})"


@pytest.mark.real_model
@pytest.mark.parametrize("kind", KINDS)
def test_greedy_identity_on_the_packaged_pair_at_each_target_precision(kind, all_threads):
    from specviz.models.loading import WeightOptions, load_pair

    pair = load_pair(weights=WeightOptions(target_weights=kind, draft_weights="int8", linear="default"))
    if kind == "int4":   # the GGUF's Q4_K tensors on their own grid, its 6-bit ones as int8
        assert pair.target_weights == "int4" and pair.target_layers["int4"] > 100 and pair.target_layers["int8"] > 0
    if kind == "q4a8":   # the same split through specviz's kernels, the Q4_K and Q6_K layers with their own scales
        assert pair.target_weights == "q4a8" and pair.target_layers["q4k"] > 100 and pair.target_layers["q6k"] > 0
        assert pair.read_ahead["choice"] in (1, 2) and pair.read_ahead["layers"] == 197   # timed on its products
    ids = pair.encode_chat("Write a Python function that returns the n-th Fibonacci number.")
    greedy = SamplingConfig(temperature=0)
    # 16 tokens: several verify rounds at K = 4 (four precisions, one load each: CI's time; many prompts are in
    # tests/test_row_invariance.py and `python -m specviz agreement`)
    alone = [s.token_id for s in autoregressive_generate(pair.target, ids, sampling=greedy, max_new_tokens=16,
                                                         seed=0, ignore_eos=True)]
    spec = [t for r in speculative_generate(pair.target, pair.draft, ids, k=4, sampling=greedy, max_new_tokens=16,
                                            seed=0, ignore_eos=True, record=False, drafter="hybrid")
            for t in r.emitted]
    assert spec == alone
