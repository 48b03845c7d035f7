"""The whole benchmark: every method on every prompt, K, temperature and repeat; then the statistics.

`run_benchmark` interleaves the measurements (per prompt: bare forward costs,
then every method in a rotating order) so drift on a shared machine hits all
methods alike. `summarize` (specviz.bench.summary) reduces the rows to medians
over prompts, each prompt's value first being its median over repeats.
`write_results` writes results.json and the standalone HTML report.

A method that raises (hf_static where transformers cannot build a static cache,
say) does not end the run: its row records the error, its numbers are missing,
and the table says it failed.
"""
from __future__ import annotations

import gc
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..runtime.decoding import input_device
from ..models.quant.kernels import linear_path
from ..models.quant.weights import weights_label
from ..engine.options import DecodeOptions
from ..engine.sampling import SamplingConfig
from ..stats import finite, fmt
from ..engine.tree_drafter import TreeCosts
from ..viz.report import write_report
from .costs import ForwardCosts, forward_costs, theory_speedup
from .roofline import bytes_per_token, read_bandwidth, roofline
from .measure import Run, run_method
from .llamacpp import run_llamacpp
from .methods import HF_METHODS, K_METHODS, LOOKUP_METHODS, PEER_METHODS, TREE_METHODS
from .prompts import Prompt
from .summary import base_method, summarize, temp_key
from .sweep import ksweep_from_rows

NAN = float("nan")
LLAMACPP_NOTE = ("llamacpp_*: llama.cpp's own run of the target's GGUF file (its quantized kernels, its sampler), fed "
                 "the same prompt token ids; 'same out' compares its token ids with specviz's target alone")


# ---------------------------------------------------------------- measuring
@dataclass(frozen=True)
class BenchPlan:
    """What the benchmark measures: every method on every prompt (`encoded`: its token ids), K, sampling and repeat.

    `hf_draft`: the assistant of transformers' methods when it differs from specviz's draft (the draft as
    transformers would load it, where specviz drafts with int8 weights). `variants`: other configurations of the
    same target, as (name, loader) pairs (e.g. ("bf16", ...)): each is loaded after the main phase, runs
    `variant_methods` (its rows named "method@name") and is let go before the next, so at most two targets are
    resident; the summary's fastest target alone is the fastest of every configuration. `llamacpp`: a
    `specviz.bench.llamacpp.LlamaCppPeer` (the target's GGUF in llama.cpp) for the PEER_METHODS among `methods`;
    they run in the main phase only, interleaved with the others. `lookup_k`: the most tokens the hybrid methods'
    lookup rounds propose (None: K, as their model rounds)."""

    prompts: list[Prompt]
    encoded: list[list[int]]
    ks: list[int]
    samplings: list[SamplingConfig]
    methods: list[str]
    repeats: int = 1
    warmup: bool = True
    quiet: bool = True
    hf_draft: Any = None
    variants: Sequence[tuple[str, Callable[[], Any]]] = ()
    variant_methods: Sequence[str] = ("target", "hf_generate")
    llamacpp: Any = None
    lookup_k: int | None = None


