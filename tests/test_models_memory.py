"""A pair that does not fit the device is refused in words before loading (specviz.models.memory), with fake free memory."""
import pytest
import torch

from specviz.models import memory, loading as models
from specviz.bench import shapes
from specviz.errors import ModelLoadError
from specviz.models.sources import Source


def config(name):
    return shapes.config_of(shapes.SHAPES[name])


def fit(draft, target, free_gb, dtype=torch.bfloat16):
    configs = [config(draft), config(target)]
    return memory.pair_fit(configs, [memory.parameter_count(c) for c in configs], dtype, free_gb * 1e9)


def test_the_parameter_count_is_the_architectures():
    assert 0.45e9 < memory.parameter_count(config("qwen2.5-0.5b")) < 0.55e9
    assert 14.0e9 < memory.parameter_count(config("qwen2.5-14b")) < 15.5e9


def test_half_a_billion_to_fourteen_billion_in_bf16_fits_a_zero_gpu_slice_with_its_caches():
    slice_70 = fit("qwen2.5-0.5b", "qwen2.5-14b", 70)
    assert slice_70.fits and 30e9 < slice_70.need < 45e9
    assert slice_70.cache > 1e9                       # 8192 positions of a 48-layer, 8-KV-head cache: ~1.6 GB


def test_a_pair_larger_than_the_free_memory_is_refused_in_words():
    small = fit("qwen2.5-0.5b", "qwen2.5-14b", 24)
    assert not small.fits
    text = memory.refusal(small, "A → B", torch.bfloat16, "cuda")
    assert "A → B" in text and "24.0 GB" in text and "bfloat16" in text
    assert memory.refusal(fit("qwen2.5-0.5b", "qwen2.5-1.5b", 24), "A → B", torch.bfloat16, "cuda") is None
    spanish = memory.refusal(small, "A → B", torch.bfloat16, "cuda", lang="es")
    assert spanish != text and "24.0 GB" in spanish


def test_fp32_needs_twice_the_weights_of_bf16():
    assert fit("qwen2.5-0.5b", "qwen2.5-7b", 70, torch.float32).weights == \
        pytest.approx(2 * fit("qwen2.5-0.5b", "qwen2.5-7b", 70).weights)


def test_unknown_free_memory_never_refuses():
    configs = [config("qwen2.5-14b")]
    assert memory.pair_fit(configs, [10**12], torch.float32, None).fits


def test_load_pair_refuses_before_reading_any_weight(monkeypatch):
    monkeypatch.setattr(memory, "check_pair", lambda *a, **kw: "too big for this device")
    monkeypatch.setattr(models, "resolve_source", lambda spec, role, allow_local: Source(spec, False))
    monkeypatch.setattr(models, "_load_tokenizer", lambda src, role: object())
    monkeypatch.setattr(models, "_check_same_vocab", lambda *a: None)
    loaded = []
    monkeypatch.setattr(models, "_load_model", lambda *a, **kw: loaded.append(a))
    with pytest.raises(ModelLoadError, match="too big for this device"):
        models.load_pair("a/draft", "b/target", device="cpu", dtype="fp32")
    assert loaded == []


def test_on_zero_gpu_a_pair_is_checked_against_the_slice_the_space_asks_for(monkeypatch):
    """ ZeroGPU's Blackwell slices (large: half a card, 48 GB, the default; xlarge: 96 GB), not an H200's
    ~70 GB. 0.5B -> 14B in fp32 (~74 GB with its caches) passed the old check and cannot fit the default slice."""
    from specviz.runtime import zerogpu

    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.delenv(zerogpu.ZEROGPU_SIZE_ENV, raising=False)
    monkeypatch.delenv(zerogpu.ZEROGPU_DEVICE_MEMORY_ENV, raising=False)
    large = memory.free_bytes(torch.device("cuda"))
    assert large == 48e9
    assert fit("qwen2.5-0.5b", "qwen2.5-14b", large / 1e9).fits                     # bf16: ~37 GB
    fp32 = fit("qwen2.5-0.5b", "qwen2.5-14b", large / 1e9, torch.float32)
    assert not fp32.fits and "48.0 GB" in memory.refusal(fp32, "A → B", torch.float32, "cuda")
    monkeypatch.setenv(zerogpu.ZEROGPU_SIZE_ENV, "xlarge")
    xlarge = memory.free_bytes(torch.device("cuda"))
    assert xlarge == 96e9 and fit("qwen2.5-0.5b", "qwen2.5-14b", xlarge / 1e9, torch.float32).fits
