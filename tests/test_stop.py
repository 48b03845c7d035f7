"""Stop within one round: the prefill read in chunks and abandoned, the worker, the bounded live view."""
from __future__ import annotations

import pytest
import torch

from specviz.engine.baseline import autoregressive_generate
from specviz.engine.sampling import SamplingConfig
from specviz.runtime.decoding import PrefillStopped, prefill
from specviz.runtime.report import Reporting, RunReport
from specviz.limits import PREFILL_CHUNK
from specviz.generate import speculative_generate
from tests.tiny import noisy_copy, tiny_model


class Counting:
    """A model wrapper that counts forwards and the positions each one reads."""

    def __init__(self, model):
        self._model, self.widths = model, []

    def __getattr__(self, name):
        return getattr(self._model, name)

    def __call__(self, *args, **kwargs):
        self.widths.append(kwargs["input_ids"].shape[-1])
        return self._model(*args, **kwargs)


def test_a_stoppable_prefill_reads_the_prompt_in_chunks_with_the_same_cache():
    model = tiny_model(1)
    tokens = torch.randint(0, 16, (1, 2 * PREFILL_CHUNK + 7))
    whole, counted = prefill(model, tokens), Counting(model)
    chunked = prefill(counted, tokens, stop=lambda: False)
    assert counted.widths == [PREFILL_CHUNK, PREFILL_CHUNK, 6]
    assert whole.length == chunked.length == tokens.shape[-1] - 1
    for a, b in zip(whole.cache.layers, chunked.cache.layers):
        torch.testing.assert_close(a.keys, b.keys, atol=1e-5, rtol=1e-4)


def test_a_prefill_stops_between_chunks():
    counted, calls = Counting(tiny_model(1)), []

    def stop():
        calls.append(1)
        return len(calls) > 1          # the second chunk is never read

    tokens = torch.randint(0, 16, (1, 3 * PREFILL_CHUNK))
    try:
        prefill(counted, tokens, stop=stop)
    except PrefillStopped:
        pass
    else:
        raise AssertionError("the prefill did not stop")
    assert counted.widths == [PREFILL_CHUNK]


def test_stop_during_the_prefill_ends_both_decoders_without_a_round():
    target = tiny_model(1)
    draft, ids = noisy_copy(target, 2, 0.3), list(range(16)) * 5
    assert list(speculative_generate(target, draft, ids, k=3, max_new_tokens=8, stop=lambda: True)) == []
    assert list(autoregressive_generate(target, ids, max_new_tokens=8, stop=lambda: True)) == []
    # not stopped: the same tokens as an unstoppable run (the chunks change nothing a greedy run can see)
    free = [r.emitted for r in speculative_generate(target, draft, ids, k=3, max_new_tokens=8)]
    assert [r.emitted for r in speculative_generate(target, draft, ids, k=3, max_new_tokens=8,
                                                    stop=lambda: False)] == free


# ---------------------------------------------------------------- the one loop asks Stop between rounds
LOOPS = {"chain": {"k": 3}, "tree": {"tree": "2x2"}, "dynamic tree": {"tree": "dynamic:4"}, "target alone": None}


def run_loop(loop: str, target, draft, **options):
    """One loop's items as they come, as (emitted tokens, accepted drafts) (the target alone: one token a step)."""
    return (item_of(x) for x in raw_loop(loop, target, draft, **options))


def raw_loop(loop: str, target, draft, **options):
    """The loop's generator itself: its Rounds (the target alone: Steps), then its RunReport as its return value."""
    how = LOOPS[loop]
    sampling = SamplingConfig(temperature=0.8)     # sampled: the output so far must keep its draws too
    if how is None:
        return autoregressive_generate(target, [1, 2, 3], sampling=sampling, max_new_tokens=24, **options)
    return speculative_generate(target, draft, [1, 2, 3], sampling=sampling, max_new_tokens=24, **how, **options)


