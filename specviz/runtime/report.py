"""What a decoding run measured and how it ended: a frozen `RunReport`, handed back when the run ends.

Both decoding loops (the speculative decoder and the target alone) are generators; each returns its report as the
generator's return value (`StopIteration.value`, or `report = yield from loop`). A consumer that iterates with `for`
wraps the loop in `Reporting` and reads `.report` afterwards. A live consumer (the page says when the warm-up ended,
while the run goes on) gives `DecodeOptions.on_event`, called with each fact as it becomes known.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Generator, Iterator


@dataclass(frozen=True)
class RunReport:
    """A run's set-up times and its end. A time is None where the run did not spend it."""

    prefill_seconds: float | None = None   # reading the prompt into the caches (None: stopped before it was read)
    warmup_seconds: float | None = None    # compiling and capturing the forwards, before the prefill (compiled runs)
    drafter_seconds: float | None = None   # building the drafter (uncompiled speculative runs: a trimmed head's cut)
    stopped: bool = False                  # the caller's stop() ended the run (between rounds, or before any)
    graphs_fallback: str | None = None     # why capturing the CUDA graphs failed: the run then decoded eagerly

    def seconds(self, name: str) -> float:
        """One of the times, 0.0 where it was not spent (what a figure subtracts)."""
        value = getattr(self, name)
        return 0.0 if value is None else float(value)


EVENTS = tuple(f.name for f in fields(RunReport))   # the names `on_event` is called with

OnEvent = Callable[[str, Any], None]   # on_event(name, value): one of EVENTS, as the run learns it


class Facts:
    """A run's facts as they come in (the runtime's side): the report is made of them once, when the run ends."""

    def __init__(self, on_event: OnEvent | None = None):
        self.values: dict[str, Any] = {}
        self.on_event = on_event

    def note(self, name: str, value: Any) -> None:
        self.values[name] = value
        if self.on_event is not None:
            self.on_event(name, value)

    def report(self) -> RunReport:
        return RunReport(**self.values)


class Reporting:
    """Iterate a decoding loop with `for` and keep what it returned: `.report` once the loop has ended (None before,
    or when the consumer left the loop early)."""

    def __init__(self, loop: Generator[Any, None, RunReport]):
        self.loop = loop
        self.report: RunReport | None = None

    def __iter__(self) -> Iterator:
        self.report = yield from self.loop


def run_to_end(loop: Generator[Any, None, RunReport]) -> tuple[list, RunReport]:
    """Every item of a decoding loop, and its report."""
    reporting = Reporting(loop)
    return list(reporting), reporting.report
