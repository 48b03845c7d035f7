"""Benchmarks: throughput versus K, and the side-by-side comparison of decoders.

One measuring layer serves both the app's Throughput-vs-K chart (`sweep_k`) and
the command line (`python -m specviz bench`, in `specviz.cli.bench`):

    methods.py  the decoders compared, by name
    measure.py  `run_method`: one generation by one method, timed
    costs.py    `forward_costs`: bare forwards timed for the theory (c, verify_cost)
    sweep.py    `sweep_k`: target alone, then specviz at each K (the app's chart)
    prompts.py  `load_prompts`: the benchmark's JSONL prompt file
    suite.py    `run_benchmark` (interleaved, failures recorded), `format_table`, `write_results`
    summary.py  `summarize`: medians over prompts, best K, baselines, per category
    shapes.py   known architectures as random-weight models (`python -m specviz costs`)
    llamacpp.py llama.cpp on the target's GGUF as a peer (optional llama-cpp-python)

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
  differs only by decoder overhead and correlated acceptances. Prompt lookup
  (hf_prompt_lookup, specviz_ngram) has no draft model, so no c and no theory.
- transformers' peers: hf_generate and hf_static (target alone), hf_assisted
  (constant K), hf_assisted_default (its own defaults: 20 tokens, confidence
  0.4) and hf_prompt_lookup (K = prompt_lookup_num_tokens). hf_static runs by
  default only on CUDA; a method that raises leaves an "error" in its rows.
- llama.cpp (llamacpp_target, llamacpp_lookup) runs the target's own GGUF when
  llama-cpp-python is installed: a peer in the same run and table, its output
  its own run of the model (see llamacpp.py); never required.
- Every speedup is also reported against the fastest target-alone method of
  the run, and specviz's best speed mode against transformers' best method
  (ratio_vs_hf_best), overall and per prompt category (see summary.py).
"""
from __future__ import annotations

from ..limits import ASSET_PROMPTS, SHARED_PROMPTS, default_prompts_file
from ..stats import median
from .costs import ForwardCosts, forward_costs, theory_speedup
from ..runtime.decoding import PrefillStopped
from .measure import Run, RunStopped, run_method
from .methods import K_METHODS, METHODS, default_methods
from .prompts import BenchError, Prompt, load_prompts
from .suite import BenchPlan, format_table, run_benchmark, write_results
from .summary import summarize, temp_key
from .sweep import KRow, KSweep, SweepOptions, ksweep_from_rows, sweep_k


__all__ = ["ASSET_PROMPTS", "SHARED_PROMPTS", "default_prompts_file", "median", "ForwardCosts", "forward_costs",
           "theory_speedup", "Run", "RunStopped", "PrefillStopped", "run_method", "K_METHODS", "METHODS", "default_methods", "BenchError", "Prompt",
           "load_prompts",
           "BenchPlan", "format_table", "run_benchmark", "summarize", "temp_key", "write_results", "KRow", "KSweep",
           "ksweep_from_rows", "SweepOptions", "sweep_k"]
