"""The benchmark on tiny models: shared K sweep, the CLI's files, argument errors."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys

import pytest
import torch

from specviz import bench, theory
from specviz.cli import bench as bench_cli
from specviz.models.loading import ModelPair
from specviz.engine.options import DecodeOptions
from specviz.engine.sampling import SamplingConfig
from tiny import tiny_model

PROMPT = [3, 1, 4, 1, 5]


pytestmark = pytest.mark.usefixtures("one_thread")   # the fixture lives in conftest.py


@pytest.fixture(scope="module")
def pair():
    target = tiny_model(11)
    # A draft that mostly agrees with the target: acceptances and rejections both happen.
    draft = tiny_model(11)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(0.3 * torch.randn(w.shape, generator=g) * w.std().clamp_min(1e-3))
    return BenchPair(target=target, draft=draft, tokenizer=None, name="tiny → tiny", device=torch.device("cpu"),
                     dtype=torch.float32, load_seconds=0.0)


class BenchPair(ModelPair):
    """A real ModelPair around tiny models, with no tokenizer: its chat encoding maps characters to the 16 ids."""

    def encode_chat(self, text):
        return [ord(ch) % 16 for ch in text][:10] or [0]


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_sweep_k_rows_are_sane(pair, temperature):
    fractions = []
    sw = bench.sweep_k(pair.target, pair.draft, PROMPT, [1, 2, 4], SamplingConfig(temperature), 12,
                       progress=lambda f, m: fractions.append(f))
    assert [r.k for r in sw.rows] == [1, 2, 4]
    assert sw.target_tokens_per_s > 0 and sw.best_k in (1, 2, 4)
    assert fractions[0] == 0.0 and fractions[-1] == 1.0 and fractions == sorted(fractions)
    for r in sw.rows:
        assert r.new_tokens == 12
        assert 0.0 <= r.acceptance_rate <= 1.0 and 0.0 <= r.alpha <= 1.0
        assert 1.0 <= r.tau <= r.k + 1
        assert r.c > 0 and r.verify_cost > 0
        assert r.theory_speedup == pytest.approx(theory.expected_speedup(r.alpha, r.k, r.c, r.verify_cost))
        assert r.speedup == pytest.approx(r.tokens_per_s / sw.target_tokens_per_s)
    d = sw.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["best_k"] == sw.best_k and len(d["rows"]) == 3


class CountingModel(torch.nn.Module):
    """A model wrapper counting forwards, so a test can see how much work a stopped sweep still did."""

    def __init__(self, model):
        super().__init__()
        self.model, self.calls = model, 0

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)

    def forward(self, *args, **kwargs):
        self.calls += 1
        return self.model(*args, **kwargs)


@pytest.mark.parametrize("stop_after", [2, 30, 60])   # in the costs, in the target-alone run, in a K run
def test_a_stopped_sweep_ends_within_a_round(pair, stop_after):
    """The page's Stop is a flag the sweep asks between rounds: it must not wait for a whole run."""
    target = CountingModel(pair.target)
    flagged = []

    def stop():
        if target.calls >= stop_after and not flagged:
            flagged.append(target.calls)
        return bool(flagged)

    with pytest.raises((bench.RunStopped, bench.PrefillStopped)):
        bench.sweep_k(target, pair.draft, PROMPT, [1, 2, 4], SamplingConfig(), 40, stop=stop)
    assert flagged and target.calls <= flagged[0] + 1, (flagged, target.calls)
    whole = CountingModel(pair.target)
    bench.sweep_k(whole, pair.draft, PROMPT, [1, 2, 4], SamplingConfig(), 40)
    assert whole.calls > stop_after + 40   # the broken variant (no stop) would have run this many


def test_sweep_k_takes_its_options_as_one_object_or_by_name(pair):
    first, then = [], []
    options = bench.SweepOptions(progress=lambda f, m: first.append(f), cost_repeats=1)
    bench.sweep_k(pair.target, pair.draft, PROMPT, [1], SamplingConfig(), 4, options)
    assert first[0] == 0.0 and first[-1] == 1.0
    bench.sweep_k(pair.target, pair.draft, PROMPT, [1], SamplingConfig(), 4, options,
                  progress=lambda f, m: then.append(f))          # a keyword amends the object
    assert then == first
    with pytest.raises(TypeError):
        bench.sweep_k(pair.target, pair.draft, PROMPT, [1], SamplingConfig(), 4, repeats=1)   # not a field


