"""The app's input checks and decode worker, without a browser (specviz.ui.inputs, specviz.ui.worker, stream)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from specviz.limits import ADAPTIVE_THRESHOLD, APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_PROMPT_CHARS, APP_MAX_TRACE_BYTES
from specviz.sampling import SamplingConfig
from specviz.trace import Trace, TraceFormatError
from specviz.ui import inputs, worker
from specviz.ui.inputs import CUSTOM, HUB_PRESETS, PACKAGED, InputError
from specviz.ui.session import PairCache, Run
from specviz.ui.stream import VIEWS, StreamView


def form(**over):
    values = dict(prompt="hi", raw=False, k=4, adaptive=False, temperature=0.0, top_k=0, top_p=1.0, max_new=16,
                  seed=0, choice=PACKAGED, draft_id="", target_id="", compare=True)
    values.update(over)
    return inputs.run_settings(**values)


def test_a_good_form_gives_settings():
    s = form(k="3", max_new=8.0, adaptive=True, temperature=0.7)
    assert (s.k, s.max_new_tokens, s.adaptive_threshold, s.pair_ids) == (3, 8, ADAPTIVE_THRESHOLD, (None, None))
    assert s.sampling == SamplingConfig(temperature=0.7) and not s.sampling.greedy


@pytest.mark.parametrize("over, message", [
    (dict(prompt="   "), "Please enter a prompt."),
    (dict(prompt="x" * (APP_MAX_PROMPT_CHARS + 1)), f"the limit here is {APP_MAX_PROMPT_CHARS}"),
    (dict(k=0), f"K must be a whole number between 1 and {APP_MAX_K}, got 0"),
    (dict(k=2.5), "K must be a whole number"),
    (dict(k="many"), f"K must be a number between 1 and {APP_MAX_K}"),
    (dict(k=float("nan")), "K must be a whole number"),
    (dict(max_new=APP_MAX_NEW_TOKENS + 1), "max new tokens must be a whole number"),
    (dict(seed=-1), "seed must be a whole number"),
    (dict(top_k=1.5), "top-k must be a whole number"),
    (dict(temperature=99), "temperature must be between"),
    (dict(top_p=0), "top_p must be in (0, 1]"),
    (dict(choice=CUSTOM, draft_id="a/b"), "Custom pair: give both a draft and a target Hub id"),
])
def test_bad_fields_raise_input_errors_with_a_message(over, message):
    with pytest.raises(InputError) as e:
        form(**over)
    assert message in str(e.value)


def test_pair_choices_and_ids():
    values = [v for _, v in inputs.pair_choices()]
    assert values[0] == PACKAGED and values[-1] == CUSTOM and set(values[1:-1]) == set(HUB_PRESETS)
    assert inputs.pair_choices(packaged_label="mine")[0] == ("mine", PACKAGED)
    preset = next(iter(HUB_PRESETS))
    assert inputs.pair_ids(preset, "", "") == HUB_PRESETS[preset]
    assert inputs.pair_ids(CUSTOM, " a/d ", "a/t") == ("a/d", "a/t")
    assert inputs.pair_ids(None, "", "") == (None, None)


def test_sweep_form_orders_the_k_range():
    s = inputs.sweep_settings("p", False, 0.0, 0, 1.0, 0, PACKAGED, "", "", 5, 2, 16)
    assert s.ks == [2, 3, 4, 5] and s.n_tokens == 16
    with pytest.raises(InputError, match="tokens per run"):
        inputs.sweep_settings("p", False, 0.0, 0, 1.0, 0, PACKAGED, "", "", 1, 2, 3)


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
    monkeypatch.setattr(inputs, "APP_MAX_TRACE_BYTES", 10)
    with pytest.raises(TraceFormatError, match="the limit is 0 MB"):
        inputs.read_trace(str(good))
    assert APP_MAX_TRACE_BYTES == 20 * 1024 * 1024


def test_pair_cache_loads_once_and_keeps_the_newest():
    calls = []
    cache = PairCache(lambda d, t, progress: calls.append((d, t)) or (d, t), max_pairs=1)
    assert cache.get(None, None) == cache.get(None, None) == (None, None)
    cache.get("a", "b")
    cache.get(None, None)
    assert calls == [(None, None), ("a", "b"), (None, None)]


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
    assert [type(e).__name__ for e in events] == ["RoundDone", "SpecDone", "Finished"]   # no baseline after Stop
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
    assert {"live", "log", "metrics", "pos_plot", "time_plot"} == set(final) and set(final) <= set(VIEWS)
    assert 'data-state="final"' in final["metrics"] and 'data-metric="speedup"' in final["metrics"]