def item_of(x) -> tuple[list[int], int]:
    return ([x.token_id], 0) if hasattr(x, "token_id") else (list(x.emitted), x.n_accepted)


def stopped_after(loop: str, n: int) -> tuple[list, RunReport, int | None]:
    """The loop with Stop pressed as its n-th round (or token) arrives: (what it gave, its report, target forwards
    after the press; None if never pressed)."""
    target, pressed, got = Counting(tiny_model(1)), [], []
    reporting = Reporting(raw_loop(loop, target, noisy_copy(tiny_model(1), 2, 0.3), stop=lambda: bool(pressed)))
    for x in reporting:
        got.append(item_of(x))
        if len(got) == n:
            pressed.append(len(target.widths))
    return got, reporting.report, len(target.widths) - pressed[0] if pressed else None


def assert_ends_after(loop: str, n: int) -> None:
    got, report, forwards_after = stopped_after(loop, n)
    whole = list(run_loop(loop, tiny_model(1), noisy_copy(tiny_model(1), 2, 0.3)))
    assert len(whole) > n + 1                              # the budget alone would have gone on
    assert got == whole[:n], loop                          # exactly n rounds, the same draws as an uncut run
    assert report.stopped is True and forwards_after == 0, (loop, report, forwards_after)


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("n", [1, 3])
def test_a_stop_after_round_n_ends_the_loop_after_exactly_that_round(loop, n):
    """The loop itself asks `stop()` between rounds (the target alone: between tokens) and ends, its output kept and
    its report `stopped`: the one mechanism the bench, the page and the race read."""
    assert_ends_after(loop, n)
    got, report, _ = stopped_after(loop, 10 ** 6)          # never pressed: a whole run, not marked
    assert not report.stopped and got == list(run_loop(loop, tiny_model(1), noisy_copy(tiny_model(1), 2, 0.3)))


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_loop_that_does_not_ask_fails_the_check(loop, monkeypatch):
    from specviz.runtime import decoding

    monkeypatch.setattr(decoding.Run, "stopped", lambda self: False)   # the broken variant: never asks
    with pytest.raises(AssertionError):
        assert_ends_after(loop, 2)


def test_stop_during_the_warm_up_ends_it_between_calls_with_no_round():
    """ Compile "on" on a CPU compiled for minutes after Stop. The warm-up (compile and capture, here the
    CPU's uncaptured "graphs" buffers) asks stop() before every call, as the prefill asks between chunks."""
    target, checks = tiny_model(1), []
    draft = noisy_copy(target, 2, 0.3)
    counted_target, counted_draft = Counting(target), Counting(draft)

    def stop():
        checks.append(1)
        return len(checks) > 4           # the draft's first four warm-up calls run, then Stop

    rounds = list(speculative_generate(counted_target, counted_draft, [1, 2, 3], k=3, max_new_tokens=8,
                                       compile="graphs", stop=stop))
    assert rounds == [] and len(counted_draft.widths) == 4 and counted_target.widths == []
    assert list(autoregressive_generate(counted_target, [1, 2, 3], max_new_tokens=8, compile="graphs",
                                        stop=lambda: True)) == []
    assert counted_target.widths == []
    assert list(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=8, compile="graphs",
                                     stop=lambda: False))        # not stopped: it decodes


def test_a_compiled_timing_of_the_costs_stops_in_its_capture_too():
    from specviz.bench.costs import forward_costs

    target = Counting(tiny_model(1))
    try:
        forward_costs(target, noisy_copy(tiny_model(1), 2, 0.3), [1, 2, 3], ks=[2], compile="graphs",
                      stop=lambda: True)
    except PrefillStopped:
        pass
    else:
        raise AssertionError("the capture did not stop")
    assert target.widths == []


