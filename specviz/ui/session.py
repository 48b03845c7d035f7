"""What lives between events: the model cache (one per process), per-session runs and stop flags.

Models are loaded once per process (`PairCache`, one lock) and shared by all
sessions; each browser session keeps its own trace in `gr.State` and its own
stop flag here (`Run`), keyed by Gradio's session hash. Starting a run stops the
session's previous one.
"""
from __future__ import annotations

import gc
import tempfile
import threading
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import bench
from ..errors import step_text
from ..limits import APP_CHART_INTERVAL_S, APP_LIVE_UPDATES_PER_S, APP_TICK_S
from ..strings import DEFAULT_LANG
from ..trace.files import TraceFormatError
from ..trace.records import Trace
from ..viz import export
from ..models import loading
from ..runtime.zerogpu import load_device

PairLoader = Callable[[str | None, str | None, Callable[[float, str], None]], Any]

def default_pair_loader(draft: str | None, target: str | None, progress) -> Any:

    return loading.load_pair(draft, target, device=load_device(), progress=progress, allow_local=False)


class _Preload:
    """A load started before anyone asked (`PairCache.preload`): its latest progress, then its end."""

    def __init__(self):
        self.fraction, self.message = 0.0, None
        self.done = threading.Event()

    def report(self, fraction: float, message) -> None:
        self.fraction, self.message = fraction, message


class PairCache:
    """Model pairs by (draft, target); loaded once per process, under one lock."""

    def __init__(self, loader: PairLoader, max_pairs: int = 2):
        self.loader, self.max_pairs = loader, max_pairs
        self._lock = threading.Lock()
        self._pairs: OrderedDict[tuple, Any] = OrderedDict()
        self._preloads: dict[tuple, _Preload] = {}   # read without `_lock`, which a load holds throughout
        self._preloads_lock = threading.Lock()

    def get(self, draft: str | None, target: str | None, progress=None) -> Any:
        key = (draft, target)
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            # Make room first: two pairs held while a third loads would need the memory of three
            # (on the oneDNN path each is a packed copy of its weights, 8 GB for the packaged pair).
            while len(self._pairs) >= self.max_pairs:
                self._pairs.popitem(last=False)
                gc.collect()
            pair = self.loader(draft, target, progress or (lambda f, m: None))
            self._pairs[key] = pair
            return pair

    def preload(self, draft: str | None, target: str | None, submit: Callable[[Callable[[], None]], None]) -> bool:
        """Load (draft, target) now by `submit` (the app's models' thread), before anyone asks for it: the first
        Generate then finds it loaded, or follows the rest of the load (`follow`). A failed preload says nothing; the
        next `get` loads again and says why. False where it is loaded or preloading already."""
        key, preload = (draft, target), _Preload()
        with self._preloads_lock:
            if key in self._preloads or key in self._pairs:
                return False
            self._preloads[key] = preload

        def body() -> None:
            try:
                self.get(draft, target, preload.report)
            except BaseException:  # noqa: BLE001 - said by the next get, which loads again (follow returns None)
                pass
            finally:
                with self._preloads_lock:
                    self._preloads.pop(key, None)
                preload.done.set()
        submit(body)
        return True

    def preloading(self, draft: str | None, target: str | None) -> bool:
        with self._preloads_lock:
            return (draft, target) in self._preloads

    def follow(self, draft: str | None, target: str | None, progress=None, poll_s: float = 0.2) -> Any:
        """Wait for a preload of (draft, target), passing its progress on (`progress` may raise to stop waiting);
        the pair once it is loaded, None where no preload brought it (none under way, or it failed). Never loads, so
        it may run on any thread."""
        with self._preloads_lock:
            preload = self._preloads.get((draft, target))
        if preload is not None:
            last = None
            while not preload.done.wait(poll_s):
                now = (preload.fraction, preload.message)
                if progress is not None and now[1] is not None and now != last:
                    progress(*now)
                    last = now
        return self._pairs.get((draft, target))   # one dict read (atomic): not under the lock a load holds


