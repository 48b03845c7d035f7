"""The app's input checks and decode worker, without a browser (specviz.ui.inputs, specviz.ui.worker, stream)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from specviz.limits import ADAPTIVE_THRESHOLD, APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_PROMPT_CHARS, APP_MAX_TRACE_BYTES
from specviz.engine.sampling import SamplingConfig
from specviz.trace.records import Trace
from specviz.trace import files
from specviz.trace.files import TraceFormatError
from specviz.ui import inputs, worker
from specviz.ui.inputs import CUSTOM, HUB_PRESETS, PACKAGED, InputError
from specviz.ui.session import PairCache, Run
from specviz.ui.stream import VIEWS, StreamView

ROOT = Path(__file__).resolve().parents[1]


def form(**over):
    values = dict(prompt="hi", raw=False, k=4, adaptive=False, temperature=0.0, top_k=0, top_p=1.0, max_new=16,
                  seed=0, pair=PACKAGED, draft_id="", target_id="", compare_switch=True)
    values.update(over)
    return inputs.run_settings(values)


def test_a_good_form_gives_settings():
    s = form(k="3", max_new=8.0, adaptive=True, temperature=0.7)
    assert (s.k, s.max_new_tokens, s.adaptive_threshold, s.pair_ids) == (3, 8, ADAPTIVE_THRESHOLD, (None, None))
    assert s.sampling == SamplingConfig(temperature=0.7) and not s.sampling.greedy


@pytest.mark.parametrize("over, message", [
    (dict(prompt="   "), "Please enter a prompt."),
    (dict(prompt="x" * (APP_MAX_PROMPT_CHARS + 1)), f"the limit here is {APP_MAX_PROMPT_CHARS}"),
    (dict(k=0), f"K must be a whole number between 1 and {APP_MAX_K}."),
    (dict(k=2.5), "K must be a whole number"),
    (dict(k="many"), f"K must be a number between 1 and {APP_MAX_K}"),
    (dict(k=float("nan")), f"K must be a number between 1 and {APP_MAX_K}."),
    (dict(max_new=APP_MAX_NEW_TOKENS + 1), "Max new tokens must be a whole number"),
    (dict(seed=-1), "Seed must be a whole number"),
    (dict(top_k=1.5), "Top-k must be a whole number"),
    (dict(temperature=99), "Temperature must be between"),
    (dict(top_p=0), "Top-p must be above 0 and at most 1"),
    (dict(pair=CUSTOM, draft_id="a/b"), "Custom pair: give both a draft and a target Hub id"),
])
def test_bad_fields_raise_input_errors_with_a_message(over, message):
    with pytest.raises(InputError) as e:
        form(**over)
    assert message in str(e.value)


def test_pair_choices_and_ids():
    values = [v for _, v in inputs.pair_choices(gpu=True)]
    assert values[0] == PACKAGED and values[-1] == CUSTOM and set(values[1:-1]) == set(HUB_PRESETS)
    assert not set(inputs.GPU_PRESETS) & {v for _, v in inputs.pair_choices(gpu=False)}   # no GPU pair on a CPU
    assert inputs.pair_choices(packaged_label="mine")[0] == ("mine", PACKAGED)
    preset = next(iter(HUB_PRESETS))
    assert inputs.pair_ids(preset, "", "") == HUB_PRESETS[preset]
    assert inputs.pair_ids(CUSTOM, " a/d ", "a/t") == ("a/d", "a/t")
    assert inputs.pair_ids(None, "", "") == (None, None)


def sweep_form(k_lo, k_hi, sweep_tokens):
    return dict(prompt="p", raw=False, temperature=0.0, top_k=0, top_p=1.0, seed=0, pair=PACKAGED, draft_id="",
                target_id="", k_lo=k_lo, k_hi=k_hi, sweep_tokens=sweep_tokens)


def test_sweep_form_refuses_a_k_range_the_wrong_way_round():
    s = inputs.sweep_settings(sweep_form(2, 5, 16))
    assert s.ks == [2, 3, 4, 5] and s.n_tokens == 16
    with pytest.raises(InputError, match=r"smallest K \(5\) is larger than the largest K \(2\)"):
        inputs.sweep_settings(sweep_form(5, 2, 16))
    assert set(inputs.field_errors(sweep_form(5, 2, 16))) == {"k_lo"}
    assert inputs.sweep_settings(sweep_form(3, 3, 16)).ks == [3]
    with pytest.raises(InputError, match="Tokens per run"):
        inputs.sweep_settings(sweep_form(1, 2, 3))


def test_prompt_must_fit_the_model_context():
    cfg = SimpleNamespace(max_position_embeddings=32)
    pair = SimpleNamespace(target=SimpleNamespace(config=cfg), encode=lambda s: [1] * len(s),
                           encode_chat=lambda s: [0] + [1] * len(s))
    assert inputs.encode_prompt(pair, "abc", True, 8, 4) == [1, 1, 1]
    with pytest.raises(InputError, match=r"must stay under 19 tokens \(model context 32\)"):
        inputs.encode_prompt(pair, "x" * 25, False, 8, 4)
    with pytest.raises(InputError, match="encodes to no tokens"):
        inputs.encode_prompt(pair, "", True, 8, 4)


def test_trace_files_are_size_checked_then_parsed(tmp_path, monkeypatch):
    good = tmp_path / "t.json"
    good.write_text(Trace(prompt="p", prompt_ids=[1], draft_model="d", target_model="t", k=2, max_new_tokens=4,
                          seed=0, sampling={"temperature": 0.0}).to_json())
    assert inputs.read_trace(str(good)).greedy
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "nope"}))
    with pytest.raises(TraceFormatError):
        inputs.read_trace(str(bad))
    monkeypatch.setattr(files, "APP_MAX_TRACE_BYTES", 10)   # where the one size check reads it
    with pytest.raises(TraceFormatError, match="the limit is 0 MB"):
        inputs.read_trace(str(good))
    # One number everywhere (20 MiB was said "21 MB" while the docs say 20 MB).
    assert APP_MAX_TRACE_BYTES == 20_000_000 and "at most 20 MB" in (ROOT / "docs" / "reference.md").read_text()


def test_pair_cache_loads_once_and_keeps_the_newest():
    calls = []
    cache = PairCache(lambda d, t, progress: calls.append((d, t)) or (d, t), max_pairs=1)
    assert cache.get(None, None) == cache.get(None, None) == (None, None)
    cache.get("a", "b")
    cache.get(None, None)
    assert calls == [(None, None), ("a", "b"), (None, None)]


def test_pair_cache_lets_the_oldest_pair_go_before_loading_another():
    """Never more than max_pairs pairs alive, not even while the next one loads (memory of a third)."""
    held = []
    cache = PairCache(lambda d, t, progress: held.append(len(cache._pairs)) or (d, t), max_pairs=2)
    for ids in [("a", "b"), ("c", "d"), ("e", "f"), ("a", "b")]:
        cache.get(*ids)
    assert held == [0, 1, 1, 1] and list(cache._pairs) == [("e", "f"), ("a", "b")]


# ---------------------------------------------------------------- the worker's events
def tiny_job(tiny_pair, compare=True, max_new=12):
    target, draft = tiny_pair
    pair = SimpleNamespace(target=target, draft=draft, tokenizer=None, eos_token_ids=[])
    return worker.DecodeJob(pair, [1, 2, 3], 3, SamplingConfig(), max_new, 0, compare=compare)


def test_worker_reports_typed_events_in_order(tiny_pair):
    events = [e for batch in worker.batches(worker.start(tiny_job(tiny_pair), Run())) for e in batch]
    kinds = [type(e).__name__ for e in events]
    first_spec_done = kinds.index("SpecDone")
    assert set(kinds[:first_spec_done]) == {"RoundDone"}
    assert kinds[first_spec_done:] == ["SpecDone", "BaselineProgress", "BaselineProgress", "BaselineProgress",
                                       "BaselineDone", "Finished"]
    rounds = [e.round for e in events if isinstance(e, worker.RoundDone)]
    steps = next(e for e in events if isinstance(e, worker.BaselineDone)).steps
    # greedy: the speculative output is the target's own
    assert [t for r in rounds for t in r.emitted] == [s.token_id for s in steps]


def test_worker_stops_and_reports_errors(tiny_pair):
    run = Run()
    run.stop.set()
    events = [e for b in worker.batches(worker.start(tiny_job(tiny_pair), run)) for e in b]
    # Stop before the prompt is read: not even one round (the prefill hears it), and no baseline after Stop
    assert [type(e).__name__ for e in events] == ["SpecDone", "Finished"]
    broken = worker.DecodeJob(SimpleNamespace(target=None, draft=None, tokenizer=None), [1], 2, SamplingConfig(), 4, 0)
    events = [e for b in worker.batches(worker.start(broken, Run())) for e in b]
    assert isinstance(events[-2], worker.Failed) and isinstance(events[-1], worker.Finished)


def test_stream_view_throttles_charts_and_finishes_with_them(tiny_pair):
    from specviz import speculative_generate

    target, draft = tiny_pair
    rounds = list(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=12, seed=0))
    view = StreamView("prompt", greedy=True, chart_interval_s=3600)
    assert set(view.start()) == {"live", "log"}
    view.add(rounds[0])
    first = view.progress()
    assert {"pos_plot", "time_plot"} <= set(first)          # the first update draws the charts
    view.add(rounds[1])
    assert "pos_plot" not in view.progress()                 # then not again within the interval
    final = view.final(prefill_seconds=0.1, baseline_tps=1.0)
    assert {"live", "log", "metrics", "pos_plot", "time_plot", "law_plot", "cost_plot"} == set(final) \
        and set(final) <= set(VIEWS)
    assert 'data-state="final"' in final["metrics"] and 'data-metric="speedup"' in final["metrics"]


def test_a_live_run_sends_its_round_log_at_the_end_only(tiny_pair):
    """ The tiles keep their pace, the log (re-parsed whole by the browser) waits for the end; no round lost."""
    from specviz import speculative_generate

    target, draft = tiny_pair
    rounds = list(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=12, seed=0))
    view = StreamView("prompt", greedy=True, chart_interval_s=0, stream_charts=False, live_log=False)
    assert "log" in view.start()
    for rnd in rounds:
        view.add(rnd)
        update = view.progress()
        assert "metrics" in update and "live" in update and "log" not in update
    final = view.final()
    assert final["log"].count('class="sv-card" data-round=') == len(rounds) >= 2
    assert StreamView("prompt", greedy=True, chart_interval_s=0, stream_charts=False).progress().get("log")


# ---------------------------------------------------------------- refused, never clamped (the new-user issue)
@pytest.mark.parametrize("over, message", [
    (dict(k=17), f"K must be a whole number between 1 and {APP_MAX_K}."),
    (dict(temperature=-1), "Temperature must be between 0 and 2"),
    (dict(temperature=2.5), "Temperature must be between 0 and 2 (0 = greedy)."),
    (dict(temperature="hot"), "Temperature must be a number"),
    (dict(temperature=float("nan")), "Temperature must be a number"),
    (dict(top_p=1.5), "Top-p must be above 0 and at most 1"),
    (dict(top_p=None), "Top-p must be a number"),
    (dict(top_k=-5), "Top-k must be a whole number"),
    (dict(max_new=100_000), "Max new tokens must be a whole number between 1 and 512"),
    (dict(k=None), "K must be a number"),
    (dict(pair=CUSTOM, draft_id="a" * 300, target_id="a/b"), "is an invalid model id"),
    (dict(pair=CUSTOM, draft_id="o/" + "n" * 97, target_id="a/b"), "is an invalid model id"),
    (dict(pair=CUSTOM, draft_id="http://example.com/x", target_id="a/b"), "not a web address"),
    (dict(pair=CUSTOM, draft_id="a/b", target_id="../../etc/passwd"), "Target model: “../../etc/passwd” is an invalid"),
    (dict(pair=CUSTOM, draft_id="/abs/path", target_id="a/b"), "invalid model id"),
])
def test_out_of_range_values_are_refused_with_one_sentence(over, message):
    with pytest.raises(InputError) as e:
        form(**over)
    assert message in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 300


def test_field_errors_name_each_bad_field_for_the_page():
    values = dict(prompt="x" * 9000, k=0, max_new=4, temperature=-1, top_p=1.0, top_k=-5, seed=0, pair=CUSTOM,
                  draft_id="http://example.com/x", target_id="Qwen/Qwen2.5-1.5B-Instruct", k_lo=1, k_hi=17,
                  sweep_tokens=2)
    errors = inputs.field_errors(values)
    assert set(errors) == {"prompt", "k", "temperature", "top_k", "draft_id", "k_hi", "sweep_tokens"}
    assert "9000 characters" in errors["prompt"] and "not a web address" in errors["draft_id"]
    assert inputs.field_errors(dict(prompt="hi", k=4, temperature=0.7, top_p=0.9, pair=PACKAGED, draft_id="")) == {}
    assert inputs.pair_ids(CUSTOM, "Qwen/Qwen2.5-0.5B-Instruct", "gpt2") == ("Qwen/Qwen2.5-0.5B-Instruct", "gpt2")


def test_only_json_traces_and_messages_in_the_pages_language(tmp_path):
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    with pytest.raises(TraceFormatError, match="is not a trace: choose a .json file"):
        inputs.read_trace(str(txt))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "specviz-trace", "version": 1, "k": -3, "rounds": []}))
    with pytest.raises(TraceFormatError) as e:
        inputs.read_trace(str(bad))
    assert "missing" in inputs.error_message(e.value)
    assert inputs.error_message(e.value, "es") == e.value.text("es")


def test_sweep_summary_says_when_no_k_beats_the_target():
    from specviz.ui.tabs.sweep import step_line, summary
    from specviz.ui.worker import Progress

    rows = [SimpleNamespace(k=k, tokens_per_s=tps, speedup=tps / 10) for k, tps in [(1, 7.0), (2, 8.0)]]
    slow = SimpleNamespace(rows=rows, best_k=2, target_tokens_per_s=10.0)
    assert summary(slow, 16, "en").startswith("None faster than the target alone: the fastest, K = 2")
    fast = SimpleNamespace(rows=rows, best_k=2, target_tokens_per_s=4.0)
    assert summary(fast, 16, "en").startswith("Best K = 2")
    assert step_line(None, [1, 2], "0", "en") == "Sweep step 1 of 4: timing one forward pass of each model… 0 s"
    assert "K = 2" in step_line(Progress(3 / 4, "speculative decoding, K = 2"), [1, 2], "3", "en")


def test_a_step_in_a_thread_reports_progress_and_hears_stop():
    import threading

    run = Run()
    release = threading.Event()

    def slow(progress):
        progress(0.0, "first")
        release.wait(5)
        progress(0.5, "second")       # Stop was pressed meanwhile: this raises Stopped
        return "never"

    events = worker.call(slow, run)
    seen = []
    for batch in worker.batches(events, tick=0.05):
        seen.append(batch)
        if not batch and not run.stop.is_set():      # an empty batch: the tick while the step is busy
            run.stop.set()
            release.set()
    flat = [e for b in seen for e in b]
    assert [] in seen and isinstance(flat[0], worker.Progress)
    assert isinstance(flat[-2], worker.Failed) and isinstance(flat[-2].error, worker.Stopped)
    assert worker.call(lambda progress: 42, Run()).get(timeout=5) == worker.Result(42)


def test_stop_while_queued_stops_the_run_before_it_starts():
    from specviz.ui import session

    me, other = SimpleNamespace(session_hash="me-1"), SimpleNamespace(session_hash="other-1")
    busy = session.new_run(other)
    assert session.submit(me) == (0, 1)               # nobody waiting ahead, one run using the models
    session.stop_run(me)
    assert session.new_run(me).stop.is_set()          # it starts stopped
    session.submit(me)
    assert not session.new_run(me).stop.is_set()      # a later run is not affected
    session.end_run(busy)
    session.end_session(me)
    session.end_session(other)
    assert busy.stop.is_set()


def test_lookup_k_is_for_the_hybrid_drafters_and_bounded():
    """0 or empty: as K; 1 to APP_MAX_K with a hybrid drafter; refused beside its box otherwise, in both languages."""
    from specviz.limits import APP_MAX_K

    base = {"prompt": "x", "raw": False, "k": 3, "adaptive": False, "temperature": 0, "top_k": 0, "top_p": 1,
            "max_new": 8, "seed": 0, "pair": PACKAGED, "draft_id": "", "target_id": "", "compare_switch": False}
    assert inputs.run_settings({**base, "drafter": "hybrid", "lookup_k": 0}).lookup_k is None
    assert inputs.run_settings({**base, "drafter": "hybrid"}).lookup_k is None
    assert inputs.run_settings({**base, "drafter": "hybrid_trimmed", "lookup_k": "6"}).lookup_k == 6
    assert inputs.run_settings({**base, "drafter": "model", "lookup_k": 0}).lookup_k is None
    for drafter, value in (("model", 5), ("ngram", 5), ("tree", 2), ("hybrid", APP_MAX_K + 1), ("hybrid", 2.5),
                           ("hybrid", -1), ("hybrid", "many")):
        with pytest.raises(InputError):
            inputs.run_settings({**base, "drafter": drafter, "lookup_k": value})
        assert "lookup_k" in inputs.field_errors({**base, "drafter": drafter, "lookup_k": value})
    es = inputs.field_errors({**base, "drafter": "model", "lookup_k": 5}, "es")["lookup_k"]
    assert es.startswith("La K de búsqueda") and es != inputs.field_errors({**base, "drafter": "model",
                                                                           "lookup_k": 5})["lookup_k"]


# ---------------------------------------------------------------- GGUF pairs of the server's models folder

def _models_folder(tmp_path, monkeypatch):
    import numpy as np
    from gguf import GGMLQuantizationType as T

    from gguf_blocks import q4k_blocks, write_gguf

    folder = tmp_path / "models"
    folder.mkdir()
    for name, rows, width in (("small.gguf", 64, 256), ("large.gguf", 64, 512), ("other-vocab.gguf", 32, 768)):
        write_gguf(folder / name, {"token_embd.weight": (q4k_blocks(rows, width), T.Q4_K),
                                   "output_norm.weight": (np.ones(width, np.float32), T.F32)})
    (folder / "notes.gguf").write_text("not a GGUF file")
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(folder))
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    return folder


def test_the_models_folder_offers_its_gguf_pairs_by_name_with_their_sizes(tmp_path, monkeypatch):
    folder = _models_folder(tmp_path, monkeypatch)
    offered = {value: label for label, value in inputs.pair_choices("en")}
    assert "gguf:small.gguf:large.gguf" in offered      # the smaller drafts for the larger, same token rows
    assert not any("other-vocab" in v or "notes" in v or v == "gguf:large.gguf:small.gguf" for v in offered)
    label = offered["gguf:small.gguf:large.gguf"]
    assert "small.gguf → large.gguf" in label and " GB" in label and str(folder) not in label   # no server path
    assert "small.gguf → large.gguf" in dict((v, lab) for lab, v in inputs.pair_choices("es"))["gguf:small.gguf:large.gguf"]
    assert inputs.pair_ids("gguf:small.gguf:large.gguf", None, None) == (str(folder / "small.gguf"),
                                                                         str(folder / "large.gguf"))


@pytest.mark.parametrize("value", ["gguf:small.gguf:/etc/passwd", "gguf:../small.gguf:large.gguf",
                                   "gguf:large.gguf:small.gguf", "gguf:small.gguf:other-vocab.gguf"])
def test_a_gguf_pair_the_folder_does_not_offer_is_refused(tmp_path, monkeypatch, value):
    _models_folder(tmp_path, monkeypatch)
    with pytest.raises(inputs.InputError):
        inputs.pair_ids(value, None, None)


def test_without_a_models_folder_no_gguf_pair_is_offered(monkeypatch):
    monkeypatch.delenv("SPECVIZ_MODELS_DIR", raising=False)
    assert not [v for _, v in inputs.pair_choices("en") if v.startswith("gguf:")]
