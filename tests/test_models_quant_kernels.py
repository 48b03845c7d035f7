"""The oneDNN linear path: same numbers as nn.Linear, and the decoder stays exact on it."""
import copy

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.models.quant import kernels
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from tiny import noisy_copy, tiny_model

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN")


@needs_onednn
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(7,), (1, 1), (1, 5), (3, 4)])
def test_onednn_linear_computes_what_nn_linear_computes(bias, shape):
    torch.manual_seed(0)
    lin = torch.nn.Linear(48, 80, bias=bias)
    x = torch.randn(*shape, 48)
    fast = kernels.OneDNNLinear(lin)
    with torch.inference_mode():
        out = fast(x)
        assert out.shape == lin(x).shape and not out.is_mkldnn
        torch.testing.assert_close(out, lin(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fast.dense_weight(), lin.weight.detach())


def converted(model):
    return kernels.use_linear_path(copy.deepcopy(model), "onednn")


@needs_onednn
def test_every_linear_layer_is_converted_and_the_path_recorded():
    model = converted(tiny_model(3))
    assert kernels.linear_path(model) == "onednn"
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    assert isinstance(model.get_output_embeddings(), kernels.OneDNNLinear)
    assert kernels.output_weight(model).shape == (16, 32)
    assert kernels.linear_path(tiny_model(3)) == "default"


@needs_onednn
def test_greedy_speculative_output_on_onednn_equals_the_target_alone_on_onednn():
    target = converted(tiny_model(11))
    draft = converted(noisy_copy(tiny_model(11), 3, 0.4))
    greedy = SamplingConfig(temperature=0)
    spec = [t for r in speculative_generate(target, draft, [1, 2, 3], k=4, sampling=greedy, max_new_tokens=40)
            for t in r.emitted]
    alone = [s.token_id for s in autoregressive_generate(target, [1, 2, 3], sampling=greedy, max_new_tokens=40)]
    assert spec == alone
    # and the kernels change nothing a greedy decode can see on this model
    plain = [s.token_id for s in autoregressive_generate(tiny_model(11), [1, 2, 3], sampling=greedy,
                                                         max_new_tokens=40)]
    assert alone == plain


@needs_onednn
@pytest.mark.statistical
def test_sampling_on_onednn_keeps_the_target_distribution():
    target = tiny_model(51, vocab=8, scale=0.6)
    draft = noisy_copy(target, 7, 0.8)
    fast_target, fast_draft = converted(target), converted(draft)
    cfg = SamplingConfig(temperature=1.0)
    counts = sample_prefixes(fast_target, fast_draft, [1, 2], 2, 20_000, decode_options(k=3, sampling=cfg))
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"


def test_the_path_is_chosen_by_device_and_dtype(monkeypatch):
    monkeypatch.delenv(kernels.ENV_VAR, raising=False)
    want = "onednn" if torch.backends.mkldnn.is_available() else "default"
    assert kernels.resolve_linear_path("auto", "cpu", torch.float32) == want
    assert kernels.resolve_linear_path("auto", "cpu", torch.bfloat16) == "default"
    assert kernels.resolve_linear_path("auto", "cuda", torch.float32) == "default"
    assert kernels.resolve_linear_path("default", "cpu", torch.float32) == "default"
    monkeypatch.setenv(kernels.ENV_VAR, "default")
    assert kernels.resolve_linear_path("auto", "cpu", torch.float32) == "default"
    monkeypatch.setenv(kernels.ENV_VAR, "fastest")
    with pytest.raises(ValueError, match=kernels.ENV_VAR):
        kernels.resolve_linear_path("auto", "cpu", torch.float32)
    with pytest.raises(ValueError, match="fp32 on a CPU"):
        kernels.resolve_linear_path("onednn", "cpu", torch.bfloat16)
    with pytest.raises(ValueError, match="one of"):
        kernels.resolve_linear_path("mkl", "cpu", torch.float32)


@needs_onednn
def test_the_automatic_choice_times_both_paths_on_the_largest_layer():
    model = tiny_model(5, hidden=64)
    found = kernels.probe_linear_paths(model, repeats=2)
    assert found["choice"] in ("default", "onednn")
    assert found["layer"] == "64x128"   # the MLP's gate/up projection; the output layer is left out
    assert set(found["ms"]) == {"default_1", "default_5", "onednn_1", "onednn_5"}
    assert all(v > 0 for v in found["ms"].values())


@needs_onednn
@pytest.mark.real_model
def test_greedy_on_the_packaged_pair_with_onednn_equals_the_target_alone():
    """oneDNN's path (`--linear onednn`, or `auto` where it measures fastest), end to end: greedy speculative output
    token for token the target's."""
    import gc

    from specviz.models.loading import WeightOptions, load_pair

    pair = load_pair(dtype="fp32", device="cpu", weights=WeightOptions(linear="onednn", target_weights="as-loaded"))
    try:
        assert pair.linear_path == "onednn" and kernels.linear_path(pair.target) == "onednn"
        ids = pair.encode_chat("Write a Python function that returns the n-th Fibonacci number.")
        greedy = SamplingConfig(temperature=0)
        spec = [t for r in speculative_generate(pair.target, pair.draft, ids, k=4, sampling=greedy,
                                                max_new_tokens=24, eos_token_id=pair.eos_token_ids)
                for t in r.emitted]
        alone = [s.token_id for s in autoregressive_generate(pair.target, ids, sampling=greedy, max_new_tokens=24,
                                                             eos_token_id=pair.eos_token_ids)]
        assert spec == alone and len(alone) >= 8
    finally:
        del pair
        gc.collect()   # 8 GB of packed weights: give them back before the next module loads its own pair
