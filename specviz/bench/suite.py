"""The whole benchmark: every method on every prompt, K, temperature and repeat; then the statistics.

`run_benchmark` interleaves the measurements (per prompt: bare forward costs,
then every method in a rotating order) so drift on a shared machine hits all
methods alike. `summarize` reduces the rows to medians over prompts, each
prompt's value first being its median over repeats. `write_results` writes
results.json and the standalone HTML report.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from ..sampling import SamplingConfig
from ..stats import finite, fmt, median
from ..viz.report import write_report
from .costs import ForwardCosts, forward_costs, theory_speedup
from .measure import Run, run_method
from .methods import K_METHODS, METHODS
from .prompts import Prompt
from .sweep import ksweep_from_rows


def temp_key(t: float) -> str:
    """A temperature as the summary's key: "0.0", "0.7", or the full repr when one decimal is not enough."""
    return f"{float(t):.1f}" if round(t, 1) == t else repr(float(t))


# ---------------------------------------------------------------- measuring
def run_benchmark(target, draft, tokenizer, prompts: list[Prompt], encoded: list[list[int]], ks: list[int],
                  samplings: list[SamplingConfig], max_new_tokens: int, repeats: int, methods: list[str],
                  *, seed: int = 0, warmup: bool = True, quiet: bool = True) -> dict:
    """All measurements, interleaved per prompt and K; returns {"rows", "summary", "costs"}."""
    plain = [m for m in methods if m not in K_METHODS]
    with_k = [m for m in methods if m in K_METHODS]
    per_prompt = len(plain) + len(with_k) * len(ks)
    bar = _progress_bar(len(samplings) * repeats * len(prompts) * per_prompt, quiet)

    if warmup:   # every code path once, short, on the first prompt
        for sampling in samplings[:1]:
            for m in plain:
                run_method(m, target, draft, encoded[0], None, sampling, min(8, max_new_tokens), seed=seed)
            for m in with_k:
                run_method(m, target, draft, encoded[0], ks[0], sampling, min(8, max_new_tokens), seed=seed,
                           tokenizer=tokenizer)

    rows: list[dict] = []
    costs: dict[str, dict] = {}
    for sampling in samplings:
        for rep in range(repeats):
            for pi, (prompt, ids) in enumerate(zip(prompts, encoded)):
                fc = forward_costs(target, draft, ids, ks, repeats=3)
                costs.setdefault(prompt.id, fc.to_dict())
                # Rotate the order each repeat so no method always runs first after a cost pass.
                jobs = [(m, None) for m in plain] + [(m, k) for k in ks for m in with_k]
                shift = (rep + pi) % len(jobs)
                jobs = jobs[shift:] + jobs[:shift]
                got: list[tuple[Run, str]] = []
                for m, k in jobs:
                    if bar is not None:
                        bar.set_description(f"T={temp_key(sampling.temperature)} rep {rep + 1}/{repeats} "
                                            f"{prompt.id} {m}" + (f" K={k}" if k else ""), refresh=False)
                    run = run_method(m, target, draft, ids, k, sampling, max_new_tokens, seed=seed + rep,
                                     tokenizer=tokenizer)
                    got.append((run, m))
                    if bar is not None:
                        bar.update(1)
                ref = next((r for r, m in got if m == "target"), None)
                rows += [_row(prompt, m, run, ref, sampling, rep, seed + rep, fc) for run, m in got]
    if bar is not None:
        bar.close()
    return {"rows": rows, "summary": summarize(rows), "costs": costs}


def _row(prompt: Prompt, method: str, run: Run, ref: Run | None, sampling: SamplingConfig, rep: int, seed: int,
         fc: ForwardCosts) -> dict:
    """One line of results.json: one run, its costs and theory, and its speed against the target's run."""
    k = run.k
    c = fc.c if k else float("nan")
    vc = fc.verify_cost(k) if k else float("nan")
    return {
        "prompt_id": prompt.id, "category": prompt.category, "method": method, "k": k,
        "temperature": sampling.temperature, "repeat": rep, "seed": seed,
        "new_tokens": run.new_tokens, "seconds": run.seconds,
        "tokens_per_s": run.tokens_per_s, "e2e_tokens_per_s": run.e2e_tokens_per_s,
        "first_emit_seconds": run.first_emit_seconds, "total_seconds": run.total_seconds,
        "acceptance_rate": run.acceptance_rate, "alpha": run.alpha, "tau": run.tau,
        "rounds": run.rounds, "per_position": run.per_position,
        "c": c, "verify_cost": vc,
        "theory_speedup": theory_speedup(run.alpha, k, c, vc) if k else float("nan"),
        "speedup_vs_target": (run.tokens_per_s / ref.tokens_per_s) if ref else float("nan"),
        # Only greedy outputs are comparable token for token; samples differ by design.
        "matches_target": (run.output_ids == ref.output_ids) if ref and sampling.greedy else None,
    }


