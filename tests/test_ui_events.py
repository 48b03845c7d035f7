"""specviz.ui.events: a form's inputs reach an event function as one {name: value}, zipped once by name.

And a live run's page updates come at a bounded rate, each from the newest state, and yet the trace, the
round log and a replay hold every round (tiny pair, event functions driven directly).
"""
from __future__ import annotations

import inspect
import queue
import re
import threading
import time
from types import SimpleNamespace

import gradio as gr
import pytest
from gradio.helpers import special_args

from specviz.ui import inputs, pays, worker
from specviz.ui.events import bind
from specviz.ui.inputs import PACKAGED
from specviz.ui.session import AppContext, PairCache, Run
from specviz.ui.stream import AFTER_RUN_VIEWS, RUN_VIEWS, VIEWS, after_run_updates
from specviz.ui.tabs import generate, trace_files
from tests.browser.tiny_app import TinyPair

FORM = dict(prompt="the cat sat on the mat", raw=False, k=2, adaptive=False, temperature=0.0, top_k=0, top_p=1.0,
            max_new=40, seed=0, pair=PACKAGED, draft_id="", target_id="", compare_switch=True, drafter="model",
            compile="auto")


def test_a_bound_form_function_takes_the_inputs_by_position_and_gets_them_by_name():
    seen = {}

    def submitted(ctx: AppContext, form: dict, request: gr.Request):
        seen.update(form=form, request=request, ctx=ctx)
        return {"status": "ok"}

    ctx = AppContext(cache=PairCache(lambda d, t, p: None))
    event = bind(submitted, ctx, {"status": "STATUS"}, form=inputs.RUN_FORM)
    assert list(inspect.signature(event).parameters) == [*inputs.RUN_FORM, "request"]
    values = list(range(len(inputs.RUN_FORM)))
    request = SimpleNamespace(session_hash="x")
    assert event(*values, request) == {"STATUS": "ok"}
    assert seen["form"] == dict(zip(inputs.RUN_FORM, values)) and seen["request"] is request and seen["ctx"] is ctx
    # Gradio finds the request parameter where it will insert the request: after the form's values.
    filled, *_ = special_args(event, list(values), request="REQ")
    assert filled == [*values, "REQ"]


def test_the_forms_name_only_fields_the_page_has_and_checks_cover_them():
    checked = set(inputs.FIELD_CHECKS)
    assert {"prompt", "k", "max_new", "seed", "temperature", "top_k", "top_p", "drafter", "compile"} <= checked
    assert {"k_lo", "k_hi", "sweep_tokens"} <= checked & set(inputs.SWEEP_FORM)
    assert len(set(inputs.RUN_FORM)) == len(inputs.RUN_FORM) and len(set(inputs.SWEEP_FORM)) == len(inputs.SWEEP_FORM)


# ---------------------------------------------------------------- a bounded rate, no round lost
def test_batches_come_at_most_once_per_interval_and_hold_every_event_in_order():
    events: queue.Queue = queue.Queue()

    def produce():   # an event every 5 ms: far faster than the interval
        for i in range(40):
            events.put(worker.RoundDone(i))
            time.sleep(0.005)
        events.put(worker.Finished())

    threading.Thread(target=produce, daemon=True).start()
    interval, starts, got = 0.1, [], []
    for batch in worker.batches(events, tick=1.0, interval=interval):
        starts.append(time.monotonic())
        got += batch
    assert [e.round for e in got if isinstance(e, worker.RoundDone)] == list(range(40))
    assert isinstance(got[-1], worker.Finished)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(g >= interval * 0.95 for g in gaps), gaps
    # 40 events over >= 0.2 s: without the interval every event could come alone (41 batches)
    assert len(starts) <= 0.2 / interval + 8, len(starts)


def _no_costs(monkeypatch):
    """The "cannot pay" forwards are timed after a run: not what these tests are about."""
    monkeypatch.setattr(pays, "wanted", lambda pair, drafter, compiled: False)


