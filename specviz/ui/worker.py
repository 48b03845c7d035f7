"""The decode worker: runs the decoder in its own thread and reports typed events through a queue.

Why a thread: the page's rendering must never sit inside the timed decode loop,
so the decoder only pushes records and the event function renders batches of
them. The target-alone comparison runs after the speculative run, never at the
same time, so neither timing is disturbed by the other.

Events, in order: [`WarmupDone`] `RoundDone`* `SpecDone` [`BaselineProgress`*
`BaselineDone`] [`Failed`] `Finished`. `Finished` always comes last, even after
an error. `WarmupDone` comes only from a compiled run, once its forwards are
compiled and captured (the decoder's `warmup_seconds` event, `DecodeOptions.on_event`), so the page can
say what the first seconds were spent on.

`call` runs any other slow step (loading models, a K sweep) the same way:
`Progress`* then `Result` or `Failed`, then `Finished`; its progress callback
raises `Stopped` once the run's stop flag is set, which ends the step at its
next progress report. `batches(..., tick=s)` also yields an empty batch every
`s` seconds of silence, so the event function can look at the clock and the
Stop flag while the worker is busy; `batches(..., interval=s)` gives at most
one batch per `s` seconds (the page's bounded update rate).

Why one thread for all of them (`torch_thread`), not a thread per job: PyTorch's CPU kernels split each product over
OpenMP threads, and libgomp's threads wait between products by spinning, unless the process manages more OpenMP
threads than there are CPUs: then they spin ~100 times and sleep, and every product pays a wake-up. Each OS thread
that ever runs a parallel product keeps its own team of OpenMP threads for as long as it lives, so a second thread
that touched torch (a loader, a sweep, the main thread) tips a 2-core machine over that count for good. Measured on a
2-core Zen 4 EPYC VM, same decode: 16.4 tok/s with one thread using torch, 9.0 once a second had (docs/measurements.md,
"One thread for the models"). So every model step of the app runs on this one long-lived thread, one after another.
"""
from __future__ import annotations

import contextvars
import os
import queue
import threading
import time
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Union

from ..engine.baseline import autoregressive_generate
from ..engine.drafter_names import compile_for, drafting
from ..engine.options import Chain, DecodeOptions, Tree
from ..engine.sampling import SamplingConfig
from ..generate import speculative_generate
from ..runtime.report import Reporting, RunReport
from ..trace.records import Round, Step
from .session import Run

BASELINE_PROGRESS_EVERY = 4   # tokens of the target-alone run between progress events


@dataclass(frozen=True)
class WarmupDone:
    seconds: float           # compiling and capturing the forwards, before the prefill


@dataclass(frozen=True)
class RoundDone:
    round: Round


@dataclass(frozen=True)
class SpecDone:
    report: RunReport        # what speculative_generate returned (prefill_seconds, stopped, ...)


@dataclass(frozen=True)
class BaselineProgress:
    tokens: int


@dataclass(frozen=True)
class BaselineDone:
    steps: list[Step]


@dataclass(frozen=True)
class Failed:
    error: BaseException


@dataclass(frozen=True)
class Finished:
    pass


@dataclass(frozen=True)
class Progress:
    fraction: float
    message: str


@dataclass(frozen=True)
class Result:
    value: Any


class Stopped(Exception):
    """Raised inside a `call` step's progress callback once Stop was pressed."""


Event = Union[WarmupDone, RoundDone, SpecDone, BaselineProgress, BaselineDone, Progress, Result, Failed, Finished]


@dataclass(frozen=True)
class DecodeJob:
    """One speculative run (and optionally the target alone after it) on a loaded pair."""

    pair: Any
    prompt_ids: list[int]
    k: int
    sampling: SamplingConfig
    max_new_tokens: int
    seed: int
    compare: bool = False
    adaptive_threshold: float | None = None
    drafter: str = "model"           # the page's drafter (inputs.drafter_choices; "tree": `drafting_of`)
    compile: str = "auto"            # auto | on | off, for the speculative run and the target alone alike
    lookup_k: int | None = None      # the hybrid drafters' lookup rounds' most tokens (None: k)

    @property
    def eos_token_ids(self) -> list[int] | None:
        return list(getattr(self.pair, "eos_token_ids", None) or []) or None


def warmup_events(out: "queue.Queue[Event]") -> Callable[[str, Any], None]:
    """The decoder's `on_event` that reports the end of the warm-up as it happens (from inside the decoder)."""
    def on_event(name: str, value) -> None:
        if name == "warmup_seconds":
            out.put(WarmupDone(float(value)))
    return on_event


def drafting_of(job: DecodeJob) -> Chain | Tree:
    """How the job drafts, for the page's drafter (`inputs.drafter_choices`) and K (`engine.drafter_names`)."""
    return drafting(job.drafter, job.k, job.adaptive_threshold, job.lookup_k)


def compile_mode(drafter: str, compile: str) -> str:
    """The page's compile mode for its drafter and its target alone (`engine.drafter_names.compile_for`)."""
    return compile_for(drafter, compile)