_DEFAULT_CACHE: PairCache | None = None
_DEFAULT_CACHE_LOCK = threading.Lock()


def default_cache() -> PairCache:
    """The process-wide cache of the default loader (several apps in one process share the models)."""
    global _DEFAULT_CACHE
    with _DEFAULT_CACHE_LOCK:
        if _DEFAULT_CACHE is None:
            _DEFAULT_CACHE = PairCache(default_pair_loader)
        return _DEFAULT_CACHE


# ---------------------------------------------------------------- per-session runs
WAIT_EXPIRY_S = 15 * 60      # a submission that never started (the page went away) stops counting after this


@dataclass
class Run:
    """One run, sweep or replay of one browser session; setting `stop` ends it at its next check (a round)."""

    stop: threading.Event = field(default_factory=threading.Event)
    uses_models: bool = True       # runs and sweeps share the models' queue slot; replays do not
    active: bool = True
    started: float = field(default_factory=time.monotonic)
    cut: bool = False              # someone stopped it (Stop, a newer run, the page closing): its length is no guide
    withdrawn: bool = False        # Stop was pressed while it still waited in the queue: it starts stopped
    loading_s: float = 0.0         # of its time, the seconds it waited for the pair's load: no guide to a run's length

    def halt(self) -> None:
        """Stop it from outside (the run's own end sets `stop` too, without `cut`)."""
        self.cut = True
        self.stop.set()


@dataclass
class _Session:
    run: Run | None = None
    waiting_since: float | None = None    # an event was submitted and has not started yet
    pending_stop: bool = False            # Stop was pressed while it waited


_SESSIONS: dict[str, _Session] = {}
_DURATIONS: deque[float] = deque(maxlen=8)   # seconds of the last runs and sweeps that used the models
_RUNS_LOCK = threading.Lock()


def session_id(request) -> str:
    return getattr(request, "session_hash", None) or "local"


def _session(request) -> _Session:
    return _SESSIONS.setdefault(session_id(request), _Session())


def submit(request) -> tuple[int, int]:
    """Note that the session queued a run or sweep; (submissions waiting ahead of it, runs using the models now)."""
    now = time.monotonic()
    with _RUNS_LOCK:
        mine = _session(request)
        mine.waiting_since, mine.pending_stop = now, False
        others = [s for s in _SESSIONS.values() if s is not mine]
        ahead = sum(1 for s in others if s.waiting_since is not None and now - WAIT_EXPIRY_S < s.waiting_since < now)
        busy = sum(1 for s in others if s.run is not None and s.run.active and s.run.uses_models)
    return ahead, busy


def new_run(request, uses_models: bool = True) -> Run:
    """A fresh run for the request's session; the session's previous run (if any) is told to stop.

    A run whose session pressed Stop while it waited in the queue starts stopped.
    """
    run = Run(uses_models=uses_models)
    with _RUNS_LOCK:
        mine = _session(request)
        if mine.run is not None:
            mine.run.halt()
        if mine.pending_stop and uses_models:
            run.withdrawn = True
            run.halt()
        mine.run, mine.waiting_since, mine.pending_stop = run, None, False
    return run


def end_run(run: Run) -> None:
    """The run is over: its length joins the queue's estimate when it ran to its end (a stopped run's does not:
    a walk of the page saw runs stopped within a second make the page promise 5 s where 14 s passed)."""
    if run.active and run.uses_models and not run.cut:
        with _RUNS_LOCK:
            _DURATIONS.append(run_seconds(run))
    run.active = False


def run_seconds(run: Run, now: float | None = None) -> float:
    """How long the run has run, its wait for the pair's load left out (the first run after a start loaded the pair:
    counted, it made the queue promise 25 s for runs of 6 s)."""
    return max(0.0, (time.monotonic() if now is None else now) - run.started - run.loading_s)


