"""The q6k layout of specviz's q4a8 kernels: a GGUF's Q6_K tensors in their own form (6-bit codes, an int8
sub-scale per 16 inputs, an fp16 d per 256), found again exactly and multiplied row-invariantly.

The proofs: the layer's dense weight is gguf's own dequantization bit for bit; the kernel is the same fp32 sequence as
the PyTorch reference (q4a8_layout.q6k_reference) on every instruction set and thread count, and every row alone
equals that row in any batch.
"""
from __future__ import annotations

import pytest
import torch

from gguf_blocks import q6k_blocks, q6k_dequantized as dequantized, q6k_layer
from specviz.models.quant import q4a8, q4k, weights

pytestmark = pytest.mark.usefixtures("one_thread")


def activations(m: int, k: int, seed: int = 1) -> torch.Tensor:
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(seed))
    x[:, :32] *= 40   # an outlier block, as real hidden states have
    x[0, 32:64] = 0   # an all-zero block: step 0
    return x


def product(layer, x: torch.Tensor, isa: str | None = None) -> torch.Tensor:
    """The raw product (fp32 in, no bias): what the reference computes; on `isa` where given, else the process's."""
    if isa is not None:
        with q4a8.isa_forced(isa):
            return product(layer, x)
    return q4a8.extension().linear(x, layer.packed, layer.out_features, None, None, q4a8.KINDS["q6k"])


def test_its_dense_weight_is_ggufs_own_dequantization_and_it_takes_0_83_bytes_a_weight():
    layer, weight, (codes, d, sc) = q6k_layer()
    assert int(codes.min()) >= 0 and int(codes.max()) <= 63
    assert torch.equal(layer.dense_weight(), weight)
    got = q4a8.unpack_q6k(layer.packed, 40)
    assert torch.equal(got[0], codes) and torch.equal(got[1], d.float()) and torch.equal(got[2], sc)
    assert layer.packed.numel() / (48 * 512) == 3392 / 4096   # 48: the padded tile of 40 columns


def test_weights_that_are_not_from_the_scales_give_no_codes():
    blocks = q6k_blocks(16, 512)
    weight = dequantized(blocks)
    s = q4k.q6k_block_scales(blocks, 16)
    scales = (s["q6k_d"], s["q6k_sc"])
    nudged = weight.clone()
    nudged[3, 100] = torch.nextafter(nudged[3, 100], torch.tensor(1.0))   # one ulp off
    assert q4k.exact_q6k_codes(nudged, scales) is None
    assert q4k.exact_q6k_codes(weight[:, :256], scales) is None            # another shape
    assert q4k.exact_q6k_codes(dequantized(q6k_blocks(16, 512, seed=1)), scales) is None


@pytest.mark.parametrize("isa", list(q4a8.ISAS))
def test_the_kernel_is_the_reference_bit_for_bit_and_every_row_the_same_alone(ext, isa):
    if isa not in q4a8.supported_isas():
        pytest.skip(f"this CPU does not run {isa}")
    layer, _, (codes, d, sc) = q6k_layer(rows=40, cols=768)   # 3 tiles (one padded), 3 super-blocks
    x = activations(9, 768)
    got = product(layer, x, isa)
    assert torch.equal(got, q4a8.q6k_reference(x, codes, d, sc))
    for m in range(1, 10):   # each batch of m rows: every row as it is alone
        batch = product(layer, x[:m], isa)
        assert all(torch.equal(batch[i], product(layer, x[i:i + 1], isa)[0]) for i in range(m)), (isa, m)


def test_the_reference_tells_the_halves_scales_apart(ext):
    """The check above can fail: a layout with each group's two sub-scales swapped gives other bits."""
    layer, _, (codes, d, sc) = q6k_layer(rows=16, cols=256)
    swapped = sc.reshape(16, -1, 2).flip(-1).reshape(16, -1)
    x = activations(3, 256)
    assert not torch.equal(q4a8.q6k_reference(x, codes, d, swapped), product(layer, x))


def test_every_instruction_set_and_thread_count_gives_the_same_bits(ext, on_every_isa_and_thread_count):
    layer, _, _ = q6k_layer(rows=400, cols=768)   # 25 tiles
    outs = on_every_isa_and_thread_count(layer, activations(9, 768).bfloat16())
    assert len(outs) >= 4 and all(torch.equal(o, outs[0]) for o in outs)


def test_it_is_close_to_the_float64_product(ext):
    layer, weight, _ = q6k_layer(rows=64, cols=1024)
    x = torch.randn(8, 1024, dtype=torch.float64)
    exact = x @ weight.double().T + layer.bias.double()
    err = (layer(x.float()).double() - exact).norm(dim=1) / exact.norm(dim=1)
    assert float(err.max()) < 0.02   # int8 activations per block of 32


def test_a_target_keeps_its_q6k_layers_and_a_draft_requantizes_them(ext):
    """As the GGUF loader places a Q6_K tensor: a target's keeps the file's own values (its dense weight gguf's
    dequantization bit for bit), a draft's is requantized to its own 4-bit grid; the same weights in a dense model
    (no GGUF scales) are on no 4-bit grid and go to int8."""
    from gguf import GGMLQuantizationType

    from specviz.models.gguf_file import GGUFTensor
    from specviz.models.gguf_loader import placed_linear

    blocks = q6k_blocks(48, 512)
    t = GGUFTensor("blk.0.ffn_down.weight", GGMLQuantizationType.Q6_K, 48, 512, blocks)
    target, name = placed_linear(t, None, "q4a8", strict_grid=True)
    assert name == "q6k" and isinstance(target, q4a8.Q6KA8Linear)
    assert torch.equal(target.dense_weight(), dequantized(blocks))   # as floats: gguf writes some zeros as -0.0
    assert placed_linear(t, None, "q4a8", strict_grid=False)[1] == "q4h"   # a draft
    linear = torch.nn.Linear(512, 48)
    with torch.no_grad():
        linear.weight.copy_(dequantized(blocks))
    assert weights.converted_linear(linear, "q4a8", strict_grid=True)[1] == "q8a8"
