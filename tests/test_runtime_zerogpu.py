"""ZeroGPU's life cycle (specviz.runtime.zerogpu, specviz.ui.gpu_calls): the duration of a request, the decorated events
with the real `spaces` package (a no-op off Spaces), the warning before a call that would be cut, start-up loading."""
import os

import pytest

from specviz.runtime import zerogpu
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
    assert gpu_calls.request_of(run_form(k=3, lookup_k=8)).ks == (8,)   # a hybrid's lookup rounds verify more rows
    assert gpu_calls.request_of(run_form(k=3, lookup_k=0)).ks == (3,)


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


def test_the_start_up_pair_loads_before_any_visitor_now_on_zero_gpu_in_the_background_elsewhere(monkeypatch):
    loads, background = [], []

    class Cache:
        def get(self, draft, target, progress):
            loads.append((draft, target))

        def preload(self, draft, target, submit):
            background.append((draft, target, submit))
            return True

    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    monkeypatch.setattr(gpu_calls, "gpu_available", lambda: False)
    monkeypatch.setenv("SPECVIZ_PRELOAD", "0")
    assert not gpu_calls.preload("qwen2.5-0.5b-7b", Cache(), say=lambda m: None) and loads == background == []
    monkeypatch.delenv("SPECVIZ_PRELOAD")
    submit = object()
    assert gpu_calls.preload("qwen2.5-0.5b-7b", Cache(), say=lambda m: None, submit=submit) and loads == []
    assert background == [(None, None, submit)]   # a GPU preset on a CPU: the packaged pair, on the given thread
    monkeypatch.setenv("SPACES_ZERO_GPU", "1")
    assert gpu_calls.preload("qwen2.5-0.5b-7b", Cache(), say=lambda m: None)
    assert loads == [("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct")]
    assert zerogpu.load_device() == "cuda"
    monkeypatch.setenv("ZEROGPU_CUDA_TOTAL_MEMORY", "1000")
    assert zerogpu.slice_bytes() == 1000
    assert os.environ["SPACES_ZERO_GPU"] == "1"


# ---------------------------------------------------------------- the slice asked for, an API call's duration
def test_the_slice_is_the_size_the_space_asks_for_and_a_typo_is_refused():
    assert zerogpu.gpu_size({}) == "large" and zerogpu.slice_bytes({}) == 48 * 10**9
    assert zerogpu.slice_bytes({zerogpu.ZEROGPU_SIZE_ENV: " XLarge "}) == 96 * 10**9
    # what the `spaces` package reports for the device can lower the figure (an old H200 slice), never raise it
    h200 = {zerogpu.ZEROGPU_SIZE_ENV: "xlarge", zerogpu.ZEROGPU_DEVICE_MEMORY_ENV: "74625056768"}
    assert zerogpu.slice_bytes(h200) == 74625056768
    card = {zerogpu.ZEROGPU_DEVICE_MEMORY_ENV: "101973950464"}
    assert zerogpu.slice_bytes(card) == 48 * 10**9
    assert zerogpu.slice_bytes({zerogpu.ZEROGPU_DEVICE_MEMORY_ENV: "lots"}) == 48 * 10**9
    with pytest.raises(ValueError, match="SPECVIZ_ZEROGPU_SIZE.*large, xlarge"):
        zerogpu.gpu_size({zerogpu.ZEROGPU_SIZE_ENV: "huge"})


def _spy(monkeypatch, with_size=True):
    """spaces.GPU replaced by a spy that records the duration function and the size asked for."""
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.setattr(zerogpu, "STEPS", zerogpu.StepClock())
    seen = {"durations": [], "sizes": []}

    def spy_gpu(fn, duration, size="unset"):
        seen["durations"].append(duration)
        seen["sizes"].append(size)
        return fn

    def old_gpu(fn, duration):      # a `spaces` from before the Blackwell sizes
        seen["durations"].append(duration)
        return fn

    monkeypatch.setattr(spaces, "GPU", spy_gpu if with_size else old_gpu)
    return seen


def test_an_api_call_asks_for_the_duration_of_its_own_arguments(monkeypatch):
    import gradio as gr

    from specviz.ui import api

    seen = _spy(monkeypatch)
    with gr.Blocks():
        api.register(None)      # the endpoints as the app registers them (their context is not used here)
    generate, sweep = seen["durations"]
    step = zerogpu.ZEROGPU_DEFAULT_STEP_S
    # the endpoint's defaults (k 3, 64 tokens, no comparison), by name or by position
    assert generate("a prompt") == zerogpu.duration(zerogpu.GpuRequest(64, (3,)), step)
    assert generate("a prompt", 2, 16) == generate(prompt="a prompt", k=2, max_new_tokens=16) == \
        zerogpu.duration(zerogpu.GpuRequest(16, (2,)), step)
    long = generate(prompt="p", k=APP_MAX_K, max_new_tokens=APP_MAX_NEW_TOKENS, compare=True)
    assert long == ZEROGPU_MAX_DURATION_S
    assert len({generate("p", max_new_tokens=n) for n in (16, 128, 512)}) == 3       # not one flat figure
    assert sweep("p", k_lo=5, k_hi=2, tokens=64) == zerogpu.duration(zerogpu.GpuRequest(64, (2, 3, 4, 5), True), step)
    assert generate("p", nonsense=1) == 2 * zerogpu.ZEROGPU_MIN_S     # refused by the endpoint: a default, no crash
    assert seen["sizes"] == ["large", "large"]


def test_the_race_endpoint_asks_for_the_duration_of_its_own_five_runs(monkeypatch):
    import gradio as gr

    from specviz.ui import api_race

    seen = _spy(monkeypatch)
    with gr.Blocks():
        api_race.register(None)
    (race,) = seen["durations"]
    step = zerogpu.ZEROGPU_DEFAULT_STEP_S
    # four drafters at its K and the target alone, from its defaults (48 tokens, K 8), by position or by name
    assert race("a prompt") == zerogpu.duration(zerogpu.GpuRequest(48, (8,) * 4, baseline=True), step)
    assert race("p", 16, 3) == race(prompt="p", max_new_tokens=16, k=3) == \
        zerogpu.duration(zerogpu.GpuRequest(16, (3,) * 4, baseline=True), step)
    assert len({race("p", max_new_tokens=n) for n in (8, 64, 128)}) == 3          # not one flat figure
    assert race("p", nonsense=1) == 2 * zerogpu.ZEROGPU_MIN_S       # refused by the endpoint: a default, no crash
    assert seen["sizes"] == ["large"]


def test_the_size_is_asked_for_only_where_spaces_knows_sizes(monkeypatch):
    seen = _spy(monkeypatch)
    monkeypatch.setenv(zerogpu.ZEROGPU_SIZE_ENV, "xlarge")
    gpu_calls.gpu(lambda *a: a, RUN_FORM)
    assert seen["sizes"] == ["xlarge"]
    seen = _spy(monkeypatch, with_size=False)
    gpu_calls.gpu(lambda *a: a, RUN_FORM)
    assert len(seen["durations"]) == 1 and seen["sizes"] == []
