"""specviz/ui/worker.py: every model step of the app on one long-lived thread (libgomp sleeps between
products once more threads than CPUs have run torch, so a thread per job made each product pay a wake-up)."""
import threading

import pytest

from specviz.ui import worker
from specviz.ui.session import Run


def ident_of(events) -> int:
    """The thread a `call` ran on, from its Result (the step returns its own thread's ident)."""
    got = [e for batch in worker.batches(events) for e in batch]
    assert isinstance(got[-1], worker.Finished)
    return next(e.value for e in got if isinstance(e, worker.Result))


def test_decodes_loads_and_in_place_steps_share_one_thread_that_is_not_the_callers(monkeypatch):
    seen = []

    def fake_decoder(*args, **kwargs):
        seen.append(threading.get_ident())
        return iter(())   # no rounds (and no report: the worker's SpecDone then carries None)

    monkeypatch.setattr(worker, "speculative_generate", fake_decoder)
    step = ident_of(worker.call(lambda progress: threading.get_ident(), Run()))
    again = ident_of(worker.call(lambda progress: threading.get_ident(), Run()))
    job = worker.DecodeJob(pair=type("Pair", (), {"draft": None, "target": None, "tokenizer": None})(),
                           prompt_ids=[1], k=1, sampling=worker.SamplingConfig(), max_new_tokens=1, seed=0)
    list(worker.batches(worker.start(job, Run())))
    in_place = worker.torch_thread.run(threading.get_ident)
    assert step == again == seen[0] == in_place
    assert in_place != threading.get_ident()


def test_a_step_without_a_model_does_not_wait_behind_a_model_step():
    release, started = threading.Event(), threading.Event()

    def busy(progress):
        started.set()
        release.wait(30)
        return "model"

    blocked = worker.call(busy, Run())
    assert started.wait(10)
    try:
        free = worker.call(lambda progress: threading.get_ident(), Run(), models=False)
        assert ident_of(free) != worker.torch_thread.thread.ident
    finally:
        release.set()
    assert [e.value for batch in worker.batches(blocked) for e in batch if isinstance(e, worker.Result)] == ["model"]


def test_an_in_place_step_raises_in_the_caller_and_the_thread_serves_on():
    def fails():
        raise SystemExit("gone")

    with pytest.raises(SystemExit, match="gone"):
        worker.torch_thread.run(fails)
    assert worker.torch_thread.run(lambda: 41 + 1) == 42


def test_a_forked_process_gets_a_thread_of_its_own(monkeypatch):
    before = worker.torch_thread.run(threading.get_ident)
    monkeypatch.setattr(worker.torch_thread, "pid", -1)     # as if this were a child forked after the thread started
    after = worker.torch_thread.run(threading.get_ident)
    assert worker.torch_thread.pid > 0 and after != before


def test_an_in_place_step_asked_from_the_thread_itself_runs_at_once():
    inner = worker.torch_thread.run(lambda: worker.torch_thread.run(threading.get_ident))
    assert inner == worker.torch_thread.thread.ident