def test_sweep_k_rejects_bad_k(pair):
    with pytest.raises(ValueError):
        bench.sweep_k(pair.target, pair.draft, PROMPT, [0], SamplingConfig(), 4)
    with pytest.raises(ValueError):
        bench.sweep_k(pair.target, pair.draft, PROMPT, [], SamplingConfig(), 4)


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_every_method_emits_the_same_token_count(pair, temperature):
    sampling = SamplingConfig(temperature)
    runs = {m: bench.run_method(m, pair.target, pair.draft, PROMPT, 3,
                                 DecodeOptions(sampling=sampling, max_new_tokens=10, seed=1))
            for m in bench.METHODS}
    assert {r.new_tokens for r in runs.values()} == {10}
    for r in runs.values():
        assert r.tokens_per_s > 0 and r.total_seconds >= r.seconds
    if temperature == 0.0:   # greedy in fp32: every method gives the target's own output
        ref = runs["target"].output_ids
        assert all(r.output_ids == ref for r in runs.values())
    assert runs["hf_assisted"].tau >= 1.0
    assert runs["specviz"].output_ids == runs["specviz_notrace"].output_ids
    assert runs["hf_assisted_default"].tau >= 1.0 and runs["hf_assisted_default"].k is None
    assert runs["hf_prompt_lookup"].k == 3 and runs["hf_prompt_lookup"].tau >= 1.0
    assert runs["specviz_ngram"].lookup_share in (1.0,) or math.isnan(runs["specviz_ngram"].lookup_share)
    assert 0.0 <= runs["specviz_hybrid"].lookup_share <= 1.0 or math.isnan(runs["specviz_hybrid"].lookup_share)


def test_main_writes_results_and_standalone_report(pair, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"category": "code", "prompt": "def f(x):"}\n'
                       '{"category": "qa", "prompt": "why?"}\n', encoding="utf-8")
    out = tmp_path / "out"
    rc = bench_cli.main(["--prompts", str(prompts), "--k", "1", "2", "--max-new-tokens", "8",
                     "--temperature", "0", "0.7", "--repeats", "1", "--out", str(out), "--quiet"],
                    pair_loader=lambda **kw: pair)
    assert rc == 0
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(data["summary"]) == {"0.0", "0.7"}
    for s in data["summary"].values():
        for key in ("best_k", "speedup_vs_target", "ratio_vs_hf_assisted", "achieved_over_theory",
                    "trace_overhead"):
            assert key in s
        assert s["best_k"] in (1, 2)
    # 2 temperatures x 2 prompts x (plain methods + methods with K x 2 K); on a CPU hf_static is left out
    ran = bench.default_methods("cpu")
    plain = [m for m in ran if m not in bench.K_METHODS]
    assert len(data["rows"]) == 2 * 2 * (len(plain) + (len(ran) - len(plain)) * 2)
    assert not any(r["error"] for r in data["rows"])
    assert {"adaptive_speedup_vs_target", "adaptive_ratio_vs_fixed_k"} <= set(data["summary"]["0.0"])
    row_keys = {"prompt_id", "category", "method", "k", "temperature", "repeat", "new_tokens", "seconds",
                "tokens_per_s", "acceptance_rate", "tau", "c", "theory_speedup"}
    for row in data["rows"]:
        assert row_keys <= set(row)
        assert row["new_tokens"] == 8
    assert {r["method"] for r in data["rows"]} == set(bench.default_methods("cpu"))
    assert set(bench.default_methods("cpu")) == set(bench.METHODS) - {"hf_static"}
    for s in data["summary"].values():
        assert s["fastest_alone"] in ("target", "hf_generate")
        assert {"ratio_vs_hf_best", "specviz_best", "hf_best", "speedup_vs_fastest_alone"} <= set(s)
        assert set(s["categories"]) == {"code", "qa"} and s["categories"]["qa"]["prompts"] == 1
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<html" in report and "Plotly" in report
    assert not re.search(r"<script[^>]*\bsrc\s*=", report, re.I), "report must not load external scripts"
    assert "the app's chart" in report   # the app's Throughput-vs-K chart, fed by the same measurements
    printed = capsys.readouterr().out
    assert "specviz_notrace" in printed and "temperature 0.0" in printed
    assert "ratio_vs_hf_best" in printed and "  qa (1 prompt(s))" in printed and "specviz_hybrid" in printed
    assert "By category" in report and "specviz_ngram" in report and "fastest target-alone method" in report


