"""What lives between events: the model cache (one per process), per-session runs and stop flags.

Models are loaded once per process (`PairCache`, one lock) and shared by all
sessions; each browser session keeps its own trace in `gr.State` and its own
stop flag here (`Run`), keyed by Gradio's session hash. Starting a run stops the
session's previous one.
"""
from __future__ import annotations

import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..limits import APP_CHART_INTERVAL_S
from ..strings import DEFAULT_LANG
from ..trace import Trace

PairLoader = Callable[[str | None, str | None, Callable[[float, str], None]], Any]

try:  # ZeroGPU on Hugging Face Spaces; a no-op everywhere else
    import spaces  # type: ignore

    gpu = spaces.GPU(duration=120)
except Exception:  # noqa: BLE001 - not installed, or not on a Space
    def gpu(fn):
        return fn


def default_pair_loader(draft: str | None, target: str | None, progress) -> Any:
    from ..models import load_pair

    return load_pair(draft, target, progress=progress, allow_local=False)


class PairCache:
    """Model pairs by (draft, target); loaded once per process, under one lock."""

    def __init__(self, loader: PairLoader, max_pairs: int = 2):
        self.loader, self.max_pairs = loader, max_pairs
        self._lock = threading.Lock()
        self._pairs: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, draft: str | None, target: str | None, progress=None) -> Any:
        key = (draft, target)
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            pair = self.loader(draft, target, progress or (lambda f, m: None))
            self._pairs[key] = pair
            while len(self._pairs) > self.max_pairs:
                self._pairs.popitem(last=False)
            return pair


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
@dataclass
class Run:
    """One run (or replay) of one browser session; setting `stop` ends it between two rounds."""

    stop: threading.Event = field(default_factory=threading.Event)


_RUNS: dict[str, Run] = {}
_RUNS_LOCK = threading.Lock()


def session_id(request) -> str:
    return getattr(request, "session_hash", None) or "local"


def new_run(request) -> Run:
    """A fresh run for the request's session; the session's previous run (if any) is told to stop."""
    run = Run()
    with _RUNS_LOCK:
        old = _RUNS.get(session_id(request))
        if old is not None:
            old.stop.set()
        _RUNS[session_id(request)] = run
    return run


def stop_run(request) -> None:
    with _RUNS_LOCK:
        run = _RUNS.get(session_id(request))
    if run is not None:
        run.stop.set()


# ---------------------------------------------------------------- one app's settings
@dataclass
class AppContext:
    """Everything an event function needs besides its inputs; one per `build_app`."""

    cache: PairCache
    sweep_fn: Callable | None = None
    replay_delay: float = 0.12
    lang: str = DEFAULT_LANG
    chart_interval_s: float = APP_CHART_INTERVAL_S
    tmpdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="specviz-traces-"))

    def load(self, pair_ids: tuple[str | None, str | None], progress) -> Any:
        """The (cached) pair; `progress` is Gradio's, fed (fraction, message) by the loader."""
        return self.cache.get(*pair_ids, lambda f, m: progress(f, desc=m))

    def sweep(self) -> Callable:
        if self.sweep_fn is not None:
            return self.sweep_fn
        from ..bench import sweep_k  # lazily: the bench pulls in more than the app needs at start-up

        return sweep_k

    def write_trace(self, trace: Trace, request) -> str:
        """The trace as a JSON file in this app's temporary folder, for the download button."""
        path = Path(self.tmpdir) / f"specviz-trace-{session_id(request)[:8]}-{int(time.time() * 1000) % 10**9}.json"
        path.write_text(trace.to_json(indent=1), encoding="utf-8")
        return str(path)