def _run(pair, rate, **over):
    ctx = AppContext(cache=PairCache(lambda d, t, progress: pair), tick_s=0.05, live_updates_per_s=rate)
    updates = list(generate.generate(ctx, {**FORM, **over}, request=SimpleNamespace(session_hash=f"ev-{rate}")))
    return ctx, updates


def _reference_rounds(pair, **over):
    """The same job through the API's path (the worker, nothing drawn): greedy, so the same rounds."""
    from specviz.ui import api

    s = inputs.run_settings({**FORM, **over})
    ids = inputs.encode_prompt(pair, s.prompt, s.raw, s.max_new_tokens, s.k)
    rounds, _, steps = api.decode(worker.DecodeJob(pair, ids, s.k, s.sampling, s.max_new_tokens, s.seed, True))
    return rounds, steps


def _shown_rounds(html: str) -> list[int]:
    return sorted({int(n) for n in re.findall(r'data-round="(\d+)"', html)})


@pytest.mark.parametrize("rate", [2.0, None])
def test_throttled_run_keeps_every_round_in_trace_log_live_text_and_replay(monkeypatch, rate):
    _no_costs(monkeypatch)
    pair = TinyPair(0.02)   # about 0.03 s a round: many rounds between two updates at 2 a second
    ctx, updates = _run(pair, rate)
    final = updates[-1]
    trace = final["trace"]
    rounds, steps = _reference_rounds(pair)
    assert [r.emitted for r in trace.rounds] == [r.emitted for r in rounds] and len(rounds) >= 8
    assert trace.output_ids == [s.token_id for s in steps]          # greedy: the target's own output
    n = len(trace.rounds)
    assert _shown_rounds(final["log"]) == list(range(1, n + 1))      # a card for every round (under the log's limit)
    assert final["live"].count('class="sv-round') == n                # every round in the live text
    assert "identical" in final["compare"] and 'data-counts="decode"' in final["compare"]
    for update in updates:                                             # the run's event updates its own views only
        assert set(update) <= set(RUN_VIEWS)
    after = after_run_updates(trace)
    assert set(after) == set(AFTER_RUN_VIEWS) and set(RUN_VIEWS) | set(AFTER_RUN_VIEWS) == set(VIEWS)
    # the target alone's time per token reaches the per-round time chart as its marks
    assert final["target_token_s"] > 0
    marks = [d for d in after_run_updates(trace, target_token_s=final["target_token_s"])["cost_plot"].data
             if d.type == "scatter"]
    assert len(marks) == 1 and len(marks[0].y) == len(trace.rounds)
    # the replay of the trace the page made shows every round again
    path = ctx.write_trace(trace, SimpleNamespace(session_hash="replay"))
    replayed = list(trace_files.replay(AppContext(cache=ctx.cache, replay_delay=0.0), path,
                                       request=SimpleNamespace(session_hash="replay")))
    assert _shown_rounds(replayed[-1]["log"]) == list(range(1, n + 1))
    assert replayed[-1]["output"] == trace.output_text


def test_live_updates_are_bounded_by_the_rate_and_the_last_round_is_shown(monkeypatch):
    _no_costs(monkeypatch)
    pair = TinyPair(0.02)
    rate = 2.0
    t0 = time.monotonic()
    _, updates = _run(pair, rate)
    seconds = time.monotonic() - t0
    live = [u for u in updates if "live" in u]
    # the first (empty) view, at most one update per interval while it ran, and the final views
    assert len(live) <= seconds * rate + 3, (len(live), seconds)
    _, unbounded = _run(pair, None)
    assert len([u for u in unbounded if "live" in u]) > len(live)      # the bound is what made them fewer
    n = len(updates[-1]["trace"].rounds)
    assert updates[-1]["live"].count('class="sv-round') == n and "Done" in updates[-1]["status"]