def expected_wait(ahead: int, slots: int) -> float | None:
    """Seconds until a submission with `ahead` others before it starts, from the measured length of the recent runs
    that ran to their end (their median, the lower one of an even count); None before any has ended here. With
    `slots` runs at once, each wave of `slots` ends together; the wave running now has only its time left to go
    (counted whole, the estimate ran long: 10/25/35 s said where 12/18/24 s passed)."""
    now = time.monotonic()
    with _RUNS_LOCK:
        recent = sorted(_DURATIONS)
        running = [run_seconds(s.run, now) for s in _SESSIONS.values()
                   if s.run is not None and s.run.active and s.run.uses_models]
    if not recent:
        return None
    typical = recent[(len(recent) - 1) // 2]
    first = max(0.0, typical - max(running)) if running else typical
    return first + (ahead // max(slots, 1)) * typical


def stop_run(request) -> bool:
    """Stop the session's run (at its next round), or the one it has waiting in the queue (before it starts).

    True when a submission was waiting: it is withdrawn, and the page can say so at once."""
    with _RUNS_LOCK:
        mine = _SESSIONS.get(session_id(request))
        if mine is None:
            return False
        if mine.run is not None:
            mine.run.halt()
        if mine.waiting_since is not None:
            mine.pending_stop = True
            return True
    return False


def end_session(request) -> None:
    """The page went away: stop whatever it started and forget it."""
    with _RUNS_LOCK:
        mine = _SESSIONS.pop(session_id(request), None)
    if mine is not None and mine.run is not None:
        mine.run.halt()


# ---------------------------------------------------------------- one app's settings
@dataclass
class AppContext:
    """Everything an event function needs besides its inputs; one per `build_app`."""

    cache: PairCache
    sweep_fn: Callable | None = None
    replay_delay: float = 0.12
    lang: str = DEFAULT_LANG
    chart_interval_s: float = APP_CHART_INTERVAL_S   # a replay's charts (a fast one's log and tiles) while it streams
    live_updates_per_s: float | None = APP_LIVE_UPDATES_PER_S   # a live run's page updates; None = one per batch
    live_log_interval_s: float = APP_CHART_INTERVAL_S   # a live run's tiles (log, charts: at the end)
    tick_s: float = APP_TICK_S             # how often a busy event function looks at the clock and at Stop
    concurrency_limit: int = 1             # runs and sweeps at once (set by the layout's wiring)
    tmpdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="specviz-traces-"))

    def load(self, pair_ids: tuple[str | None, str | None], progress: Callable[[float, str], None]) -> Any:
        """The (cached) pair; the loader reports `progress(fraction, message)`, the message in the page's language."""
        return self.cache.get(*pair_ids, lambda fraction, message: progress(fraction, step_text(message, self.lang)))

    def follow(self, pair_ids: tuple[str | None, str | None], progress: Callable[[float, str], None]) -> Any:
        """The pair a start-up preload is loading, once loaded (None where it failed), its progress passed on as
        `load` passes a load's (PairCache.follow)."""
        return self.cache.follow(*pair_ids, lambda fraction, message: progress(fraction, step_text(message, self.lang)))

    def sweep(self) -> Callable:
        if self.sweep_fn is not None:
            return self.sweep_fn
        return bench.sweep_k

    def write_trace(self, trace: Trace, request) -> str:
        """The trace as a JSON file in this app's temporary folder, for the download button."""
        path = Path(self.tmpdir) / f"specviz-trace-{session_id(request)[:8]}-{int(time.time() * 1000) % 10**9}.json"
        path.write_text(trace.to_json(indent=1), encoding="utf-8")
        return str(path)

    def write_html(self, trace: Trace) -> str | None:
        """The run as one page that replays it offline (specviz.viz.export), in this app's temporary folder, for
        "Download as HTML"; None for a trace too long for one page (the button then stays off)."""
        path = Path(self.tmpdir) / f"specviz-run-{uuid.uuid4().hex[:12]}.html"
        try:
            export.write_html(trace, path, self.lang)
        except TraceFormatError:
            return None
        return str(path)