def _progress_bar(total: int, quiet: bool):
    if quiet:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:   # pragma: no cover - tqdm comes with transformers
        return None
    return tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True, mininterval=0.5)


# ---------------------------------------------------------------- statistics
def summarize(rows: list[dict]) -> dict:
    """Per temperature ("0.0", "0.7"): medians over prompts, at one fixed best K per method.

    best_k: the K with the highest median-over-prompts speedup of specviz over the
    target alone (one K for all prompts, as a user would fix it; the per-prompt
    oracle is reported beside it). speedup_vs_target, ratio_vs_hf_assisted (each
    at its own best K), achieved_over_theory and trace_overhead (at specviz's
    best K) are medians over prompts of per-prompt ratios; each prompt's value
    is first the median over repeats.
    """
    return {temp_key(temp): _summarize_temperature([r for r in rows if r["temperature"] == temp])
            for temp in sorted({r["temperature"] for r in rows})}


def _per_prompt(rows: list[dict], method: str, k, field_: str = "tokens_per_s") -> dict[str, float]:
    """prompt id -> median over repeats of `field_` for (method, k)."""
    acc: dict[str, list] = {}
    for r in rows:
        if r["method"] == method and r["k"] == k:
            acc.setdefault(r["prompt_id"], []).append(r[field_])
    return {p: median(v) for p, v in acc.items()}


def _ratios(num: dict[str, float], den: dict[str, float]) -> list[float]:
    """Per-prompt num / den over the prompts both have."""
    return [num[p] / den[p] for p in num if p in den]


def _best_k(rs: list[dict], ks: list[int], target: dict[str, float], method: str) -> int | None:
    """The K with the highest median-over-prompts speedup over the target (raw tokens/s without a target)."""
    scored = {}
    for k in ks:
        tps = _per_prompt(rs, method, k)
        if tps:
            scored[k] = median(_ratios(tps, target) if target else list(tps.values()))
    scored = {k: v for k, v in scored.items() if not math.isnan(v)}
    return max(scored, key=lambda k: (scored[k], -k)) if scored else None


def _summarize_temperature(rs: list[dict]) -> dict[str, Any]:
    ks = sorted({r["k"] for r in rs if r["k"] is not None})
    target = _per_prompt(rs, "target", None)
    prompts = sorted({r["prompt_id"] for r in rs})
    bk = _best_k(rs, ks, target, "specviz") or _best_k(rs, ks, target, "specviz_notrace")
    spec_method = "specviz" if _per_prompt(rs, "specviz", bk) else "specviz_notrace"
    hk = _best_k(rs, ks, target, "hf_assisted")
    s: dict[str, Any] = {"prompts": len(prompts), "best_k": bk, "hf_assisted_best_k": hk}

    spec = _per_prompt(rs, spec_method, bk) if bk else {}
    notrace = _per_prompt(rs, "specviz_notrace", bk) if bk else {}
    hf = _per_prompt(rs, "hf_assisted", hk) if hk else {}
    hfg = _per_prompt(rs, "hf_generate", None)
    s["speedup_vs_target"] = median(_ratios(spec, target))
    s["ratio_vs_hf_assisted"] = median(_ratios(spec, hf))
    s["hf_assisted_speedup_vs_target"] = median(_ratios(hf, target))
    s["hf_generate_vs_target"] = median(_ratios(hfg, target))
    theo = _per_prompt(rs, spec_method, bk, "theory_speedup") if bk else {}
    s["theory_speedup"] = median(list(theo.values()))
    s["achieved_over_theory"] = median([(spec[p] / target[p]) / theo[p] for p in spec
                                        if p in target and theo.get(p) and not math.isnan(theo[p])])
    ak = _best_k(rs, ks, target, "specviz_adaptive")
    if ak:  # the adaptive draft length against the best fixed K, both without a trace
        adaptive = _per_prompt(rs, "specviz_adaptive", ak)
        s["adaptive_best_max_k"] = ak
        s["adaptive_speedup_vs_target"] = median(_ratios(adaptive, target))
        s["adaptive_ratio_vs_fixed_k"] = median(_ratios(adaptive, notrace))
    s["trace_overhead"] = median([1 - _per_prompt(rs, "specviz", bk).get(p, float("nan")) / notrace[p]
                                  for p in notrace]) if bk else float("nan")
    s.update(_oracle(rs, ks, target, prompts, spec_method))
    s["alpha"] = median(list(_per_prompt(rs, spec_method, bk, "alpha").values())) if bk else float("nan")
    s["tau"] = median(list(_per_prompt(rs, spec_method, bk, "tau").values())) if bk else float("nan")
    s["c"] = median([r["c"] for r in rs if r["k"] is not None])
    s["table"] = _table(rs, ks, target)
    return s


