"""A GGUF's Q4_K scales in their own form: read from the blocks, the codes found again, and exact.

The proof that matters: gguf's own dequantizer (the one transformers runs when it loads a GGUF) and the
Q4_K layout's dense weight agree bit for bit, on synthetic blocks here and on the packaged target's every
Q4_K layer in the real-model test.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gguf_blocks import q4k_blocks, q4k_dequantized as dequantized
from specviz.models.quant import q4a8, q4k, weights


def _q4k_linear(rows: int = 48, cols: int = 512) -> tuple[torch.nn.Linear, np.ndarray]:
    blocks = q4k_blocks(rows, cols)
    linear = torch.nn.Linear(cols, rows)
    with torch.no_grad():
        linear.weight.copy_(dequantized(blocks))
    return linear, blocks


def _scales(blocks: np.ndarray, rows: int) -> tuple[torch.Tensor, ...]:
    s = q4k.block_scales(blocks, rows)
    return s["d"], s["sc"], s["dmin"], s["m"]


def test_the_q4k_layout_gives_ggufs_own_dequantized_weights_bit_for_bit():
    blocks = q4k_blocks(40, 768)
    weight = dequantized(blocks)
    scales = _scales(blocks, 40)
    codes = q4k.exact_codes(weight, scales)
    assert codes is not None and int(codes.min()) >= 0 and int(codes.max()) <= 15
    layer = q4a8.Q4KA8Linear(weight, None, (codes, *scales))
    assert torch.equal(layer.dense_weight().view(torch.int32), weight.view(torch.int32))


def test_weights_that_are_not_from_the_scales_give_no_codes():
    blocks = q4k_blocks(16, 512)
    weight = dequantized(blocks)
    scales = _scales(blocks, 16)
    nudged = weight.clone()
    nudged[3, 100] = torch.nextafter(nudged[3, 100], torch.tensor(1.0))   # one ulp off
    assert q4k.exact_codes(nudged, scales) is None
    assert q4k.exact_codes(weight[:, :256], scales) is None            # another shape
    assert q4k.exact_codes(dequantized(q4k_blocks(16, 512, seed=1)), scales) is None


def test_a_layer_given_its_own_q4k_scales_is_stored_as_them_bit_for_bit():
    """The load's weight probe (models.gguf_pair) hands converted_linear the file's Q4_K scales of the layer it times:
    the layer becomes Q4KA8Linear, its dense weight gguf's dequantized one bit for bit, target and draft alike."""
    linear, blocks = _q4k_linear()
    for strict_grid in (True, False):
        layer, got = weights.converted_linear(linear, "q4a8", strict_grid, q4k=_scales(blocks, 48))
        assert got == "q4k" and isinstance(layer, q4a8.Q4KA8Linear)
        assert torch.equal(layer.dense_weight().view(torch.int32), linear.weight.view(torch.int32))
        assert torch.equal(layer.bias, linear.bias)


def test_a_layer_given_another_tensors_scales_keeps_a_grid_of_its_own():
    """Scales that do not give the weights bit for bit are not used: a target's layer on the 4-bit grid keeps fp32
    scales ("q4a8"), a draft's is requantized ("q4h")."""
    linear, _ = _q4k_linear()
    other = _scales(q4k_blocks(48, 512, seed=1), 48)
    assert weights.converted_linear(linear, "q4a8", True, q4k=other)[1] == "q4a8"
    assert weights.converted_linear(linear, "q4a8", False, q4k=other)[1] == "q4h"


@pytest.mark.real_model
def test_every_q4k_layer_of_the_packaged_target_is_its_dequantized_weight_bit_for_bit():
    """The packaged target's Q4_K and Q6_K layers, as the load places them from the file's blocks, against gguf's own
    fp32 dequantization of each tensor (what transformers' GGUF loading computes): every weight bit for bit."""
    from gguf import dequantize

    from specviz.models import gguf_loader, packaged
    from specviz.models.gguf_file import GGUFModelFile

    file = GGUFModelFile(packaged.packaged_gguf("target"))
    model, counts = gguf_loader.load_gguf_model(file, "q4a8", torch.float32)
    assert counts.get("q4k", 0) >= 160 and counts.get("q6k", 0) >= 29   # its Q6_K layers, the output layer among them
    names = gguf_loader._name_map(file, model.config.num_hidden_layers)
    stored = {n: m for n, m in model.named_modules() if isinstance(m, (q4a8.Q4KA8Linear, q4a8.Q6KA8Linear))}
    assert len(stored) == counts["q4k"] + counts["q6k"]
    wrong = []
    for name, layer in stored.items():
        t = file.tensor(f"{names.get_name(name)}.weight")
        dense = torch.from_numpy(dequantize(t.data, t.kind)).reshape(t.rows, t.cols)
        if not torch.equal(layer.dense_weight().view(torch.int32), dense.view(torch.int32)):
            wrong.append(name)
    assert wrong == []