def test_stop_while_queued_is_said_at_once_and_the_run_starts_withdrawn(monkeypatch):
    """ After Stop the page kept "1st in line … Stop cancels it" for up to 12 s."""
    from types import SimpleNamespace

    from specviz.strings import t
    from specviz.ui import session
    from specviz.ui.tabs import generate
    from tests import test_ui_pays as tp

    for lang in ("en", "es"):
        request = SimpleNamespace(session_hash=f"queued-{lang}")
        ctx = session.AppContext(cache=session.PairCache(lambda *a: pytest.fail("no model may load")), lang=lang)
        assert generate.stop(ctx, request) == {}                 # nothing waiting, nothing running: nothing to say
        session.submit(request)
        said = generate.stop(ctx, request)
        assert t("status.withdrawn", lang) in said["status"] and 'data-kind="warn"' in said["status"]
        updates = list(generate.generate(ctx, dict(tp.FORM), request=request))
        assert len(updates) == 1 and t("status.withdrawn", lang) in updates[0]["status"]


def test_a_stopped_run_leaves_the_queue_estimate_alone(monkeypatch):
    from specviz.ui import session

    monkeypatch.setattr(session, "_DURATIONS", session.deque(maxlen=8))
    finished, stopped = session.Run(), session.Run()
    finished.started -= 14
    stopped.started -= 0.4
    stopped.halt()                       # Stop within a second: says nothing of how long a run takes
    session.end_run(stopped)
    session.end_run(finished)
    assert list(session._DURATIONS) == [pytest.approx(14, abs=1)]
    assert session.expected_wait(0, 1) == pytest.approx(14, abs=1)


# ---------------------------------------------------------------- the page: bounded, paced, the answer first
def test_the_live_text_and_the_log_keep_only_what_they_show():
    from specviz.viz import cards as vc
    from specviz.viz import html as vh
    from tests.rounds import bonus_round

    live, log = vh.LiveText("p", False, window=3), vc.RoundLog(False, limit=2)
    for i in range(10):
        live.add(bonus_round(i))
        log.add(bonus_round(i))
    html = live.html()
    assert html.count('class="sv-round"') == 3 and 'data-earlier="7"' in html and len(live) == 10
    assert 'data-round="9"' in html and 'data-round="6"' not in html
    assert len(log) == 10 and log.html().count('data-round="9"') >= 1 and 'data-round="7"' not in log.html()


def test_a_long_replay_comes_in_a_bounded_number_of_updates():
    from specviz.limits import APP_REPLAY_MAX_S, MAX_TRACE_ROUNDS
    from specviz.ui.tabs.trace_files import BATCH_PAUSE_S, pacing

    assert pacing(40, 0.12) == (1, 0.12)                     # a short trace: round by round, as recorded
    step, pause = pacing(MAX_TRACE_ROUNDS, 0.05)
    assert pause == BATCH_PAUSE_S and MAX_TRACE_ROUNDS / step * pause <= APP_REPLAY_MAX_S + pause


def test_the_load_says_how_long_it_has_left():
    from specviz.ui.waiting import time_left

    assert time_left(0.25, 10.0) == "30" and time_left(0.01, 10.0) is None and time_left(0.5, 1.0) is None


def test_the_answer_comes_before_the_models_are_timed(monkeypatch):
    from specviz.ui import pays
    from tests import test_ui_pays as tp

    calls: list = []
    pays.COSTS.clear()
    monkeypatch.setattr(pays, "_forward_costs", lambda: tp.fake_costs(0.9, 3.0, calls))
    updates = tp.run_app(tp.TinyPair(0.0), compare_switch=False)
    timing = [i for i, u in enumerate(updates) if "The answer is complete" in u.get("status", "")]
    assert timing and calls == [[3]]
    first = timing[0]
    assert "trace" in updates[first] and updates[first]["trace"].rounds        # the whole answer is on the page
    assert not any("forward pass" in u.get("status", "") for u in updates[:first])   # nothing timed before it
    assert 'data-pays="cannot"' in updates[-1]["metrics"] and 'data-kind="ok"' in updates[-1]["status"]
    pays.COSTS.clear()