def test_method_subset_and_limit(pair, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": f"prompt {i}"}) for i in range(3)), encoding="utf-8")
    rc = bench_cli.main(["--prompts", str(prompts), "--k", "2", "--max-new-tokens", "4", "--temperature", "0",
                     "--repeats", "1", "--out", str(tmp_path / "o"), "--limit-prompts", "1", "--quiet",
                     "--methods", "target", "specviz", "--no-warmup"], pair_loader=lambda **kw: pair)
    assert rc == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {r["method"] for r in data["rows"]} == {"target", "specviz"}
    assert {r["prompt_id"] for r in data["rows"]} == {"p01"}
    assert data["summary"]["0.0"]["best_k"] == 2


@pytest.mark.parametrize("argv", [
    ["--k", "0"], ["--k", "33"], ["--k", "two"], ["--max-new-tokens", "5000"], ["--max-new-tokens", "0"],
    ["--repeats", "21"], ["--temperature", "-1"], ["--temperature", "nan"], ["--methods", "magic"],
    ["--draft", "a/b"], ["--prompts", "/nonexistent/prompts.jsonl"], ["--bogus"], ["--top-p", "0"],
])
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    def never(**kw):
        raise AssertionError("models must not load on bad arguments")

    assert bench_cli.main(argv, pair_loader=never) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specviz bench: error:")


def test_bad_prompts_file(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\nnot json\n', encoding="utf-8")
    assert bench_cli.main(["--prompts", str(bad)], pair_loader=lambda **kw: None) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err


def test_default_prompts_exist():
    prompts = bench.load_prompts(bench.default_prompts_file())
    assert prompts and all(p.text for p in prompts)
    assert bench.load_prompts(bench.ASSET_PROMPTS)


def test_summary_definitions():
    def row(p, m, k, tps, theory_s=float("nan")):
        return {"prompt_id": p, "category": "c", "method": m, "k": k, "temperature": 0.0, "tokens_per_s": tps,
                "acceptance_rate": 0.5, "alpha": 0.5, "tau": 1.5, "theory_speedup": theory_s, "c": 0.3,
                "matches_target": True, "speedup_vs_target": float("nan")}
    rows = []
    for p, base in (("a", 10.0), ("b", 20.0)):
        rows += [row(p, "target", None, base), row(p, "hf_generate", None, base),
                 row(p, "hf_assisted", 2, base * 1.2), row(p, "hf_assisted", 4, base * 1.1),
                 row(p, "specviz", 2, base * 1.5, 2.0), row(p, "specviz", 4, base * 1.8, 2.0),
                 row(p, "specviz_notrace", 2, base * 1.5), row(p, "specviz_notrace", 4, base * 2.0)]
    s = bench.summarize(rows)["0.0"]
    assert s["best_k"] == 4 and s["hf_assisted_best_k"] == 2
    assert s["speedup_vs_target"] == pytest.approx(1.8)
    assert s["ratio_vs_hf_assisted"] == pytest.approx(1.8 / 1.2)
    assert s["achieved_over_theory"] == pytest.approx(0.9)
    assert s["trace_overhead"] == pytest.approx(0.1)


def test_report_does_not_import_the_bench():
    """The bench imports its report, never the other way round: importing the report leaves the bench unloaded."""
    code = ("import sys, specviz.viz.report; "
            "loaded = [m for m in sys.modules if m == 'specviz.bench' or m.startswith('specviz.bench.')]; "
            "assert not loaded, loaded")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_report_draws_the_adaptive_method_with_the_others():
    """The report reads which methods have a K from the data, so specviz_adaptive gets a line too."""
    from specviz.viz.report import methods_vs_k_figure

    table = [{"method": m, "k": k, "tokens_per_s": tps} for m, k, tps in (
        ("target", None, 10.0), ("specviz", 2, 15.0), ("specviz", 4, 16.0), ("specviz_adaptive", 4, 17.0))]
    fig = methods_vs_k_figure({"0.0": {"table": table}}, "0.0")
    assert [t.name for t in fig.data] == ["target", "specviz", "specviz_adaptive"]


def test_median_and_formatting_agree_on_missing_values():
    from specviz.stats import format_measurement as fmt, median

    assert math.isnan(median([])) and math.isnan(median([None, float("nan")]))
    assert median([3.0, None, 1.0, float("nan"), 2.0]) == 2.0
    assert fmt(None) == "-" and fmt(float("nan"), missing="–") == "–" and fmt(1.234) == "1.23"
    assert bench.format_table({"summary": {}}) == ""


# ---------------------------------------------------------------- the fair peers and the new methods
def test_hf_static_runs_only_where_it_makes_sense():
    assert "hf_static" not in bench.default_methods("cpu")
    assert "hf_static" in bench.default_methods("cuda") and "hf_static" in bench.default_methods("cuda:1")
    assert set(bench.default_methods("cuda")) == set(bench.METHODS)


def test_assisted_default_keeps_transformers_defaults_and_the_draft_config(pair):
    """hf_assisted must not leak its constant K into hf_assisted_default (which sees the config as shipped)."""
    original = pair.draft.generation_config
    before = original.to_dict()
    seen = {}
    generate = pair.target.generate

    def spy(*args, **kwargs):
        gc = kwargs["assistant_model"].generation_config
        seen.setdefault("configs", []).append((gc.num_assistant_tokens, gc.num_assistant_tokens_schedule,
                                               gc.assistant_confidence_threshold))
        seen.setdefault("kwargs", []).append(set(kwargs))
        return generate(*args, **kwargs)

    pair.target.generate = spy
    try:
        for m in ("hf_assisted", "hf_assisted_default"):
            bench.run_method(m, pair.target, pair.draft, PROMPT, 3,
                             DecodeOptions(sampling=SamplingConfig(0.0), max_new_tokens=6))
    finally:
        del pair.target.generate
    assert seen["configs"][0] == (3, "constant", 0.0)
    assert seen["configs"][1] == (None, None, None)   # unset: generate fills in 20, "constant", 0.4
    assert "num_assistant_tokens" not in seen["kwargs"][1]
    assert pair.draft.generation_config is original and original.to_dict() == before


def test_a_failing_method_is_recorded_not_fatal(pair, tmp_path, capsys, monkeypatch):
    from specviz.bench import suite

    real = suite.run_method

    def flaky(method, *args, **kwargs):
        if method == "hf_static":
            raise RuntimeError("static cache unsupported here\nsecond line")
        return real(method, *args, **kwargs)

    monkeypatch.setattr(suite, "run_method", flaky)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "def f(x): return x"}\n', encoding="utf-8")
    rc = bench_cli.main(["--prompts", str(prompts), "--k", "2", "--max-new-tokens", "4", "--temperature", "0",
                     "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet",
                     "--methods", "target", "hf_static", "specviz_ngram"], pair_loader=lambda **kw: pair)
    assert rc == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    bad = [r for r in data["rows"] if r["method"] == "hf_static"]
    assert len(bad) == 1 and bad[0]["error"] == "RuntimeError: static cache unsupported here"
    assert bad[0]["tokens_per_s"] is None
    captured = capsys.readouterr()
    assert "FAILED 1x: RuntimeError" in captured.out
    assert captured.err.count("hf_static failed") == 1   # warm-up and the run: reported once


def _row(p, m, k, tps, category="c", temperature=0.0):
    return {"prompt_id": p, "category": category, "method": m, "k": k, "temperature": temperature,
            "tokens_per_s": tps, "acceptance_rate": 0.5, "alpha": 0.5, "tau": 1.5, "theory_speedup": float("nan"),
            "c": 0.3, "matches_target": True, "speedup_vs_target": float("nan")}


def test_summary_best_of_each_side_fastest_alone_and_categories():
    rows = []
    for p, base, cat in (("a", 10.0, "edit"), ("b", 20.0, "edit"), ("c", 30.0, "chat")):
        edit = cat == "edit"
        rows += [_row(p, "target", None, base, cat), _row(p, "hf_generate", None, base * 1.25, cat),
                 _row(p, "hf_assisted", 2, base * 1.2, cat), _row(p, "hf_assisted_default", None, base * 1.3, cat),
                 _row(p, "hf_prompt_lookup", 2, base * (2.0 if edit else 0.9), cat),
                 _row(p, "specviz", 2, base * 1.5, cat), _row(p, "specviz_notrace", 2, base * 1.6, cat),
                 _row(p, "specviz_ngram", 2, base * (3.0 if edit else 0.8), cat),
                 _row(p, "specviz_ngram", 4, base * (2.5 if edit else 0.7), cat)]
    s = bench.summarize(rows)["0.0"]
    assert s["fastest_alone"] == "hf_generate"
    assert s["speedup_vs_target"] == pytest.approx(1.5)
    assert s["speedup_vs_fastest_alone"] == pytest.approx(1.5 / 1.25)
    assert s["ratio_vs_hf_assisted"] == pytest.approx(1.5 / 1.2)
    # Over all prompts: specviz_ngram K=2 (median 3.0x) beats notrace (1.6x); hf_prompt_lookup (2.0x) is hf's best.
    assert s["specviz_best"] == {"method": "specviz_ngram", "k": 2}
    assert s["hf_best"] == {"method": "hf_prompt_lookup", "k": 2}
    assert s["ratio_vs_hf_best"] == pytest.approx(1.5)
    assert s["methods"]["specviz_ngram"]["speedup_vs_fastest_alone"] == pytest.approx(3.0 / 1.25)
    chat, edit = s["categories"]["chat"], s["categories"]["edit"]
    assert edit["prompts"] == 2 and chat["prompts"] == 1
    assert edit["specviz_best"]["method"] == "specviz_ngram" and edit["ratio_vs_hf_best"] == pytest.approx(1.5)
    assert chat["specviz_best"]["method"] == "specviz_notrace" and chat["hf_best"]["method"] == "hf_assisted_default"
    assert chat["ratio_vs_hf_best"] == pytest.approx(1.6 / 1.3)
    table = {(r["method"], r["k"]): r for r in s["table"]}
    assert table[("hf_generate", None)]["speedup_vs_fastest_alone"] == pytest.approx(1.0)
    text = bench.format_table({"summary": {"0.0": s}})
    assert "vs hf_generate" in text and "  edit (2 prompt(s)): specviz best specviz_ngram K=2" in text


def test_the_headline_says_why_there_is_no_best_when_only_the_traced_specviz_ran():
    """Only `target` and the traced `specviz` ran: the headline names no best speed mode and says why, instead of
    dashes (the traced decoder pays for its trace, so it is no speed mode)."""
    rows = []
    for p, base in (("a", 10.0), ("b", 20.0)):
        rows += [_row(p, "target", None, base), _row(p, "specviz", 2, base * 1.5)]
    s = bench.summarize(rows)["0.0"]
    assert s["specviz_best"] is None
    text = bench.format_table({"summary": {"0.0": s}})
    line = next(x for x in text.splitlines() if x.startswith("overall: "))
    assert "none of its speed modes ran" in line and "specviz best -" not in line


def test_default_prompts_add_the_code_edit_prompts(tmp_path):
    from specviz.bench.prompts import default_prompts, select_categories

    assets = bench.load_prompts(bench.ASSET_PROMPTS)
    edits = [p for p in assets if p.category == "code-edit"]
    assert len(edits) >= 5 and all(("def " in p.text or "class " in p.text) for p in edits)
    shared = tmp_path / "shared.jsonl"
    shared.write_text("\n".join(json.dumps({"category": p.category, "prompt": p.text}) for p in assets[:6]),
                      encoding="utf-8")
    got = default_prompts(shared, bench.ASSET_PROMPTS)
    assert [p.text for p in got[:6]] == [p.text for p in assets[:6]]
    assert sorted(p.text for p in got if p.category == "code-edit") == sorted(p.text for p in edits)
    assert len({p.id for p in got}) == len(got)
    assert default_prompts(tmp_path / "absent.jsonl", bench.ASSET_PROMPTS) == assets
    assert {p.category for p in select_categories(got, ["code-edit"])} == {"code-edit"}
    with pytest.raises(bench.BenchError, match="no prompts in category poetry; the prompts have: "):
        select_categories(got, ["poetry"])


def test_categories_option(pair, tmp_path, capsys):
    rc = bench_cli.main(["--categories", "code-edit", "--limit-prompts", "1", "--k", "2", "--max-new-tokens", "4",
                     "--temperature", "0", "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet", "--no-warmup",
                     "--methods", "target", "hf_prompt_lookup", "specviz_ngram"], pair_loader=lambda **kw: pair)
    assert rc == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {r["category"] for r in data["rows"]} == {"code-edit"}
    assert {r["method"] for r in data["rows"]} == {"target", "hf_prompt_lookup", "specviz_ngram"}
    capsys.readouterr()
    assert bench_cli.main(["--categories", "nope"], pair_loader=lambda **kw: None) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specviz bench: error: no prompts in category nope")


@pytest.mark.parametrize("choice", ["as-loaded", "specviz"])
def test_transformers_assistant_is_the_draft_as_loaded_unless_asked(pair, tmp_path, monkeypatch, choice):
    """Where specviz drafts with int8 weights, transformers' assisted methods get the draft as transformers
    would load it (--hf-assistant as-loaded, the default) or specviz's own (--hf-assistant specviz)."""
    import specviz.cli.bench as cli
    from specviz.bench import measure

    as_loaded = tiny_model(11)
    class Int8Pair(BenchPair):
        def draft_as_loaded(self):
            return as_loaded

    int8_pair = Int8Pair(**{f.name: getattr(pair, f.name) for f in dataclasses.fields(pair)} | {"draft_weights": "int8"})
    assistants = []
    real = measure._run_hf

    def spy(method, target, draft, *args, **kwargs):
        assistants.append((method, draft))
        return real(method, target, draft, *args, **kwargs)

    monkeypatch.setattr(measure, "_run_hf", spy)
    rc = cli.main(["--k", "2", "--max-new-tokens", "4", "--temperature", "0", "--repeats", "1", "--limit-prompts", "1",
                   "--out", str(tmp_path / "o"), "--quiet", "--no-warmup", "--hf-assistant", choice,
                   "--methods", "hf_assisted", "hf_assisted_default", "specviz"], pair_loader=lambda **kw: int8_pair)
    assert rc == 0
    want = as_loaded if choice == "as-loaded" else pair.draft
    assert {m for m, _ in assistants} == {"hf_assisted", "hf_assisted_default"}
    assert all(d is want for _, d in assistants)
    meta = json.loads((tmp_path / "o" / "results.json").read_text())["meta"]
    assert meta["draft_weights"] == "int8" and ("as loaded" in meta["hf_assistant"]) == (choice == "as-loaded")


def test_tree_methods_get_the_verify_cost_at_every_row_count_and_stay_exact(pair, tmp_path, monkeypatch):
    from specviz.bench import suite
    from specviz.engine.tree_drafter import TreeCosts

    real, seen = suite.run_method, {}

    def spy(method, *args, **kwargs):
        seen.setdefault(method, []).append(kwargs.get("tree_costs"))
        return real(method, *args, **kwargs)

    monkeypatch.setattr(suite, "run_method", spy)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "abcabcabc"}\n', encoding="utf-8")
    rc = bench_cli.main(["--prompts", str(prompts), "--k", "3", "--max-new-tokens", "12", "--temperature", "0",
                         "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet", "--no-warmup",
                         "--methods", "target", "specviz_tree", "specviz_hybrid_tree"], pair_loader=lambda **kw: pair)
    assert rc == 0
    assert seen["target"] == [None]
    for method in ("specviz_tree", "specviz_hybrid_tree"):
        (costs,) = seen[method]
        assert isinstance(costs, TreeCosts) and len(costs.verify) == 4 and costs.verify[0] == 1.0 and costs.c > 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {r["method"]: r["matches_target"] for r in data["rows"]} == {
        "target": True, "specviz_tree": True, "specviz_hybrid_tree": True}


def test_lookup_k_reaches_the_hybrid_methods_only_and_is_recorded(pair, tmp_path, monkeypatch):
    from specviz.bench import measure

    real, seen = measure.method_options, {}

    def spy(method, k, options, tree_costs=None, lookup_k=None):
        made = real(method, k, options, tree_costs, lookup_k)
        seen[method] = made.drafting
        return made

    monkeypatch.setattr(measure, "method_options", spy)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "abcabcabcabc"}\n', encoding="utf-8")
    rc = bench_cli.main(["--prompts", str(prompts), "--k", "2", "--lookup-k", "6", "--max-new-tokens", "12",
                         "--temperature", "0", "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet",
                         "--no-warmup", "--methods", "target", "specviz_hybrid", "specviz_notrace"],
                        pair_loader=lambda **kw: pair)
    assert rc == 0
    assert (seen["specviz_hybrid"].k, seen["specviz_hybrid"].lookup_k) == (2, 6)
    assert (seen["specviz_notrace"].k, seen["specviz_notrace"].lookup_k) == (2, None)
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["meta"]["lookup_k"] == 6 and all(r["matches_target"] for r in data["rows"])