def _oracle(rs: list[dict], ks: list[int], target: dict[str, float], prompts: list[str], method: str) -> dict:
    """Per-prompt best K (an oracle a user could not pick in advance), for reference."""
    oracle_k, oracle_speed = [], []
    for p in prompts:
        by_k = {k: _per_prompt(rs, method, k).get(p) for k in ks}
        by_k = {k: v for k, v in by_k.items() if v is not None and not math.isnan(v)}
        if by_k and p in target:
            kk = max(by_k, key=lambda k: (by_k[k], -k))
            oracle_k.append(kk)
            oracle_speed.append(by_k[kk] / target[p])
    return {"per_prompt_best_k_median": median(oracle_k), "speedup_vs_target_per_prompt_best_k": median(oracle_speed)}


def _table(rs: list[dict], ks: list[int], target: dict[str, float]) -> list[dict]:
    """Median over prompts for every method and K (the printed table)."""
    table = []
    for m in METHODS:
        for k in ([None] if m not in K_METHODS else ks):
            tps = _per_prompt(rs, m, k)
            if not tps:
                continue
            table.append({
                "method": m, "k": k, "tokens_per_s": median(list(tps.values())),
                "speedup_vs_target": median(_ratios(tps, target)),
                "acceptance_rate": median(list(_per_prompt(rs, m, k, "acceptance_rate").values())),
                "tau": median(list(_per_prompt(rs, m, k, "tau").values())),
                "theory_speedup": median(list(_per_prompt(rs, m, k, "theory_speedup").values())),
                "matches_target": _fraction([r["matches_target"] for r in rs if r["method"] == m and r["k"] == k]),
            })
    return table


def _fraction(flags) -> float:
    flags = [f for f in flags if f is not None]
    return sum(bool(f) for f in flags) / len(flags) if flags else float("nan")


# ---------------------------------------------------------------- output
def format_table(result: dict) -> str:
    """The summary as the plain-text table the command prints."""
    lines = []
    for tkey, s in result["summary"].items():
        lines.append(f"\ntemperature {tkey}: medians over {s['prompts']} prompt(s)")
        lines.append(f"{'method':<16}{'K':>3}{'tok/s':>9}{'speedup':>9}{'accept':>8}{'tau':>6}"
                     f"{'theory':>8}{'same out':>9}")
        for r in s["table"]:
            lines.append(f"{r['method']:<16}{fmt(r['k'], '{}'):>3}{fmt(r['tokens_per_s']):>9}"
                         f"{fmt(r['speedup_vs_target'], '{:.2f}x'):>9}{fmt(r['acceptance_rate']):>8}"
                         f"{fmt(r['tau']):>6}{fmt(r['theory_speedup'], '{:.2f}x'):>8}"
                         f"{fmt(r['matches_target'], '{:.0%}'):>9}")
        lines.append(f"best K {s['best_k']}: speedup vs target {fmt(s['speedup_vs_target'], '{:.2f}x')}, "
                     f"vs hf_assisted (K {s['hf_assisted_best_k']}) {fmt(s['ratio_vs_hf_assisted'], '{:.2f}x')}, "
                     f"achieved/theory {fmt(s['achieved_over_theory'])}, "
                     f"trace overhead {fmt(s['trace_overhead'], '{:+.1%}')}")
    return "\n".join(lines)


def write_results(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """results.json (NaN as null) and the standalone report.html in `out_dir`; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / "results.json", out_dir / "report.html"
    json_path.write_text(json.dumps(finite(result), indent=1, allow_nan=False), encoding="utf-8")
    # The report draws the app's Throughput-vs-K chart from the same medians (specviz without trace).
    sweeps = {t: ksweep_from_rows(result["rows"], float(t)) for t in result["summary"]}
    write_report(result, html_path, sweeps=sweeps)
    return json_path, html_path
