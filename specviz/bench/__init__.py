"""Benchmarks: throughput versus K, and the side-by-side comparison of decoders.

One measuring layer serves both the app's Throughput-vs-K chart (`sweep_k`) and
the command line (`python -m specviz bench`, in `specviz.cli.bench`):

    methods.py  the decoders compared, by name
    measure.py  `run_method`: one generation by one method, timed
    costs.py    `forward_costs`: bare forwards timed for the theory (c, verify_cost)
    sweep.py    `sweep_k`: target alone, then specviz at each K (the app's chart)
    prompts.py  `load_prompts`: the benchmark's JSONL prompt file
    suite.py    `run_benchmark`, `summarize`, `format_table`, `write_results`

Conventions (the same for every method, so tokens/s compare like with like):
- EOS is ignored: every method produces exactly `max_new_tokens` new tokens
  (transformers' `generate` gets `min_new_tokens = max_new_tokens`).
- Throughput is decode throughput: tokens emitted *after the first emission*
  divided by the wall time from the first emission to the last. The first
  emission is where the prompt's prefill ends for every method (for assisted
  generation the target's prefill happens in the first verify), so prefill
  never enters tokens/s; it is reported separately (`first_emit_seconds`), and
  the end-to-end rate is in `e2e_tokens_per_s`.
- c = one draft forward (1 new token, warm cache) / one target forward (1 new
  token); verify_cost = one target forward over K+1 new tokens / one target
  forward over 1. Both are timed on bare forwards, interleaved, medians of a
  few repetitions (`forward_costs`); theory_speedup = theory.expected_speedup(
  alpha_verified, K, c, verify_cost). Measured over theoretical speedup then
  differs only by decoder overhead and correlated acceptances.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..limits import ASSET_PROMPTS, SHARED_PROMPTS, default_prompts_file
from ..stats import median
from .costs import ForwardCosts, forward_costs, theory_speedup
from .measure import Run, run_method
from .methods import K_METHODS, METHODS
from .prompts import BenchError, Prompt, load_prompts
from .suite import format_table, run_benchmark, summarize, temp_key, write_results
from .sweep import KRow, KSweep, ksweep_from_rows, sweep_k


def main(argv: Sequence[str] | None = None, *, pair_loader: Callable[..., Any] | None = None) -> int:
    """`python -m specviz bench ...` (see specviz.cli.bench.main); returns the exit code."""
    # Imported here: the command line imports this package, not the other way round.
    from ..cli.bench import main as bench_main

    return bench_main(argv, pair_loader=pair_loader)


__all__ = ["ASSET_PROMPTS", "SHARED_PROMPTS", "default_prompts_file", "median", "ForwardCosts", "forward_costs",
           "theory_speedup", "Run", "run_method", "K_METHODS", "METHODS", "BenchError", "Prompt", "load_prompts",
           "format_table", "run_benchmark", "summarize", "temp_key", "write_results", "KRow", "KSweep",
           "ksweep_from_rows", "sweep_k", "main"]