def decode_options_of(job: DecodeJob, run: Run, on_event: Callable[[str, Any], None] | None = None) -> DecodeOptions:
    """The one options object both decoders of a job read (the target alone ignores its drafting)."""
    return DecodeOptions(sampling=job.sampling, max_new_tokens=job.max_new_tokens, seed=job.seed,
                         drafting=drafting_of(job), eos_token_id=job.eos_token_ids, tokenizer=job.pair.tokenizer,
                         compile=compile_mode(job.drafter, job.compile), on_event=on_event,
                         stop=run.stop.is_set)   # asked in the prefill's chunks and between rounds


def decode(job: DecodeJob, run: Run, out: "queue.Queue[Event]") -> None:
    """The thread body: decode, put events; the decoders ask `run.stop` between rounds (and tokens) and end there."""
    try:
        pair = job.pair
        draft = None if job.drafter == "ngram" else pair.draft   # prompt lookup needs no draft model
        gen = Reporting(speculative_generate(pair.target, draft, job.prompt_ids,
                                             decode_options_of(job, run, warmup_events(out))))
        for rnd in gen:   # after Stop the decoder ends itself within one round
            out.put(RoundDone(rnd))
        out.put(SpecDone(gen.report))
        if job.compare and not run.stop.is_set():
            out.put(BaselineDone(_baseline(job, run, out)))
    except Exception as e:  # noqa: BLE001 - reported in the page
        out.put(Failed(e))
    finally:
        out.put(Finished())


def _baseline(job: DecodeJob, run: Run, out: "queue.Queue[Event]") -> list[Step]:
    steps: list[Step] = []
    options = dataclasses.replace(decode_options_of(job, run), tokenizer=None)
    for step in autoregressive_generate(job.pair.target, job.prompt_ids, options):
        steps.append(step)
        if len(steps) % BASELINE_PROGRESS_EVERY == 0:
            out.put(BaselineProgress(len(steps)))
    return steps


class TorchThread:
    """The one long-lived thread that runs the app's model steps, in the order they come (see the module's doc)."""

    def __init__(self):
        self.pid = os.getpid()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, body: Callable[[], None]) -> None:
        """Queue `body` (it reports its own outcome); started again if a job ever killed the thread, and anew in a
        forked process (ZeroGPU runs each call in one), which inherits neither the thread nor a usable lock."""
        if os.getpid() != self.pid:
            self.__init__()
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._serve, daemon=True, name="specviz-torch")
                self.thread.start()
        self.jobs.put(body)

    def _serve(self) -> None:
        while True:
            self.jobs.get()()

    def run(self, fn: Callable[..., Any], *args) -> Any:
        """`fn(*args)` on this thread, waited for, in the caller's context (so Gradio's progress still reports); its
        exception is raised here. For an event that runs a model step in place, and for scripts. Called from a step
        already on this thread, it runs at once (waiting for itself would never end)."""
        if threading.current_thread() is self.thread:
            return fn(*args)
        done: queue.Queue = queue.Queue()
        context = contextvars.copy_context()

        def body():
            try:
                done.put((True, context.run(fn, *args)))
            except BaseException as e:  # noqa: BLE001 - raised again in the caller
                done.put((False, e))

        self.submit(body)
        ok, value = done.get()
        if not ok:
            raise value
        return value


torch_thread = TorchThread()


def start(job: DecodeJob, run: Run) -> "queue.Queue[Event]":
    """Queue the decode on the models' thread; returns the queue its events arrive on."""
    out: queue.Queue = queue.Queue()
    torch_thread.submit(lambda: decode(job, run, out))
    return out


def call(fn: Callable[[Callable[[float, str], None]], Any], run: Run, models: bool = True) -> "queue.Queue[Event]":
    """Run `fn(progress)` on the models' thread (`models=False`: a thread of its own, for a step that runs no model,
    so it never waits behind a decode); `progress(fraction, message)` reports, and raises `Stopped` after Stop."""
    out: queue.Queue = queue.Queue()

    def progress(fraction: float, message: str) -> None:
        out.put(Progress(float(fraction), message if isinstance(message, str) else str(message)))   # keeps a key
        if run.stop.is_set():
            raise Stopped()

    def body():
        try:
            out.put(Result(fn(progress)))
        except BaseException as e:  # noqa: BLE001 - reported in the page (Stopped included)
            out.put(Failed(e))
        finally:
            out.put(Finished())

    if models:
        torch_thread.submit(body)
    else:
        threading.Thread(target=body, daemon=True, name="specviz-step").start()
    return out


def batches(events: "queue.Queue[Event]", tick: float | None = None,
            interval: float | None = None) -> Iterator[list[Event]]:
    """Everything ready at once, one list per wait (so the page gets one update per batch), until `Finished`.

    With `tick`, an empty list comes after each `tick` seconds without events. With `interval`, batches come at most
    once per `interval` seconds (counted from the start of the previous one, so the consumer's own drawing is inside
    it): whatever arrives meanwhile waits in the queue and comes in the next batch, whole. The decode thread never
    waits for this (the queue is unbounded); the pause is a sleep, which leaves it the GIL and the cores.
    """
    last = None
    while True:
        if interval and last is not None:
            rest = last + interval - time.monotonic()
            if rest > 0:
                time.sleep(rest)
        try:
            batch = [events.get(timeout=tick)]
        except queue.Empty:
            yield []
            continue
        while True:
            try:
                batch.append(events.get_nowait())
            except queue.Empty:
                break
        last = time.monotonic()
        yield batch
        if any(isinstance(e, Finished) for e in batch):
            return
