"""The command line answers bad arguments with one line and exit code 2, before loading any model."""
import subprocess
import sys

import pytest

from specviz.cli import agreement, costs, generate, prepare, round_line
from specviz.limits import CLI_MAX_NEW_TOKENS, MAX_K
from specviz.trace.records import Choice, DraftToken, Round


@pytest.mark.parametrize("args, says", [
    (["generate"], "--prompt"),
    (["generate", "--prompt", "  "], "--prompt is empty"),
    (["generate", "--prompt", "x", "--k", "0"], "--k must be in [1, 32]"),
    (["generate", "--prompt", "x", "--k", "four"], "--k must be a whole number"),
    (["generate", "--prompt", "x", "--temperature", "-1"], "--temperature"),
    (["generate", "--prompt", "x", "--top-p", "0"], "--top-p"),
    (["generate", "--prompt", "x", "--max-new-tokens", "100000"], "--max-new-tokens"),
    (["generate", "--prompt", "x", "--adaptive", "2"], "--adaptive"),
    (["generate", "--prompt", "x", "--draft", "bad id!!", "--target", "Qwen/Qwen2.5-1.5B"], "invalid model id"),
    (["bench", "--k", "0"], "K"),
    (["bench", "--lookup-k", "33"], f"--lookup-k must be in [1, {MAX_K}]"),
    (["generate", "--prompt", "x", "--lookup-k", "5"], "--lookup-k sets the lookup rounds of --drafter hybrid"),
    (["generate", "--prompt", "x", "--drafter", "hybrid", "--lookup-k", "0"], f"--lookup-k must be in [1, {MAX_K}]"),
    (["agreement", "--k", "33"], f"--k must be in [1, {MAX_K}]"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_clear_line(args, says, capsys, monkeypatch):
    """In process through `python -m specviz`'s own main (a subprocess each costs seconds of torch import):
    exit code 2, one error line, no traceback, and no model loaded (the loaders raise if reached)."""
    from specviz.__main__ import main

    forbid_loading(monkeypatch, pair_loader="invalid model id" not in says)
    assert main(args) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if "error" in line]
    assert len(errors) == 1 and says in errors[0], captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_a_real_python_dash_m_specviz_exits_2_with_one_line_before_loading_models():
    """End to end, once: the interpreter's exit code and stderr of `python -m specviz` with a bad argument.

    The in-process cases above prove every argument; this proves __main__ hands their code to the shell."""
    done = subprocess.run([sys.executable, "-m", "specviz", "generate", "--prompt", "x", "--k", "0"],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"specviz: error: argument --k: --k must be in [1, {MAX_K}], got 0"]
    assert done.stdout == ""


def test_round_line_marks_each_verdict():
    t = lambda i, ok: DraftToken(i, "x", 0.5, 0.4, 0.8, 0.9 if not ok else 0.1, ok, 0.5, 0.4)  # noqa: E731
    rnd = Round(index=2, drafted=[t(1, True), t(2, False), t(3, False)], rejected_at=1,
                correction=Choice(9, "y", 0.7), bonus=None, emitted=[1, 9], draft_seconds=0.1,
                verify_seconds=0.2)
    line = round_line(rnd, lambda ids: "".join(map(str, ids)))
    assert "round   3" in line and "[✓✗·]" in line and "+2 (correction)" in line and "'19'" in line


def never_loads(*args, **kwargs):
    raise AssertionError("models must not load on bad arguments")


def forbid_loading(monkeypatch, pair_loader: bool = True):
    """Loading a model raises: transformers' from_pretrained always, and the pair's loader unless the case is one
    that load_pair itself checks (a model id's spelling) before it loads anything."""
    import specviz.models.loading
    from transformers import AutoModelForCausalLM, PreTrainedModel

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", never_loads)
    monkeypatch.setattr(PreTrainedModel, "from_pretrained", never_loads)
    if pair_loader:
        monkeypatch.setattr(specviz.models.loading, "load_pair", never_loads)


@pytest.mark.parametrize("main, argv, prefix, says", [
    (generate.main, ["generate", "--prompt", "x", "--k", str(MAX_K + 1)], "specviz: error:", f"[1, {MAX_K}]"),
    (generate.main, ["generate", "--prompt", "x", "--max-new-tokens", str(CLI_MAX_NEW_TOKENS + 1)],
     "specviz: error:", "--max-new-tokens"),
    (generate.main, ["generate", "--prompt", "x", "--bogus"], "specviz: error:", "--bogus"),
    (agreement.main, ["--k", "0"], "specviz agreement: error:", f"--k must be in [1, {MAX_K}]"),
    (agreement.main, ["--k", "two"], "specviz agreement: error:", "--k must be a whole number"),
    (agreement.main, ["--max-new-tokens", str(CLI_MAX_NEW_TOKENS + 1)], "specviz agreement: error:",
     f"--max-new-tokens must be in [1, {CLI_MAX_NEW_TOKENS}]"),
    (agreement.main, ["--limit-prompts", "0"], "specviz agreement: error:", "--limit-prompts"),
    (agreement.main, ["--prompts", "/nonexistent/prompts.jsonl"], "specviz agreement: error:",
     "prompts file not found"),
    (agreement.main, ["--dtype", "fp8"], "specviz agreement: error:", "invalid choice"),
    (agreement.main, ["--drafter", "oracle"], "specviz agreement: error:", "invalid choice"),
    (generate.main, ["generate", "--prompt", "x", "--drafter", "oracle"], "specviz: error:", "--drafter"),
    (generate.main, ["generate", "--prompt", "x", "--drafter", "ngram", "--adaptive", "0.6"], "specviz: error:",
     "--adaptive"),
    (costs.main, ["--draft-shape", "qwen2.5-0.5b"], "specviz costs: error:", "--target-shape"),
    (prepare.main, ["--now"], "specviz prepare: error:", "--now"),
])
def test_every_command_returns_2_with_one_line(main, argv, prefix, says, capsys, monkeypatch):
    """In process, so many cases stay cheap: each main returns 2 and prints exactly one line."""
    forbid_loading(monkeypatch)
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(prefix) and says in err[0], captured.err
    assert captured.out == ""


def test_agreement_reports_a_bad_prompts_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\nnot json\n', encoding="utf-8")
    assert agreement.main(["--prompts", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.jsonl:2" in err[0]


@pytest.mark.parametrize("command", ["generate", "bench", "agreement", "costs", "prepare"])
def test_help_exits_0(command, capsys, monkeypatch):
    """In process through `python -m specviz`'s main: usage on stdout, nothing on stderr, no model loaded."""
    from specviz.__main__ import main

    forbid_loading(monkeypatch)
    assert main([command, "--help"]) == 0
    captured = capsys.readouterr()
    assert "usage:" in captured.out and captured.err == ""


def test_round_line_names_a_prompt_lookup_round():
    t = lambda i, ok: DraftToken(i, "x", 1.0, 0.9, 1.0, 0.1, ok, 1.0, 0.9, source="ngram")  # noqa: E731
    rnd = Round(index=0, drafted=[t(1, True), t(2, True)], rejected_at=None, correction=None,
                bonus=Choice(3, "z", 0.9), emitted=[1, 2, 3], draft_seconds=0.0, verify_seconds=0.2, drafter="hybrid")
    assert "[✓✓] ngram  +3 (bonus)" in round_line(rnd, lambda ids: "")
    rnd.drafted = [DraftToken(1, "x", 0.5, 0.4, 0.8, 0.1, True, 0.5, 0.4)]
    assert "ngram" not in round_line(rnd, lambda ids: "")


def test_unknown_command_names_every_command(capsys):
    from specviz.__main__ import main

    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(c in err[0] for c in ("generate", "bench", "agreement", "costs", "prepare"))


def test_prepare_removes_an_old_fp32_copy_and_loads_once(capsys, monkeypatch, tmp_path):
    """Argument handling and reporting only: load_pair is replaced, nothing is assembled."""
    import types

    import specviz.models.loading
    from specviz.models import packaged

    calls = []

    def fake_load_pair(**kwargs):
        calls.append(kwargs)
        for f in (0.0, 0.01, 0.02, 0.02):
            kwargs["progress"](f, "assembling")
        kwargs["progress"](1.0, "models ready")
        return types.SimpleNamespace(target_weights="q4a8", draft_weights="q4a8")

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    old = tmp_path / f"{packaged.PACKAGED_DRAFT.label}-{packaged.PACKAGED_DRAFT.sha256[:8]}"
    old.mkdir()
    (tmp_path / "converted").mkdir()
    (tmp_path / "converted" / "0123.safetensors").write_bytes(b"old")
    (tmp_path / "converted" / "gguf-0123.safetensors").write_bytes(b"new")
    monkeypatch.setattr(prepare, "build_kernels", lambda: "kernels: the line")
    monkeypatch.setattr(specviz.models.loading, "load_pair", fake_load_pair)
    assert prepare.main([]) == 0
    out, err = capsys.readouterr()
    assert calls and calls[0]["device"] == "cpu"
    assert err.splitlines() == ["[  0%] assembling", "[100%] models ready"]
    assert not old.exists() and f"removed {old}" in out
    assert [f.name for f in (tmp_path / "converted").iterdir()] == ["gguf-0123.safetensors"]
    assert f"the packaged pair is prepared in {tmp_path}" in out and out.splitlines()[-1] == "kernels: the line"

    def broken(**kwargs):
        raise specviz.models.loading.ModelLoadError("part 3 is corrupt; reinstall it")

    monkeypatch.setattr(specviz.models.loading, "load_pair", broken)
    assert prepare.main([]) == 1
    assert capsys.readouterr().err.strip() == "specviz prepare: error: part 3 is corrupt; reinstall it"


def test_prepare_builds_the_kernels_or_says_in_one_line_why_not(monkeypatch):
    """The kernels' line: built now, found built, or the reason they cannot run (not a failure: PyTorch's runs)."""
    from specviz.models.quant import q4a8

    monkeypatch.setattr(q4a8, "unavailable", lambda: None)
    monkeypatch.setattr(q4a8, "built", lambda: True)
    assert prepare.build_kernels().startswith("the q4a8 kernels are already built in ")
    monkeypatch.setattr(q4a8, "built", lambda: False)
    assert prepare.build_kernels().startswith("the q4a8 kernels are built in ")
    monkeypatch.setattr(q4a8, "unavailable", lambda: "no C++ compiler (c++) found")
    assert prepare.build_kernels() == ("the q4a8 kernels cannot run here (no C++ compiler (c++) found); the app runs "
                                       "PyTorch's 4-bit kernel instead")


def test_prepare_reads_the_real_cache_layout(monkeypatch, tmp_path):
    """An empty cache is not prepared (and asking assembles nothing)."""
    from specviz.models import packaged

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    assert packaged.is_prepared() is False
    assert list(tmp_path.iterdir()) == []


def test_agreement_runs_the_hybrid_with_its_longer_lookup_rounds_when_asked():
    plain = agreement.methods(agreement.build_parser().parse_args(["--drafter", "hybrid", "model", "--k", "2"]))
    assert plain == [("hybrid K=3", {"k": 3, "drafter": "hybrid"}), ("chain K=2", {"k": 2})]
    longer = agreement.methods(agreement.build_parser().parse_args(["--drafter", "hybrid", "--lookup-k", "5"]))
    assert longer == [("hybrid K=3 lookup 5", {"k": 3, "drafter": "hybrid", "lookup_k": 5})]


def test_generate_writes_a_trace_with_long_lookup_rounds_that_reads_back(tmp_path):
    """`generate --drafter hybrid --lookup-k 7 --json FILE`: the lookup rounds draft past K, so the trace records
    lookup_k and its reader allows up to it (it refused such a file: "drafted 7 tokens, more than K = 2")."""
    from types import SimpleNamespace

    from specviz.cli.generate import _write_trace
    from specviz.engine.sampling import SamplingConfig
    from specviz.generate import speculative_generate
    from specviz.runtime.report import RunReport
    from specviz.trace.records import Trace
    from tiny import tiny_model

    target = tiny_model(11)
    phrase = [3, 9, 4, 12, 7]
    prompt = phrase * 3 + phrase[:3]
    rounds = list(speculative_generate(target, tiny_model(3), prompt, k=2, lookup_k=7, drafter="hybrid",
                                       sampling=SamplingConfig(0.0), max_new_tokens=24))
    assert max(len(r.drafted) for r in rounds) > 2
    args = SimpleNamespace(prompt="p", k=2, max_new_tokens=24, seed=0, adaptive=None, lookup_k=7, drafter="hybrid",
                           json=str(tmp_path / "t.json"))
    pair = SimpleNamespace(draft_name="d", target_name="t", decode=lambda ids: "x", device="cpu", dtype="float32")
    output = [t for r in rounds for t in r.emitted]
    _write_trace(args, pair, prompt, SamplingConfig(0.0), rounds, output, RunReport())
    trace = Trace.from_json((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert (trace.k, trace.lookup_k) == (2, 7) and trace.output_ids == output