def run_benchmark(target, draft, plan: BenchPlan, options: DecodeOptions) -> dict:
    """All measurements, interleaved per prompt and K; returns {"rows", "summary", "costs", "linear_path"}.

    `options` carries what every run shares: the budget (`max_new_tokens`), the first seed (repeat r runs seed + r),
    the tokenizer and `compile` (as in `run_method`: compiled loops are compiled and captured by the warm-up and by
    each run's own warm-up step, never inside the timed decode); each run takes its sampling from `plan`.
    """
    on_cpu = input_device(target).type == "cpu"
    bandwidth = read_bandwidth() if on_cpu else NAN
    weight_bytes = {weights_label(target): bytes_per_token(target)}
    rows, costs = _phase(target, draft, plan, options, plan.methods, "")
    variant_costs = {}
    for name, load in plan.variants:
        print(f"specviz bench: the target as {name} ...", file=sys.stderr)
        model = load()
        weight_bytes[name] = bytes_per_token(model)
        chosen = [m for m in plan.methods if m in plan.variant_methods and m not in PEER_METHODS]
        more, variant_costs[name] = _phase(model, draft, plan, options, chosen, f"@{name}")
        rows += more
        del model
        gc.collect()
    out = {"rows": rows, "summary": summarize(rows), "costs": costs, "linear_path": linear_path(target),
           "draft_linear_path": linear_path(draft), "target_weights": weights_label(target)}
    if variant_costs:
        out["variant_costs"] = variant_costs
    if on_cpu:   # probed before and after: this memory's speed moves within minutes; the faster probe is the floor
        probes = [bandwidth, read_bandwidth()]
        out["roofline"] = _rooflines(out, max(probes), weight_bytes) | {"probes_gb_s": [p / 1e9 for p in probes]}
    return out


def _rooflines(result: dict, bandwidth: float, weight_bytes: dict[str, int]) -> dict:
    """Per temperature: the fastest target alone against the memory roofline of its configuration."""
    out = {"bandwidth_gb_s": bandwidth / 1e9, "bytes_per_token": weight_bytes}
    for tkey, s in result["summary"].items():
        name = s.get("fastest_alone")
        tps = s.get("methods", {}).get(name, {}).get("tokens_per_s") if name else None
        if not name or not tps:
            continue
        label = name.split("@", 1)[1] if "@" in name else result["target_weights"]
        if label in weight_bytes:
            out[tkey] = {"method": name, "weights": label, **roofline(bandwidth, weight_bytes[label], 1 / tps)}
    return out


def _phase(target, draft, plan: BenchPlan, options: DecodeOptions, methods: list[str],
           suffix: str) -> tuple[list[dict], dict]:
    """Every method on one target configuration; rows are named "method" + suffix."""
    ks, llamacpp = plan.ks, plan.llamacpp
    plain = [m for m in methods if m not in K_METHODS]
    with_k = [m for m in methods if m in K_METHODS]
    per_prompt = len(plain) + len(with_k) * len(ks)
    bar = _progress_bar(len(plan.samplings) * plan.repeats * len(plan.prompts) * per_prompt, plan.quiet)
    failed: dict[str, str] = {}   # method -> its first error, reported once on stderr

    def attempt(m, k, ids, run: DecodeOptions, fc=None):
        try:
            if m in PEER_METHODS:
                if llamacpp is None:
                    raise ValueError(f"{m} needs llama-cpp-python and the target's GGUF file")
                return run_llamacpp(m, llamacpp, ids, k, run.sampling, run.max_new_tokens, run.seed)
            assistant = plan.hf_draft if plan.hf_draft is not None and m in HF_METHODS else draft
            return run_method(m, target, assistant, ids, k, run, lookup_k=plan.lookup_k,
                              tree_costs=tree_costs(fc) if fc and m in TREE_METHODS else None)
        except Exception as e:   # one method failing must not cost the whole run
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            if m not in failed:
                failed[m] = error
                print(f"specviz bench: {m}{suffix} failed ({error}); its rows record the error", file=sys.stderr)
            return error

    if plan.warmup and plan.samplings:   # every code path once, short, on the first prompt
        short = replace(options, sampling=plan.samplings[0], max_new_tokens=min(8, options.max_new_tokens))
        for m, k in [(m, None) for m in plain] + [(m, ks[0]) for m in with_k]:
            attempt(m, k, plan.encoded[0], short)

    rows: list[dict] = []
    costs: dict[str, dict] = {}
    # A tree's node budget is re-chosen each round from the verify cost at every row count up to K + 1.
    cost_ks = sorted(set(ks) | (set(range(1, max(ks) + 1)) if ks and set(with_k) & set(TREE_METHODS) else set()))
    for sampling, rep in [(sampling, rep) for sampling in plan.samplings for rep in range(plan.repeats)]:
        run = replace(options, sampling=sampling, seed=options.seed + rep)
        for pi, (prompt, ids) in enumerate(zip(plan.prompts, plan.encoded)):
            fc = forward_costs(target, draft, ids, cost_ks, repeats=3)
            costs.setdefault(prompt.id, fc.to_dict())
            # Rotate the order each repeat so no method always runs first after a cost pass.
            jobs = [(m, None) for m in plain] + [(m, k) for k in ks for m in with_k]
            shift = (rep + pi) % len(jobs)
            jobs = jobs[shift:] + jobs[:shift]
            got: list[tuple[Run | str, str, int | None]] = []
            for m, k in jobs:
                if bar is not None:
                    bar.set_description(f"T={temp_key(sampling.temperature)} rep {rep + 1}/{plan.repeats} "
                                        f"{prompt.id} {m}{suffix}" + (f" K={k}" if k else ""), refresh=False)
                got.append((attempt(m, k, ids, run, fc), m, k))
                if bar is not None:
                    bar.update(1)
            ref = next((r for r, m, _ in got if m == "target" and isinstance(r, Run)), None)
            rows += [_row(prompt, m + suffix, r, ref, sampling, rep, run.seed, fc) if isinstance(r, Run)
                     else _error_row(prompt, m + suffix, k, r, sampling, rep, run.seed)
                     for r, m, k in got]
    if bar is not None:
        bar.close()
    return rows, costs


