"""Slow steps an event function waits on (the queue, loading models, a sweep, the prompt's prefill): status lines
that say what is happening and for how long, and a Stop that is heard while waiting.

Each helper is a generator of page updates (`{view name: value}`) that returns
its result with `return`, so an event function writes `pair = yield from
load(...)`. `say(message, kind)` turns a line into the update of every status
view the caller has (the run's status, the sweep's own box, or both). The
events that run models (a run, a sweep, the race) share their frame here: the
click's answer before the queue (`place_in_queue`), the run's life and its
end however it ends (`guarded`), the pair and the prompt (`prepared`).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator, TypeVar

from ..errors import ModelLoadError
from ..limits import APP_STOP_GRACE_S
from ..strings import t
from ..viz.format import ordinal
from . import inputs, worker
from .inputs import InputError
from .session import AppContext, Run, end_run, expected_wait, new_run, submit
from .worker import Failed, Progress, Result, Stopped

Say = Callable[[str, str], dict]
Settings = TypeVar("Settings")


def queued_line(ahead: int, slots: int, lang: str) -> str:
    """The place in the queue in words ("2nd in line, about 40 s"), the time left out until a run has ended here."""
    place = ordinal(ahead + 1, lang)
    wait = expected_wait(ahead, slots)
    if wait is None:
        return t("status.queued", lang, place=place)
    return t("status.queued_eta", lang, place=place, seconds=f"{max(5, 5 * round(wait / 5)):.0f}")


def place_in_queue(ctx: AppContext, request, check: Callable[[], object], say: Say) -> dict:
    """Right after the click, before the queue: a bad field's sentence at once (`check()` raises it), or the place
    in the queue; {} when the event will start at once."""
    try:
        check()
    except InputError as e:
        return say(str(e), "error")
    ahead, busy = submit(request)
    if ahead or busy >= ctx.concurrency_limit:
        return say(queued_line(ahead, ctx.concurrency_limit, ctx.lang), "run")
    return {}


def guarded(ctx: AppContext, request, check: Callable[[], Settings], say: Say,
            body: Callable[[Run, Settings], Iterator[dict]]) -> Iterator[dict]:
    """An event that runs models, from its start to its end: a new run for the session (its previous one told to
    stop), the form checked again (`check()`: the settings, or the sentence of its InputError said), a run that
    Stop withdrew from the queue (or stopped before it began) said so, then `body(run, settings)`.

    However it ends (its end, Stop, an error, a page closed or a newer run), the run's flag is raised, so a
    decoder thread still going stops too, and the run is ended (its slot freed, its time counted when it ran
    out)."""
    run = new_run(request)
    try:
        try:
            settings = check()
        except InputError as e:
            yield say(str(e), "error")
            return
        if run.stop.is_set():
            yield say(t("status.withdrawn" if run.withdrawn else "status.stopped", ctx.lang), "warn")
            return
        yield from body(run, settings)
    finally:
        run.stop.set()  # a cancelled or closed page stops the decoder too
        end_run(run)


def prepared(ctx: AppContext, run: Run, pair_ids, say: Say, encode: Callable[[Any], list[int]]) -> Iterator[dict]:
    """The pair loaded (`load`) and the prompt encoded by `encode(pair)`: (pair, ids), or None after an error or
    Stop (said)."""
    pair = yield from load(ctx, run, pair_ids, say)
    if pair is None:
        return None
    try:
        return pair, encode(pair)
    except InputError as e:
        yield say(str(e), "error")
        return None


def seconds_since(t0: float) -> str:
    return f"{time.monotonic() - t0:.0f}"


def wait_for(ctx: AppContext, run: Run, events, line: Callable[[Progress | None, str], str],
             say: Say, stopping_key: str) -> Iterator[dict]:
    """Yield a status line at least every second while `events` (from `worker.call`) runs; return its Result.

    Returns `worker.Result`, or the `Failed` event (Stop included, as `Failed(Stopped())`). After Stop it waits
    at most `APP_STOP_GRACE_S` more: a step that cannot be cut (one file of a load, one sweep point) is left to
    end in its thread at its next progress report, and the page gets its final status now.
    """
    t0, last, shown = time.monotonic(), None, 0.0
    outcome: Any = None
    announced: float | None = None   # when "stopping" was said
    for batch in worker.batches(events, tick=min(ctx.tick_s, APP_STOP_GRACE_S / 2)):
        for event in batch:
            if isinstance(event, Progress):
                last = event
            elif isinstance(event, (Result, Failed)):
                outcome = event
        if outcome is not None:
            continue
        if announced is not None and time.monotonic() - announced >= APP_STOP_GRACE_S:
            return Failed(Stopped())
        if run.stop.is_set() and announced is None:
            announced = time.monotonic()
            yield say(t(stopping_key, ctx.lang), "run")
        elif announced is None and (batch or time.monotonic() - shown >= 1.0):
            shown = time.monotonic()
            yield say(line(last, seconds_since(t0)), "run")
    return outcome


def time_left(fraction: float, elapsed: float) -> str | None:
    """Seconds a load has left at the rate it has gone so far (the loader reports its fraction done, which
    follows the bytes read), once there is a rate to go by; None before."""
    if not 0.05 <= fraction < 1.0 or elapsed < 2.0:
        return None
    return f"{elapsed * (1.0 - fraction) / fraction:.0f}"


def load(ctx: AppContext, run: Run, pair_ids, say: Say) -> Iterator[dict]:
    """The model pair, loaded in a thread with its progress in the status; None after an error or Stop (said). The
    wait counts as the run's `loading_s`, which the queue's estimate leaves out."""
    t0 = time.monotonic()
    try:
        return (yield from _load(ctx, run, pair_ids, say))
    finally:
        run.loading_s += time.monotonic() - t0


def _load(ctx: AppContext, run: Run, pair_ids, say: Say) -> Iterator[dict]:
    lang = ctx.lang

    def line(p: Progress | None, seconds: str) -> str:
        if p is None:
            return t("status.loading", lang, seconds=seconds)
        left = time_left(p.fraction, float(seconds))
        if left is not None:
            return t("status.loading_left", lang, step=p.message, percent=f"{100 * p.fraction:.0f}%",
                     seconds=seconds, left=left)
        return t("status.loading_step", lang, step=p.message, percent=f"{100 * p.fraction:.0f}%", seconds=seconds)

    yield say(line(None, "0"), "run")
    outcome = None
    if ctx.cache.preloading(*pair_ids):   # loading since start-up: follow it from a thread of its own (no model step)
        outcome = yield from wait_for(ctx, run, worker.call(lambda progress: ctx.follow(pair_ids, progress), run,
                                                            models=False), line, say, "status.stopping_load")
    if not (isinstance(outcome, Result) and outcome.value is not None) and not run.stop.is_set():
        outcome = yield from wait_for(ctx, run, worker.call(lambda progress: ctx.load(pair_ids, progress), run),
                                      line, say, "status.stopping_load")
    if isinstance(outcome, Result) and not run.stop.is_set():
        return outcome.value
    if isinstance(outcome, Failed) and not isinstance(outcome.error, Stopped) and not run.stop.is_set():
        error = outcome.error
        known = isinstance(error, (inputs.InputError, ModelLoadError))
        message = inputs.error_message(error, lang) if known else \
            t("status.prepare_failed", lang, error=inputs.error_message(error, lang))
        yield say(message, "error")
        return None
    yield say(t("status.stopped", lang), "warn")
    return None


class PrefillClock:
    """How long reading a prompt takes, by pair, from the runs that read one here: a 1,690-token prompt read for 29 s
    under a bare counter. The estimate goes by the longest prompt seen (its seconds per token: a short prompt's is
    mostly a forward's fixed cost)."""

    MIN_SECONDS = 2.0   # a shorter read is over before an estimate would help

    def __init__(self):
        self._lock, self._seen = threading.Lock(), {}

    def record(self, key, tokens: int, seconds: float) -> None:
        if tokens <= 0 or not seconds > 0:
            return
        with self._lock:
            if tokens >= self._seen.get(key, (0, 0.0))[0]:
                self._seen[key] = (tokens, seconds)

    def expected(self, key, tokens: int) -> float | None:
        """Seconds the prompt of `tokens` should take to read on this pair; None before a read was measured, or when
        it is short."""
        with self._lock:
            seen = self._seen.get(key)
        if seen is None:
            return None
        estimate = tokens * seen[1] / seen[0]
        return estimate if estimate >= self.MIN_SECONDS else None


PREFILLS = PrefillClock()
