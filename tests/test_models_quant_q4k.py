"""A GGUF's Q4_K scales kept in their own form: read from a GGUF, found again beside a model, and exact.

The proof that matters: gguf's own dequantizer (the one transformers runs when it loads a GGUF) and the
Q4_K layout's dense weight agree bit for bit, on synthetic blocks here and on the packaged target's every
Q4_K layer in the real-model test.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from gguf_blocks import q4k_blocks, q4k_dequantized as dequantized, write_gguf
from specviz.models.quant import q4a8, q4k


def test_the_q4k_layout_gives_ggufs_own_dequantized_weights_bit_for_bit():
    blocks = q4k_blocks(40, 768)
    weight = dequantized(blocks)
    s = q4k.block_scales(blocks, 40)
    scales = (s["d"], s["sc"], s["dmin"], s["m"])
    codes = q4k.exact_codes(weight, scales)
    assert codes is not None and int(codes.min()) >= 0 and int(codes.max()) <= 15
    layer = q4a8.Q4KA8Linear(weight, None, (codes, *scales))
    assert torch.equal(layer.dense_weight().view(torch.int32), weight.view(torch.int32))


def test_weights_that_are_not_from_the_scales_give_no_codes():
    blocks = q4k_blocks(16, 512)
    weight = dequantized(blocks)
    s = q4k.block_scales(blocks, 16)
    scales = (s["d"], s["sc"], s["dmin"], s["m"])
    nudged = weight.clone()
    nudged[3, 100] = torch.nextafter(nudged[3, 100], torch.tensor(1.0))   # one ulp off
    assert q4k.exact_codes(nudged, scales) is None
    assert q4k.exact_codes(weight[:, :256], scales) is None            # another shape
    assert q4k.exact_codes(dequantized(q4k_blocks(16, 512, seed=1)), scales) is None


def test_the_scales_are_read_from_a_gguf_and_found_again_beside_the_model(tmp_path):
    from gguf import GGMLQuantizationType as T

    q, up = q4k_blocks(32, 512), q4k_blocks(48, 256, seed=3)
    write_gguf(tmp_path / "m.gguf", {"blk.0.attn_q.weight": (q, T.Q4_K), "blk.0.ffn_up.weight": (up, T.Q4_K),
                                     "blk.0.ffn_down.weight": (np.zeros((8, 210), np.uint8), T.Q6_K),
                                     "blk.0.attn_q.bias": (np.zeros(32, np.float32), T.F32)})
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2", "num_hidden_layers": 1}))
    names = [f"model.layers.0.{n}.weight" for n in ("self_attn.q_proj", "mlp.up_proj", "mlp.down_proj")]
    bias = "model.layers.0.self_attn.q_proj.bias"
    assert q4k.extract_scales(tmp_path / "m.gguf", folder, names + [bias]) == (2, 1)   # Q4_K, Q6_K
    model = SimpleNamespace(config=SimpleNamespace(_name_or_path=str(folder)))
    found = q4k.load_scales(model)
    assert sorted(found) == ["model.layers.0.mlp.up_proj", "model.layers.0.self_attn.q_proj"]   # Q6_K: its own file
    six = q4k.load_scales(model, parts=q4k.Q6K_PARTS)
    assert list(six) == ["model.layers.0.mlp.down_proj"] and (folder / q4k.SIDECAR6).is_file()
    d, sc = six["model.layers.0.mlp.down_proj"]
    assert d.dtype == torch.float16 and sc.dtype == torch.int8
    want = q4k.block_scales(q, 32)
    assert all(torch.equal(a, want[k]) for a, k in zip(found["model.layers.0.self_attn.q_proj"], ("d", "sc", "dmin", "m")))
    assert found["model.layers.0.self_attn.q_proj"][0].dtype == torch.float16
    assert list(q4k.load_scales(model, {"model.layers.0.mlp.up_proj"})) == ["model.layers.0.mlp.up_proj"]
    assert q4k.exact_codes(dequantized(up), found["model.layers.0.mlp.up_proj"]) is not None


def test_a_model_without_a_folder_or_without_scales_has_none(tmp_path):
    assert q4k.load_scales(SimpleNamespace(config=SimpleNamespace(_name_or_path=""))) == {}
    assert q4k.load_scales(SimpleNamespace(config=SimpleNamespace(_name_or_path=str(tmp_path)))) == {}
    assert q4k.load_scales(object()) == {}


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