def tree_costs(fc: ForwardCosts) -> TreeCosts:
    """The measured costs as a tree drafter reads them (verify[n]: n nodes after the pending token)."""
    n_max = max(fc.target_k, default=0)
    return TreeCosts(fc.c, (1.0, *(fc.verify_cost(n) for n in range(1, n_max + 1))))


def _row(prompt: Prompt, method: str, run: Run, ref: Run | None, sampling: SamplingConfig, rep: int, seed: int,
         fc: ForwardCosts) -> dict:
    """One line of results.json: one run, its costs and theory, and its speed against the target's run."""
    k = run.k
    # c and verify_cost describe a draft model; prompt lookup drafts for free, so the theory does not apply;
    # nor does it to a tree, whose K nodes are not a chain of K drafts.
    modelled = k is not None and base_method(method) not in (*LOOKUP_METHODS, *TREE_METHODS)
    c = fc.c if modelled else NAN
    vc = fc.verify_cost(k) if modelled else NAN
    return {
        "prompt_id": prompt.id, "category": prompt.category, "method": method, "k": k,
        "temperature": sampling.temperature, "repeat": rep, "seed": seed,
        "new_tokens": run.new_tokens, "seconds": run.seconds,
        "tokens_per_s": run.tokens_per_s, "e2e_tokens_per_s": run.e2e_tokens_per_s,
        "first_emit_seconds": run.first_emit_seconds, "total_seconds": run.total_seconds,
        "acceptance_rate": run.acceptance_rate, "alpha": run.alpha, "tau": run.tau,
        "rounds": run.rounds, "per_position": run.per_position, "lookup_share": run.lookup_share,
        "c": c, "verify_cost": vc,
        "theory_speedup": theory_speedup(run.alpha, k, c, vc) if modelled else NAN,
        "speedup_vs_target": (run.tokens_per_s / ref.tokens_per_s) if ref else NAN,
        # Only greedy outputs are comparable token for token; samples differ by design.
        "matches_target": (run.output_ids == ref.output_ids) if ref and sampling.greedy else None,
        "error": None,
    }


