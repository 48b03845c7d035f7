"""`python -m specviz costs`: random-weight models of known shapes, timed offline; the memory refusal."""
from __future__ import annotations

import re

import pytest
import torch

from specviz import theory
from specviz.bench import shapes
from specviz.models import devices
from specviz.cli import costs

# Published sizes (model cards), in parameters: the shape table must reproduce them.
PUBLISHED = {"qwen2.5-0.5b": 0.49e9, "qwen2.5-1.5b": 1.54e9, "qwen2.5-3b": 3.09e9, "qwen2.5-7b": 7.61e9,
             "qwen2.5-14b": 14.7e9, "qwen2.5-32b": 32.5e9, "smollm2-135m": 135e6, "smollm2-360m": 362e6,
             "smollm2-1.7b": 1.71e9}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shape_table_matches_the_published_sizes(name):
    model = shapes.meta_model(shapes.config_of(shapes.SHAPES[name]))   # meta: no memory, instant
    assert shapes.parameter_count(model) == pytest.approx(PUBLISHED[name], rel=0.02)


def test_materialized_model_is_finite_tied_and_runs():
    config = shapes.config_of(shapes.SHAPES["smollm2-135m"], layers=1, max_positions=64)
    model = shapes.materialize(shapes.meta_model(config), torch.device("cpu"), torch.float32)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert torch.isfinite(model.model.rotary_emb.inv_freq).all() and model.model.rotary_emb.inv_freq[0] == 1.0
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[1, 2, 3]])).logits
    assert logits.shape == (1, 3, 49152) and torch.isfinite(logits).all()


