"""One run, for the page and the API alike: settings -> job -> events -> trace.

The page (`ui.tabs.generate`) streams the events as they come and the API (`ui.api`) waits for them all, but both
build the job the same way (`job_of`), fold the worker's events into the same `Outcome` (`Outcome.take`) and write
the same trace (`make_trace`), so a run asked through "Use via API" is the run the page shows. The decoder itself is
called in one place, the worker's thread (`ui.worker.decode`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..runtime.report import RunReport
from ..trace.records import Round, Trace
from ..viz.format import drafter_name, strip_special
from . import worker
from .inputs import RunSettings
from .session import Run
from .worker import BaselineDone, DecodeJob, Failed, Finished, RoundDone, SpecDone, WarmupDone


def job_of(pair, s: RunSettings, ids: list[int]) -> DecodeJob:
    """The worker's job for checked settings and an encoded prompt."""
    return DecodeJob(pair, ids, s.k, s.sampling, s.max_new_tokens, s.seed, s.compare, s.adaptive_threshold,
                     s.drafter, s.compile, s.lookup_k)


@dataclass
class Outcome:
    """What the worker reported: its rounds and everything else (the page adds what it measured after the run)."""

    rounds: list[Round] = field(default_factory=list)
    spec_report: RunReport = RunReport()   # what the speculative run returned (its prefill time, whether cut)
    steps: list | None = None          # the target-alone run, when it ran
    error: BaseException | None = None
    warmup_seconds: float | None = None  # compiling and capturing the forwards (compiled runs only)
    finished: bool = False
    stopped: bool = False              # the user pressed Stop (or the page went away)
    speedup: float | None = None       # measured against the target alone, when it ran (the page's)

    def take(self, event, stopped: Callable[[], bool] = lambda: False) -> None:
        """Fold one worker event in; `stopped` says, at `Finished`, whether the run was stopped."""
        match event:
            case WarmupDone(seconds=seconds):
                self.warmup_seconds = seconds
            case RoundDone(round=rnd):
                self.rounds.append(rnd)
            case SpecDone(report=report):
                self.spec_report = report
            case BaselineDone(steps=steps):
                self.steps = steps
            case Failed(error=error):
                self.error = error
            case Finished():
                self.finished, self.stopped = True, stopped()


def collect(job: DecodeJob, run: Run | None = None) -> Outcome:
    """The whole run at once (the API; scripts): every event of the worker folded into one Outcome."""
    outcome = Outcome()
    for batch in worker.batches(worker.start(job, run or Run())):
        for event in batch:
            outcome.take(event)
    return outcome


def make_trace(pair, s: RunSettings, ids: list[int], rounds: list[Round], report: RunReport) -> Trace:
    """The run as a trace: what the page's download holds and the API returns."""
    rounds = list(rounds)
    return Trace(prompt=s.prompt, prompt_ids=list(ids), draft_model=draft_label(pair, s.drafter),
                 target_model=pair.target_name, k=s.k, max_new_tokens=s.max_new_tokens, seed=s.seed,
                 sampling=s.sampling.to_dict(), rounds=rounds,
                 output_text=clean_text(pair, [tok for r in rounds for tok in r.emitted]),
                 prefill_seconds=report.seconds("prefill_seconds"),
                 device=str(pair.device), dtype=str(pair.dtype).replace("torch.", ""),
                 target_weights=pair.weights_label(), adaptive_threshold=s.adaptive_threshold, lookup_k=s.lookup_k)


def clean_text(pair, ids: list[int]) -> str:
    """The output as a reader wants it: decoded as a whole (so multi-byte characters join), special tokens hidden.

    A character whose bytes are not all there yet (an emoji split over tokens, cut by the token limit or waiting for
    the next round) decodes as U+FFFD at the end: it is left out, not shown as "�" (the live text shows its bytes)."""
    try:
        text = pair.tokenizer.decode(list(ids), skip_special_tokens=True)
    except Exception:  # noqa: BLE001 - a tokenizer without the option: the pair's own decode, specials stripped
        text = strip_special(_decode(pair, ids))
    return text.rstrip("\ufffd")


def draft_label(pair, drafter: str) -> str:
    """The trace's draft_model: the draft's name, with the drafter when it is not the model alone (trace files are
    language-neutral: English names)."""
    name = pair.draft_name
    if drafter == "model":
        return name
    return drafter_name(drafter, "en") if drafter == "ngram" else f"{name} + {drafter_name(drafter, 'en')}"


def _decode(pair, ids: list[int]) -> str:
    try:
        return pair.decode(ids)
    except Exception:  # noqa: BLE001 - a display convenience only
        return ""