def _error_row(prompt: Prompt, method: str, k: int | None, error: str, sampling: SamplingConfig, rep: int,
               seed: int) -> dict:
    """The row of a run that raised: the error, and every number missing."""
    numbers = ("seconds", "tokens_per_s", "e2e_tokens_per_s", "first_emit_seconds", "total_seconds",
               "acceptance_rate", "alpha", "tau", "lookup_share", "c", "verify_cost", "theory_speedup",
               "speedup_vs_target")
    return {"prompt_id": prompt.id, "category": prompt.category, "method": method, "k": k,
            "temperature": sampling.temperature, "repeat": rep, "seed": seed, "new_tokens": 0, "rounds": 0,
            "per_position": [], "matches_target": None, **{f: NAN for f in numbers}, "error": error}


def _progress_bar(total: int, quiet: bool):
    if quiet:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:   # pragma: no cover - tqdm comes with transformers
        return None
    return tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True, mininterval=0.5)


# ---------------------------------------------------------------- output
def format_table(result: dict) -> str:
    """The summary as the plain-text table the command prints: costs, methods, headline, categories, failures."""
    lines = [_costs_line(result)] if result.get("costs") else []
    lines += [_costs_line({"costs": c, "linear_path": name}, name) for name, c in result.get("variant_costs", {}).items()]
    for tkey, r in result.get("roofline", {}).items():
        if isinstance(r, dict) and "floor_ms" in r:
            lines.append(f"roofline (T={tkey}): the fastest target alone, {r['method']} ({r['weights']}), "
                         f"{r['measured_ms']:.0f} ms/token; {r['bytes_per_token'] / 1e9:.2f} GB/token at "
                         f"{result['roofline']['bandwidth_gb_s']:.1f} GB/s is {r['floor_ms']:.0f} ms: "
                         f"{r['share_of_roofline']:.0%} of the roofline" + _probes_note(result["roofline"], r))
    if result.get("target_weights"):
        lines.append(f"the target's weights: {result['target_weights']} in the rows named without '@'; "
                     "'method@X' ran on the same target stored as X; 'same prec' is against the target alone "
                     "in that same configuration")
    if any(base_method(r["method"]) in PEER_METHODS for r in result.get("rows", ())):
        lines.append(LLAMACPP_NOTE)
    for tkey, s in result["summary"].items():
        alone = s.get("fastest_alone")
        lines.append(f"\ntemperature {tkey}: medians over {s['prompts']} prompt(s); "
                     f"speedups vs target and vs the fastest target-alone method ({alone or '-'})")
        lines.append(f"{'method':<26}{'K':>3}{'tok/s':>9}{'speedup':>9}{'vs alone':>9}{'same prec':>10}"
                     f"{'accept':>8}{'tau':>6}{'theory':>8}{'same out':>9}")
        for r in s["table"]:
            failed = f"  FAILED {r['errors']}x: {r['error']}" if r.get("errors") else ""
            lines.append(f"{r['method']:<26}{fmt(r['k'], '{}'):>3}{fmt(r['tokens_per_s']):>9}"
                         f"{fmt(r['speedup_vs_target'], '{:.2f}x'):>9}"
                         f"{fmt(r.get('speedup_vs_fastest_alone'), '{:.2f}x'):>9}"
                         f"{fmt(r.get('speedup_vs_same_precision'), '{:.2f}x'):>10}{fmt(r['acceptance_rate']):>8}"
                         f"{fmt(r['tau']):>6}{fmt(r['theory_speedup'], '{:.2f}x'):>8}"
                         f"{fmt(r['matches_target'], '{:.0%}'):>9}{failed}")
        lines.append(f"best K {s['best_k']}: speedup vs target {fmt(s['speedup_vs_target'], '{:.2f}x')}, "
                     f"vs hf_assisted (K {s['hf_assisted_best_k']}) {fmt(s['ratio_vs_hf_assisted'], '{:.2f}x')}, "
                     f"achieved/theory {fmt(s['achieved_over_theory'])}, "
                     f"trace overhead {fmt(s['trace_overhead'], '{:+.1%}')}")
        if "specviz_best" in s:
            lines.append("overall: " + _headline_line(s))
        for cat, c in s.get("categories", {}).items():
            lines.append(f"  {cat} ({c['prompts']} prompt(s)): " + _headline_line(c))
    return "\n".join(lines)


