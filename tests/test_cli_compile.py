"""`--compile auto|on|off` on `generate` and `bench`: parsed, checked, and handed to the decoders."""
from __future__ import annotations

import json

import pytest

import specviz.engine.baseline
import specviz.models.loading
import specviz.generate
from specviz.cli import bench, generate
from tests.browser.tiny_app import TinyPair


def test_generate_refuses_an_unknown_mode_in_one_line(capsys, monkeypatch):
    monkeypatch.setattr(specviz.models.loading, "load_pair", lambda **kw: pytest.fail("no model may load"))
    assert generate.main(["generate", "--prompt", "x", "--compile", "maybe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specviz: error:") and "--compile" in err[0]
    args = generate.build_parser().parse_args(["generate", "--prompt", "x"])
    assert args.compile == "auto"


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_generate_hands_the_mode_to_both_decoders(mode, capsys, monkeypatch):
    pair = TinyPair(0.0)
    monkeypatch.setattr(specviz.models.loading, "load_pair", lambda **kw: pair)
    seen = []
    spec, base = specviz.generate.speculative_generate, specviz.engine.baseline.autoregressive_generate

    def spy(real, name):
        def call(*args, **kwargs):
            seen.append((name, kwargs.get("compile")))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(specviz.generate, "speculative_generate", spy(spec, "spec"))
    monkeypatch.setattr(specviz.engine.baseline, "autoregressive_generate", spy(base, "base"))
    rc = generate.main(["generate", "--prompt", "the cat", "--max-new-tokens", "6", "--compare", "--compile", mode])
    assert rc == 0 and seen == [("spec", mode), ("base", mode)]
    out = capsys.readouterr()
    assert "eager forwards" in out.err and "speedup" in out.out      # a CPU: auto is eager


def test_bench_records_the_mode_and_passes_it_on(tmp_path, capsys, monkeypatch):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"category": "code", "prompt": "def f(x):"}\n', encoding="utf-8")
    argv = ["--prompts", str(prompts), "--k", "1", "--max-new-tokens", "2", "--temperature", "0", "--repeats", "1",
            "--out", str(tmp_path / "o"), "--quiet", "--methods", "target", "--no-warmup"]
    got = {}

    def recording(target, draft, plan, options):
        got["called"] = True
        return {"rows": [], "summary": {}, "costs": {}}

    def with_compile(target, draft, plan, options):
        got["compile"] = options.compile
        return {"rows": [], "summary": {}, "costs": {}}

    def write_results(result, out):
        got["meta"] = result["meta"]
        return out / "r.json", out / "r.html"

    monkeypatch.setattr(bench, "write_results", write_results)
    monkeypatch.setattr(bench, "format_table", lambda result: "")
    monkeypatch.setattr(bench, "run_benchmark", recording)
    assert bench.main(argv, pair_loader=lambda **kw: TinyPair(0.0)) == 0        # auto: the decoders' default
    assert got["called"] and got["meta"]["compile"] == "auto"
    monkeypatch.setattr(bench, "run_benchmark", with_compile)
    assert bench.main(argv + ["--compile", "off"], pair_loader=lambda **kw: TinyPair(0.0)) == 0
    assert got["compile"] == "off" and json.loads(json.dumps(got["meta"]))["compile"] == "off"


@pytest.mark.parametrize("mode", ["on", "graphs"])
def test_cuda_only_modes_are_refused_without_cuda_before_any_model_loads(mode, capsys, monkeypatch):
    """ On a CPU, --compile on compiled for minutes and captured nothing; refused in one line instead."""
    import specviz.runtime.forwards

    monkeypatch.setattr(specviz.models.loading, "load_pair", lambda **kw: pytest.fail("no model may load"))
    monkeypatch.setattr(specviz.runtime.forwards.torch.cuda, "is_available", lambda: False)
    assert generate.main(["generate", "--prompt", "x", "--compile", mode]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--compile {mode} needs a CUDA GPU" in err[0] and "auto or off" in err[0]
    assert generate.main(["generate", "--prompt", "x", "--compile", mode, "--device", "cpu"]) == 2
    assert "--device cpu" in capsys.readouterr().err
    assert bench.main(["--compile", mode, "--quiet"], pair_loader=lambda **kw: pytest.fail("no model")) == 2
    assert f"--compile {mode} needs a CUDA GPU" in capsys.readouterr().err
    monkeypatch.setattr(specviz.runtime.forwards.torch.cuda, "is_available", lambda: True)
    from specviz.cli.args import compile_refusal

    assert compile_refusal(mode, None) is None and compile_refusal(mode, "cuda:0") is None   # CUDA: offered
    assert compile_refusal(mode, "cpu") is not None and compile_refusal("auto", "cpu") is None
