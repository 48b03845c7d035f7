"""Converted weights kept on disk: read back only when they are what a fresh conversion gives."""
import json
import os
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from specviz.models.quant import weights, weights_cache
from specviz.models.quant.weights_cache import convert_cached, entry_path
from tiny import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")
IDS = torch.tensor([[1, 2, 3, 4, 5]])


@pytest.fixture
def saved(tmp_path, monkeypatch):
    """A tiny model saved as safetensors in a folder (as the packaged pair is), the cache in tmp_path."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    tiny_model(3, vocab=64, hidden=64).save_pretrained(folder)

    def load():
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()

    return load


def logits(model):
    with torch.no_grad():
        return model(IDS).logits


def count_conversions(monkeypatch):
    calls = []
    real = weights_cache.convert_target_weights
    monkeypatch.setattr(weights_cache, "convert_target_weights", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    return calls


@pytest.mark.parametrize("kind", ["int4", "int8", "bf16"])
def test_the_second_load_reads_the_conversion_back_and_computes_the_same(saved, monkeypatch, kind):
    calls = count_conversions(monkeypatch)
    first = saved()
    counts = convert_cached(first, kind, strict_grid=False)
    assert calls == [kind] and entry_path(first, kind, False).is_file()
    second = saved()
    assert convert_cached(second, kind, strict_grid=False) == counts
    assert calls == [kind], "the cached copy was converted again"
    assert torch.equal(logits(first), logits(second))
    assert weights.target_weights(second) == kind
    assert {type(m).__name__ for m in second.modules()} >= {type(m).__name__ for m in first.modules()}


def test_a_cached_copy_that_differs_from_a_fresh_conversion_is_dropped(saved, monkeypatch):
    from safetensors.torch import load_file, save_file
    from safetensors import safe_open

    model = saved()
    convert_cached(model, "int4", strict_grid=False)
    path = entry_path(model, "int4", False)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    (name, _, _), = weights_cache.checked_slots(weights_cache._linear_slots(saved()), json.loads(meta["layers"]))
    key = f"{name}::scales_and_zeros"
    tensors[key] = tensors[key] * 2   # a corrupted layer, the one a load converts afresh
    save_file(tensors, str(path), metadata=meta)
    calls = count_conversions(monkeypatch)
    again = saved()
    convert_cached(again, "int4", strict_grid=False)
    assert calls == ["int4"], "a corrupted copy was trusted"
    assert torch.equal(logits(again), logits(model))
    assert entry_path(again, "int4", False).is_file()   # written anew


def test_a_cut_file_is_converted_afresh(saved, monkeypatch):
    model = saved()
    convert_cached(model, "int8")
    path = entry_path(model, "int8", True)
    path.write_bytes(path.read_bytes()[:100])
    calls = count_conversions(monkeypatch)
    convert_cached(saved(), "int8")
    assert calls == ["int8"]


def test_entries_are_keyed_by_kind_and_by_the_weight_files(saved):
    model = saved()
    assert entry_path(model, "int4", True) != entry_path(model, "int8", True)
    assert entry_path(model, "int4", True) != entry_path(model, "int4", False)
    assert entry_path(tiny_model(3), "int4", True) is None   # built in memory: nothing to key it by
    folder, keys = Path(model.config._name_or_path), [entry_path(model, "int4", True)]
    written = (folder / "model.safetensors").stat().st_mtime_ns
    os.utime(folder / "model.safetensors", ns=(written, written + 10**9))   # the weights written again
    keys.append(entry_path(model, "int4", True))
    (folder / "more.safetensors").write_bytes(b"x")                          # another weight file
    keys.append(entry_path(model, "int4", True))
    assert len(set(keys)) == 3


def test_a_q4a8_copy_is_read_back_checking_the_smallest_layer_of_each_class(tmp_path, monkeypatch):
    """A dense model's q4a8 conversion (its layers on a 4-bit grid as Q4A8Linear, the random output layer as
    Q8A8Linear) comes back without a second conversion and computes the same; the load converted afresh the smallest
    layer of each stored class, not the output layer (the largest)."""
    from gguf_blocks import q4k_blocks, q4k_dequantized
    from specviz.models.quant import q4a8

    if q4a8.unavailable() is not None:
        pytest.skip("q4a8 kernels unavailable here")
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    model = tiny_model(3, vocab=64, hidden=256, layers=1)
    with torch.no_grad():   # on a 4-bit grid: what gguf dequantizes from Q4_K blocks
        for i, layer in enumerate(m for n, m in model.named_modules() if n != "lm_head" and type(m) is torch.nn.Linear):
            layer.weight.copy_(q4k_dequantized(q4k_blocks(*layer.weight.shape, seed=i)))
    model.save_pretrained(folder)

    def load():
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()

    calls = count_conversions(monkeypatch)
    first = load()
    counts = convert_cached(first, "q4a8")
    second = load()
    assert convert_cached(second, "q4a8") == counts == {"q4a8": 7, "q8a8": 1} and calls == ["q4a8"]
    assert sum(isinstance(m, q4a8.Q4A8Linear) for m in second.modules()) == 7
    assert torch.equal(logits(first), logits(second))
    from safetensors import safe_open

    with safe_open(str(entry_path(second, "q4a8", True)), framework="pt") as f:
        layers = json.loads(f.metadata()["layers"])
    slots = weights_cache._linear_slots(load())
    checked = weights_cache.checked_slots(slots, layers)
    classes = {info["class"] for info in layers.values()}
    assert {layers[name]["class"] for name, _, _ in checked} == classes and len(checked) == len(classes) >= 2
    sizes = {name: getattr(parent, attr).in_features * getattr(parent, attr).out_features for name, parent, attr in slots}
    for name, _, _ in checked:
        assert sizes[name] == min(sizes[n] for n in layers if layers[n]["class"] == layers[name]["class"])


def test_entries_no_load_read_for_a_month_go_when_another_is_written(saved, tmp_path):
    """A new torch, layout or weight file makes a new key; the old entries (1-1.5 GB each for the packaged target)
    must not stay forever. A load marks what it reads, so an entry in use is never the one removed."""
    import time

    model = saved()
    convert_cached(model, "int8", strict_grid=False)
    used, folder = entry_path(model, "int8", False), entry_path(model, "int8", False).parent
    old, recent, dead = folder / "stale.safetensors", folder / "recent.safetensors", folder / "x.123.partial"
    for f in (old, recent, dead):
        f.write_bytes(b"x")
    month_ago = time.time() - (weights_cache.STALE_DAYS + 1) * 86400
    for f in (old, dead, used):
        os.utime(f, (month_ago, month_ago))
    convert_cached(saved(), "int8", strict_grid=False)   # read back: marks `used` as read now
    assert used.is_file() and time.time() - used.stat().st_mtime < 3600
    assert old.is_file() and dead.is_file()   # reading removes nothing
    convert_cached(saved(), "int4", strict_grid=False)   # writing another entry prunes
    assert not old.exists() and not dead.exists()
    assert used.is_file() and recent.is_file() and entry_path(model, "int4", False).is_file()


def test_read_tensors_reads_what_safetensors_wrote_and_refuses_a_cut_file(tmp_path):
    """weights_cache.read_tensors (the format's header read by hand, each tensor read into memory of our own): every
    dtype the cache writes, a scalar and an empty tensor, the metadata; a file cut short is refused, not read."""
    from safetensors.torch import save_file

    from specviz.models.quant.weights_cache import read_tensors

    want = {"u8": torch.arange(5 << 20, dtype=torch.int64).to(torch.uint8).view(5, -1),
            "i8": torch.tensor([-3, 7], dtype=torch.int8), "f32": torch.randn(3, 4),
            "bf16": torch.randn(6).to(torch.bfloat16), "i32": torch.tensor(12, dtype=torch.int32),
            "empty": torch.empty(0, 7)}
    path = tmp_path / "entry.safetensors"
    save_file(want, str(path), metadata={"layers": "{}"})
    got, meta = read_tensors(path)
    assert meta == {"layers": "{}"} and set(got) == set(want)
    for key, t in want.items():
        assert got[key].dtype == t.dtype and got[key].shape == t.shape and torch.equal(got[key], t), key
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError):
        read_tensors(path)
