"""The app's model pairs (specviz.ui.session.PairCache): a pair preloaded at start-up on the models' thread is loaded
once, and the first Generate follows the rest of that load (its progress in the status) instead of waiting silently
behind it or loading on a second thread."""
from __future__ import annotations

import threading
import time

import pytest

from specviz.ui import waiting, worker
from specviz.ui.session import AppContext, PairCache, Run


class Loader:
    """A load that reports two steps and waits for `go` between them; counts its calls; fails once if asked."""

    def __init__(self, fail_first: bool = False):
        self.calls, self.go, self.fail_first = 0, threading.Event(), fail_first

    def __call__(self, draft, target, progress):
        self.calls += 1
        progress(0.25, "first half")
        assert self.go.wait(10)
        progress(0.75, "second half")
        if self.fail_first and self.calls == 1:
            raise RuntimeError("the disk went away")
        return f"pair {self.calls}"


def in_a_thread(body):
    threading.Thread(target=body, daemon=True).start()


def test_a_preload_loads_once_and_a_follower_gets_its_progress_then_its_pair():
    loader = Loader()
    cache = PairCache(loader)
    assert cache.preload(None, None, in_a_thread) and cache.preloading(None, None)
    assert not cache.preload(None, None, in_a_thread)   # under way already: not twice
    seen = []

    def progress(fraction, message):
        seen.append((fraction, message))
        loader.go.set()   # the rest of the load goes on once the follower saw its first step

    assert cache.follow(None, None, progress, poll_s=0.005) == "pair 1"
    assert seen[0] == (0.25, "first half") and loader.calls == 1
    assert not cache.preloading(None, None) and cache.get(None, None) == "pair 1" and loader.calls == 1
    assert not cache.preload(None, None, in_a_thread)   # loaded already
    assert cache.follow("other", None) is None          # nothing under way for it: follow never loads


def test_a_failed_preload_leaves_the_load_and_its_error_to_the_next_get():
    loader = Loader(fail_first=True)
    loader.go.set()
    cache = PairCache(loader)
    cache.preload(None, None, in_a_thread)
    assert cache.follow(None, None, poll_s=0.005) is None and loader.calls == 1
    assert cache.get(None, None) == "pair 2" and loader.calls == 2


def test_stop_ends_the_following_not_the_preload():
    loader = Loader()
    cache = PairCache(loader)
    cache.preload(None, None, in_a_thread)

    def progress(fraction, message):
        raise worker.Stopped()

    with pytest.raises(worker.Stopped):
        cache.follow(None, None, progress, poll_s=0.005)
    loader.go.set()
    assert cache.follow(None, None, poll_s=0.005) == "pair 1" and loader.calls == 1


def finish(generator):
    """(the updates a generator yields, the value it returns)."""
    updates = []
    while True:
        try:
            updates.append(next(generator))
        except StopIteration as end:
            return updates, end.value


def test_the_first_generate_follows_a_preload_from_its_own_thread(monkeypatch):
    loader = Loader()
    cache = PairCache(loader)
    ctx = AppContext(cache=cache, lang="en", tick_s=0.01)
    cache.preload(None, None, in_a_thread)
    on_models_thread = []
    monkeypatch.setattr(worker.torch_thread, "submit", lambda body: on_models_thread.append(body) or in_a_thread(body))
    threading.Timer(0.3, loader.go.set).start()
    t0 = time.monotonic()
    updates, pair = finish(waiting.load(ctx, Run(), (None, None), lambda m, kind: {"status": (m, kind)}))
    assert pair == "pair 1" and loader.calls == 1 and time.monotonic() - t0 < 10
    assert on_models_thread == []   # following runs no model: never queued behind the models' thread
    assert any("first half" in u["status"][0] for u in updates), updates   # the preload's own steps, shown


def test_without_a_preload_the_load_runs_on_the_models_thread(monkeypatch):
    loader = Loader()
    loader.go.set()
    ctx = AppContext(cache=PairCache(loader), lang="en", tick_s=0.01)
    on_models_thread = []
    monkeypatch.setattr(worker.torch_thread, "submit", lambda body: on_models_thread.append(body) or in_a_thread(body))
    updates, pair = finish(waiting.load(ctx, Run(), (None, None), lambda m, kind: {"status": (m, kind)}))
    assert pair == "pair 1" and len(on_models_thread) == 1


def test_the_queue_counts_the_running_run_by_its_time_left_and_no_load_as_a_run(monkeypatch):
    """Runs of ~6 s, the first of which waited 14 s for the pair's load: the page said 10/25/35 s for the 1st, 2nd and
    3rd in line where 12/18/24 s passed (the load counted as a run, the running run counted whole)."""
    from specviz.ui import session

    monkeypatch.setattr(session, "_DURATIONS", session.deque(maxlen=8))
    monkeypatch.setattr(session, "_SESSIONS", {})
    first = Run()
    first.started -= 20
    first.loading_s = 14.0                   # 14 s of its 20 waited for the pair
    session.end_run(first)
    assert list(session._DURATIONS) == [pytest.approx(6, abs=0.5)]
    for _ in range(2):
        done = Run()
        done.started -= 6
        session.end_run(done)
    running = Run()
    running.started -= 4                     # 4 s into a ~6 s run: about 2 s left
    session._SESSIONS["other"] = session._Session(run=running)
    said = [session.expected_wait(ahead, 1) for ahead in (0, 1, 2)]
    assert said == [pytest.approx(2, abs=0.5), pytest.approx(8, abs=0.5), pytest.approx(14, abs=0.5)]
    # a run past the typical length: its slot is due now, never a negative wait
    running.started -= 60
    assert session.expected_wait(0, 1) == pytest.approx(0, abs=0.01)


def test_a_loads_wait_is_the_runs_loading_time(monkeypatch):
    """`waiting.load` adds the time it waited for the pair to the run's `loading_s`."""
    class Cache:
        def preloading(self, *ids):
            return False

    class Ctx:
        lang = "en"
        cache = Cache()
        tick_s = 0.01

        def load(self, ids, progress):
            time.sleep(0.3)
            return "pair"

    run = Run()
    steps = waiting.load(Ctx(), run, ("d", "t"), lambda message, kind: {"status": message})
    try:
        while True:
            next(steps)
    except StopIteration as end:
        assert end.value == "pair"
    assert run.loading_s >= 0.3