def test_costs_prints_c_verify_cost_and_theory_per_k(capsys):
    rc = costs.main(["--draft-shape", "smollm2-135m", "--target-shape", "smollm2-135m", "--layers", "1",
                     "--k", "2", "1", "--prompt-tokens", "8", "--repeats", "1", "--device", "cpu",
                     "--dtype", "fp32", "--alpha", "0.7", "--compile", "on"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "compile needs CUDA here; running eager" in err
    assert "smollm2-135m" in out and "float32" in out and "1 layers each" in out
    c = float(re.search(r"c = ([0-9.]+)", out).group(1))
    rows = re.findall(r"^\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)x$", out, re.M)
    assert [int(r[0]) for r in rows] == [1, 2]
    for k, _, vc, speedup in rows:   # printed rounded: compare loosely
        assert float(speedup) == pytest.approx(theory.expected_speedup(0.7, int(k), c, float(vc)), rel=0.02, abs=0.01)


def test_costs_refuses_what_does_not_fit(capsys, monkeypatch):
    monkeypatch.setattr(devices, "available_memory", lambda device: 4 << 30)
    monkeypatch.setattr(shapes, "materialize", lambda *a, **k: pytest.fail("must not build what does not fit"))
    rc = costs.main(["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--device", "cpu",
                     "--dtype", "bf16"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert rc == 2 and captured.out == ""
    assert len(err) == 1 and err[0].startswith("specviz costs: error: qwen2.5-0.5b + qwen2.5-7b in bfloat16 need about")
    assert "4.0 GiB available" in err[0]


def test_memory_estimate_is_params_times_bytes():
    n = 1_000_000
    assert shapes.bytes_needed(n, torch.bfloat16, 10, 1) < shapes.bytes_needed(n, torch.float32, 10, 1)
    assert shapes.bytes_needed(n, torch.float32, 10, 1) >= 4 * n
    assert devices.available_memory(torch.device("cpu")) > 0


@pytest.mark.parametrize("argv, says", [
    ([], "--draft-shape"),
    (["--draft", "a.gguf"], "--draft and --target go together"),
    (["--draft", "a.gguf", "--target", "b.gguf", "--draft-shape", "qwen2.5-0.5b"], "not both"),
    (["--draft", "a.gguf", "--target", "b.gguf", "--layers", "2"], "a file's layers are its own"),
    (["--draft-shape", "gpt-5", "--target-shape", "qwen2.5-7b"], "invalid choice"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--k", "0"], "--k must be in"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--alpha", "1.5"], "--alpha"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--layers", "0"], "--layers"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--prompt-tokens", "100000"],
     "--prompt-tokens"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--device", "tpu"], "--device"),
    (["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--compile", "maybe"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(argv, says, capsys, monkeypatch):
    monkeypatch.setattr(shapes, "materialize", lambda *a, **k: pytest.fail("must not build on bad arguments"))
    assert costs.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specviz costs: error:") and says in err[0], err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_a_clear_error(capsys):
    assert costs.main(["--draft-shape", "qwen2.5-0.5b", "--target-shape", "qwen2.5-7b", "--device", "cuda"]) == 2
    assert "no CUDA GPU is available" in capsys.readouterr().err


def test_forward_costs_times_the_static_cache_path_when_asked(tiny_pair, monkeypatch):
    """compile="on" means static caches (+ graphs on CUDA); on this CPU the static part is checked eagerly."""
    from specviz.bench import costs as bench_costs
    from specviz.runtime import decoding

    seen = []
    real_prefill = decoding.prefill

    def spy(model, tokens, static=False, max_len=0, compiled=False, backend="inductor", stop=None):
        seen.append((static, compiled, max_len))
        return real_prefill(model, tokens, static, max_len, False, stop=stop)

    monkeypatch.setattr(bench_costs, "resolve_forwards",
                        lambda compile, device: decoding.Forwards(compile == "on", False, "eager"))
    monkeypatch.setattr(bench_costs, "prefill", spy)
    target, draft = tiny_pair
    fc = bench_costs.forward_costs(target, draft, [1, 2, 3], ks=[2, 4], repeats=1, compile="on")
    assert seen == [(True, False, 3 + 4 + 2)] * 2
    assert fc.target_1 > 0 and fc.draft_1 > 0 and set(fc.target_k) == {2, 4}
    seen.clear()
    bench_costs.forward_costs(target, draft, [1, 2, 3], ks=[2], repeats=1)
    assert seen == [(False, False, 3 + 2 + 2)] * 2


def test_forward_costs_times_the_forwards_decoding_runs_and_changes_no_model(tiny_pair):
    """The costs are those of the decoder's forwards because the models are timed as they were prepared at load (the
    row-invariant attention), never rewritten here: an unprepared model is timed as it is, and left so."""
    import copy

    from specviz.bench import costs as bench_costs
    from specviz.runtime.attention import has_row_invariant_attention
    from tiny import noisy_copy, tiny_model

    target = tiny_model(5)
    draft = noisy_copy(target, 6, 0.2)
    assert has_row_invariant_attention(target) and has_row_invariant_attention(draft)   # prepared as load_pair does
    bare = copy.deepcopy(target)
    for config in {id(c): c for c in (bare.config, bare.config.get_text_config())}.values():
        config._attn_implementation = "sdpa"
    bench_costs.forward_costs(bare, draft, [1, 2, 3], ks=[2], repeats=1)
    assert not has_row_invariant_attention(bare) and has_row_invariant_attention(draft)


def test_costs_times_two_gguf_files_as_the_load_places_them(tmp_path, capsys, monkeypatch):
    """--draft/--target FILE.gguf: the files loaded by load_pair (the app's and the bench's load), then timed; no
    shape is built."""
    from tests.test_models_gguf import _hf_model, write_model_gguf
    from specviz.models import loading

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    draft, target = tmp_path / "small.gguf", tmp_path / "large.gguf"
    write_model_gguf(draft, "qwen2", _hf_model("qwen2", 1, True))
    write_model_gguf(target, "qwen2", _hf_model("qwen2", 2, True))
    monkeypatch.setattr(shapes, "materialize", lambda *a, **k: pytest.fail("files are loaded, not shapes built"))
    loaded = []
    real = loading.load_pair
    monkeypatch.setattr(loading, "load_pair", lambda **kw: loaded.append(kw) or real(**kw))
    rc = costs.main(["--draft", str(draft), "--target", str(target), "--k", "2", "--prompt-tokens", "8",
                     "--repeats", "1", "--device", "cpu", "--dtype", "fp32"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert [(kw["draft"], kw["target"]) for kw in loaded] == [(str(draft), str(target))]
    assert "small.gguf" in out and "large.gguf" in out and re.search(r"c = [0-9.]+", out)
    assert re.findall(r"^\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+x$", out, re.M) == ["2"]


def test_costs_refuses_a_file_in_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"not a gguf at all" * 100)
    rc = costs.main(["--draft", str(bad), "--target", str(bad), "--device", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("specviz costs: error:") and "notes.gguf" in err[0], err
