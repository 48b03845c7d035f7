"""ZeroGPU's life cycle (specviz.zerogpu, specviz.ui.gpu_calls): the duration of a request, the decorated events
with the real `spaces` package (a no-op off Spaces), the warning before a call that would be cut, start-up loading."""
import os

import pytest

from specviz import zerogpu
from specviz.limits import (APP_MAX_K, APP_MAX_NEW_TOKENS, ZEROGPU_CALL_OVERHEAD_S, ZEROGPU_DEFAULT_STEP_S,
                            ZEROGPU_MAX_DURATION_S, ZEROGPU_MIN_DURATION_S)
from specviz.ui import gpu_calls
from specviz.ui.inputs import RUN_FORM, SWEEP_FORM

spaces = pytest.importorskip("spaces")   # pinned in tests/requirements.txt


def run_form(**kw):
    base = dict(prompt="x", raw=False, k=4, adaptive=False, temperature=0, top_k=0, top_p=1, max_new=64, seed=0,
                pair="packaged", draft_id="", target_id="", compare_switch=False, drafter="model", compile="auto")
    return {**base, **kw}


def test_the_duration_grows_with_tokens_k_and_the_sweep_and_stays_bounded():
    small = zerogpu.GpuRequest(32, (2,))
    bigger = zerogpu.GpuRequest(256, (2,))
    wider = zerogpu.GpuRequest(256, (8,))
    sweep = zerogpu.GpuRequest(256, tuple(range(1, 9)), baseline=True)
    step = 0.02
    durations = [zerogpu.duration(r, step) for r in (small, bigger, wider, sweep)]
    assert durations == sorted(durations) and len(set(durations)) > 2
    assert all(ZEROGPU_MIN_DURATION_S <= d <= ZEROGPU_MAX_DURATION_S for d in durations)
    assert zerogpu.duration(zerogpu.GpuRequest(1, (1,)), 0.001) == ZEROGPU_MIN_DURATION_S
    huge = zerogpu.GpuRequest(APP_MAX_NEW_TOKENS, (APP_MAX_K,), baseline=True)
    assert zerogpu.duration(huge, 0.5) == ZEROGPU_MAX_DURATION_S and zerogpu.exceeds(huge, 0.5)
    assert not zerogpu.exceeds(small, step)


def test_a_measured_step_replaces_the_default_for_its_pair_only():
    clock = zerogpu.StepClock()
    req = zerogpu.GpuRequest(100, (4,))
    assert clock.step_seconds("a") == ZEROGPU_DEFAULT_STEP_S
    clock.record("a", req, ZEROGPU_CALL_OVERHEAD_S + req.units() * 0.01)
    assert clock.step_seconds("a") == pytest.approx(0.01)
    assert clock.step_seconds("b") == ZEROGPU_DEFAULT_STEP_S


def test_forms_become_requests():
    run = gpu_calls.request_of(run_form(max_new="128", k=6, compare_switch=True))
    assert run == zerogpu.GpuRequest(128, (6,), baseline=True)
    sweep = gpu_calls.request_of(dict(zip(SWEEP_FORM, ["x", False, 0, 0, 1, 0, "packaged", "", "", 5, 2, 64])))
    assert sweep == zerogpu.GpuRequest(64, (2, 3, 4, 5), baseline=True)
    assert gpu_calls.request_of(run_form(max_new="lots")).tokens == 128      # unreadable: a default, never a crash
    assert gpu_calls.request_of(run_form(max_new=10**9)).tokens == APP_MAX_NEW_TOKENS
    assert gpu_calls.request_of(None) is None


def test_off_zero_gpu_the_event_is_returned_as_it_is(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)

    def event(*args):
        return args

    assert gpu_calls.gpu(event, RUN_FORM) is event
    assert spaces.GPU(event, duration=lambda *a: 60) is event      # the real package: a no-op off Spaces


def test_on_zero_gpu_a_long_request_is_announced_and_the_call_is_timed(monkeypatch):
    """SPACES_ZERO_GPU set after `spaces` was imported: our side sees ZeroGPU, the package stays a no-op."""
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.setattr(zerogpu, "STEPS", zerogpu.StepClock())
    seen, warned, durations = [], [], []
    real_gpu = spaces.GPU

    def spy_gpu(fn, duration):
        durations.append(duration)
        return real_gpu(fn, duration=duration)

    monkeypatch.setattr(spaces, "GPU", spy_gpu)

    def event(*args):
        seen.append(args)
        yield "update"

    decorated = gpu_calls.gpu(event, RUN_FORM, "en", warn=warned.append)
    short = tuple(run_form(max_new=16, k=2).values())
    assert list(decorated(*short)) == ["update"] and seen == [short] and warned == []
    assert ZEROGPU_MIN_DURATION_S <= durations[0](*short) <= ZEROGPU_MAX_DURATION_S
    assert zerogpu.STEPS.step_seconds(("packaged", "", "")) < ZEROGPU_DEFAULT_STEP_S   # measured: a fast call
    long = tuple(run_form(max_new=APP_MAX_NEW_TOKENS, k=APP_MAX_K, compare_switch=True).values())
    monkeypatch.setattr(zerogpu, "STEPS", zerogpu.StepClock())      # nothing measured yet: the pessimistic step
    assert durations[0](*long) == ZEROGPU_MAX_DURATION_S
    list(decorated(*long))
    assert len(warned) == 1 and f"{ZEROGPU_MAX_DURATION_S} s" in warned[0]


def test_the_start_up_pair_loads_before_any_visitor_on_zero_gpu_only(monkeypatch):
    loads = []

    class Cache:
        def get(self, draft, target, progress):
            loads.append((draft, target))

    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert not gpu_calls.preload("qwen2.5-0.5b-7b", Cache(), say=lambda m: None) and loads == []
    monkeypatch.setenv("SPACES_ZERO_GPU", "1")
    assert gpu_calls.preload("qwen2.5-0.5b-7b", Cache(), say=lambda m: None)
    assert loads == [("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct")]
    assert zerogpu.load_device() == "cuda"
    monkeypatch.setenv("ZEROGPU_CUDA_TOTAL_MEMORY", "1000")
    assert zerogpu.slice_bytes() == 1000
    assert os.environ["SPACES_ZERO_GPU"] == "1"