def _probes_note(roof: dict, r: dict) -> str:
    """The read bandwidth probed before and after the run, and a word where the share passes 100 %: the memory ran
    faster while the target did than at either probe (scripts/synthetic_target.py pairs each step with its own)."""
    probes = roof.get("probes_gb_s")
    note = f" (read bandwidth probed {probes[0]:.1f} GB/s before the run, {probes[1]:.1f} after)" if probes else ""
    if r["share_of_roofline"] > 1:
        note += "; over 100 %: the memory ran faster during the run than at either probe"
    return note


def _costs_line(result: dict, label: str | None = None) -> str:
    """Bare forward costs, medians over prompts: c and the verify cost at each K, and the kernels that ran."""
    costs = list(result["costs"].values())
    c = statistics.median(x["c"] for x in costs)
    ks = sorted({int(k) for x in costs for k in x["target_k"]})
    verify = ", ".join(f"K={k} {statistics.median(x['target_k'][str(k)] / x['target_1'] for x in costs):.2f}x"
                       for k in ks)
    t1 = statistics.median(x["target_1"] for x in costs)
    path = result.get("linear_path") or "default"
    draft_path = result.get("draft_linear_path") or path
    kernels = path if draft_path == path else f"target {path}, draft {draft_path}"
    if label:
        kernels = f"target as {label}"
    return (f"forward costs ({kernels} linear kernels): target one token {t1 * 1000:.0f} ms, c = {c:.3f}; "
            f"verify over K+1 tokens vs one: {verify}")


def _name(best: dict | None) -> str:
    return "-" if not best else best["method"] + (f" K={best['k']}" if best["k"] is not None else "")


def _headline_line(s: dict) -> str:
    """specviz's best speed mode against the target, the fastest target-alone method and transformers' best."""
    alone = s.get("fastest_alone") or "-"
    if s.get("specviz_best") is None:   # only the traced `specviz` ran: its speed is in the table, with its trace
        best = ("specviz best: none of its speed modes ran (specviz_notrace, the adaptive and lookup drafters; the "
                "traced specviz above pays for its trace, so it is not one)")
    else:
        best = (f"specviz best {_name(s['specviz_best'])} {fmt(s['specviz_best_speedup_vs_target'], '{:.2f}x')} vs "
                f"target, {fmt(s['specviz_best_speedup_vs_fastest_alone'], '{:.2f}x')} vs {alone} (the fastest target "
                f"alone), {fmt(s.get('specviz_best_speedup_vs_same_precision'), '{:.2f}x')} vs the same precision")
    return (best + "; "
            f"hf best {_name(s['hf_best'])} {fmt(s['hf_best_speedup_vs_target'], '{:.2f}x')} vs target; "
            f"ratio_vs_hf_best {fmt(s['ratio_vs_hf_best'], '{:.2f}x')}, "
            f"ratio_vs_hf_assisted {fmt(s['ratio_vs_hf_assisted'], '{:.2f}x')}"
            + (f"; vs llama.cpp's target alone {fmt(s['specviz_best_speedup_vs_llamacpp_target'], '{:.2f}x')}, "
               f"llama.cpp best {_name(s['llamacpp_best'])}" if "llamacpp_best" in s else ""))


def write_results(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """results.json (NaN as null) and the standalone report.html in `out_dir`; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / "results.json", out_dir / "report.html"
    json_path.write_text(json.dumps(finite(result), indent=1, allow_nan=False), encoding="utf-8")
    # The report draws the app's Throughput-vs-K chart from the same medians (specviz without trace).
    sweeps = {t: ksweep_from_rows(result["rows"], float(t)) for t in result["summary"]}
    write_report(result, html_path, sweeps=sweeps)
    return json_path, html_path
