"""Throughput versus K: the app's sweep (`sweep_k`) and the same view of the benchmark's medians.

Both feed `specviz.viz.charts.throughput_vs_k_figure` with a `KSweep`, so the
app's chart and the benchmark report's copy of it read the same numbers.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from ..limits import MAX_K
from ..engine.options import DecodeOptions
from ..engine.sampling import SamplingConfig
from ..stats import finite, median
from .costs import forward_costs, theory_speedup
from .measure import run_method

Progress = Callable[[float, str], None]


@dataclass
class KRow:
    k: int
    tokens_per_s: float
    acceptance_rate: float
    alpha: float
    tau: float
    c: float
    verify_cost: float
    theory_speedup: float
    speedup: float               # tokens_per_s / target alone's tokens_per_s
    new_tokens: int
    seconds: float
    per_position: list[float] = field(default_factory=list)


@dataclass
class KSweep:
    target_tokens_per_s: float
    rows: list[KRow]
    max_new_tokens: int
    sampling: dict
    target_1_seconds: float = float("nan")
    draft_1_seconds: float = float("nan")

    @property
    def best_k(self) -> int | None:
        good = [r for r in self.rows if not math.isnan(r.tokens_per_s)]
        return max(good, key=lambda r: (r.tokens_per_s, -r.k)).k if good else None

    @property
    def best(self) -> KRow | None:
        return next((r for r in self.rows if r.k == self.best_k), None)

    def to_dict(self) -> dict:
        return finite({"target_tokens_per_s": self.target_tokens_per_s, "best_k": self.best_k,
                       "max_new_tokens": self.max_new_tokens, "sampling": self.sampling,
                       "target_1_seconds": self.target_1_seconds, "draft_1_seconds": self.draft_1_seconds,
                       "rows": [asdict(r) for r in self.rows]})


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs, besides what it decodes (its Ks, sampling and budget).

    `record=False` (default) times the decoder without the per-token trace, the
    way it runs when only speed matters; `record=True` includes the trace cost.
    `progress(fraction, message)` is called before each step and at the end. `stop` (a callable) is asked between
    rounds of every run: once True, `RunStopped` (a cut sweep has no chart), so Stop never waits for a whole run.
    `cost_repeats`: timed repetitions of each bare forward behind c and the verify cost.
    """

    seed: int = 0
    tokenizer: Any = None
    progress: Progress | None = None
    record: bool = False
    cost_repeats: int = 3
    stop: Callable[[], bool] | None = None


def sweep_k(target, draft, input_ids, ks: Sequence[int], sampling: SamplingConfig = SamplingConfig(),
            max_new_tokens: int = 64, options: SweepOptions = SweepOptions(), **keywords) -> KSweep:
    """Target alone once, then the speculative decoder at each K; EOS ignored, same token counts.

    `options` (a `SweepOptions`) says how; keywords naming its fields amend it, as callers have always written
    them (`sweep_k(target, draft, ids, ks, sampling, 64, seed=1, stop=flag.is_set)`; an unknown one is a TypeError).
    """
    options = dataclasses.replace(options, **keywords) if keywords else options
    ks = [int(k) for k in ks]
    if not ks:
        raise ValueError("give at least one K")
    for k in ks:
        if not 1 <= k <= MAX_K:
            raise ValueError(f"K must be in [1, {MAX_K}], got {k}")
    report = options.progress or (lambda f, m: None)
    steps = len(ks) + 2
    report(0.0, "timing bare forwards")
    costs = forward_costs(target, draft, input_ids, ks, repeats=options.cost_repeats, stop=options.stop)
    report(1 / steps, "target alone")
    decoding = DecodeOptions(sampling=sampling, max_new_tokens=max_new_tokens, seed=options.seed,
                             tokenizer=options.tokenizer, stop=options.stop)
    base = run_method("target", target, draft, input_ids, None, decoding)
    rows = []
    method = "specviz" if options.record else "specviz_notrace"
    for i, k in enumerate(ks):
        report((i + 2) / steps, f"speculative decoding, K = {k}")
        run = run_method(method, target, draft, input_ids, k, decoding)
        c, vc = costs.c, costs.verify_cost(k)
        rows.append(KRow(k=k, tokens_per_s=run.tokens_per_s, acceptance_rate=run.acceptance_rate,
                         alpha=run.alpha, tau=run.tau, c=c, verify_cost=vc,
                         theory_speedup=theory_speedup(run.alpha, k, c, vc),
                         speedup=run.tokens_per_s / base.tokens_per_s, new_tokens=run.new_tokens,
                         seconds=run.seconds, per_position=run.per_position))
    report(1.0, "done")
    return KSweep(target_tokens_per_s=base.tokens_per_s, rows=rows, max_new_tokens=max_new_tokens,
                  sampling=sampling.to_dict(), target_1_seconds=costs.target_1, draft_1_seconds=costs.draft_1)


def ksweep_from_rows(rows: list[dict], temperature: float, method: str = "specviz_notrace") -> KSweep | None:
    """The benchmark's medians over prompts as a KSweep, so the report can reuse the app's chart."""
    rs = [r for r in rows if r["temperature"] == temperature]
    base = median([r["tokens_per_s"] for r in rs if r["method"] == "target"])
    ks = sorted({r["k"] for r in rs if r["method"] == method and r["k"] is not None})
    out = []
    for k in ks:
        sel = [r for r in rs if r["method"] == method and r["k"] == k]
        med = {f: median([r[f] for r in sel]) for f in ("tokens_per_s", "acceptance_rate", "alpha", "tau", "c",
                                                        "verify_cost", "theory_speedup", "speedup_vs_target",
                                                        "new_tokens", "seconds")}
        out.append(KRow(k=k, tokens_per_s=med["tokens_per_s"], acceptance_rate=med["acceptance_rate"],
                        alpha=med["alpha"], tau=med["tau"], c=med["c"], verify_cost=med["verify_cost"],
                        theory_speedup=med["theory_speedup"], speedup=med["speedup_vs_target"],
                        new_tokens=int(med["new_tokens"]) if not math.isnan(med["new_tokens"]) else 0,
                        seconds=med["seconds"]))
    if not out:
        return None
    return KSweep(target_tokens_per_s=base, rows=out, max_new_tokens=max(r.new_tokens for r in out),
                  sampling={"temperature": temperature})
