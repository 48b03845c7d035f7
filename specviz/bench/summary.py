"""The benchmark's statistics: rows (one per run) reduced to medians over prompts.

Each prompt's value is first its median over repeats; a method with a K is
taken at one best K for all prompts (as a user would fix it), the K with the
highest median-over-prompts speedup over the target alone. Every ratio is a
per-prompt ratio, then the median over prompts. A run that failed (its row has
an "error") has no tokens/s and drops out of every median.

Baselines, so that no speedup hides behind a slow reference:
- "target": specviz's own token-by-token loop (`speedup_vs_target`);
- the fastest target-alone method of the run (target, hf_generate or hf_static,
  by median tokens/s; named in `fastest_alone`): every speedup is reported
  against it too (`..._vs_fastest_alone`);
- the best transformers method (hf_best, any of HF_METHODS at its best K):
  `ratio_vs_hf_best` = specviz's best speed mode (specviz_best) over it.
- llama.cpp on the target's GGUF (PEER_METHODS, when they ran): a peer, not one
  of the target-alone configurations (its output is its own run of the model:
  its kernels, its sampler); specviz's best is reported against its target alone
  (`specviz_best_speedup_vs_llamacpp_target`) and its best method is `llamacpp_best`.
The same headline numbers are computed for each prompt category (`categories`),
with the best K and best methods chosen within the category.

Target configurations: rows named "method@name" (e.g. "target@int8") ran on
another configuration of the same target (run_benchmark's `variants`). Each is
a candidate like any other: the fastest target alone is the fastest of every
configuration, and specviz's best may run on any of them. Each row's
`speedup_vs_target` is against the target alone on its own configuration (the
same-precision ratio); the summary also reports `..._vs_same_precision`.
"""
from __future__ import annotations

import math
from typing import Any

from ..stats import is_number, median
from .methods import ALL_METHODS, HF_METHODS, K_METHODS, PEER_METHODS, SPECVIZ_SPEED_METHODS, TARGET_ALONE


def base_method(name: str) -> str:
    """ "specviz_hybrid@int8" -> "specviz_hybrid": the decoder, whatever the target's configuration."""
    return name.split("@", 1)[0]


def _same_precision_target(name: str) -> str:
    """The target-alone method on the configuration `name` ran on."""
    return "target" + ("@" + name.split("@", 1)[1] if "@" in name else "")


def _variants(rs: list[dict], methods) -> list[str]:
    """Every method name in the rows whose decoder is one of `methods`, in `methods` order then by name."""
    present = {r["method"] for r in rs}
    return [m for base in methods for m in sorted(present) if base_method(m) == base]


def temp_key(t: float) -> str:
    """A temperature as the summary's key: "0.0", "0.7", or the full repr when one decimal is not enough."""
    return f"{float(t):.1f}" if round(t, 1) == t else repr(float(t))


def summarize(rows: list[dict]) -> dict:
    """Per temperature ("0.0", "0.7"): the headline numbers, the per-category ones and the table.

    best_k: the K with the highest median-over-prompts speedup of specviz over the
    target alone (one K for all prompts; the per-prompt oracle is reported
    beside it). speedup_vs_target, ratio_vs_hf_assisted (each at its own best K),
    ratio_vs_hf_best, achieved_over_theory and trace_overhead (at specviz's best
    K) are medians over prompts of per-prompt ratios.
    """
    return {temp_key(temp): _summarize_temperature([r for r in rows if r["temperature"] == temp])
            for temp in sorted({r["temperature"] for r in rows})}


def _per_prompt(rows: list[dict], method: str, k, field_: str = "tokens_per_s") -> dict[str, float]:
    """prompt id -> median over repeats of `field_` for (method, k)."""
    acc: dict[str, list] = {}
    for r in rows:
        if r["method"] == method and r["k"] == k:
            acc.setdefault(r["prompt_id"], []).append(r.get(field_))
    return {p: median(v) for p, v in acc.items()}


def _ratios(num: dict[str, float], den: dict[str, float]) -> list[float]:
    """Per-prompt num / den over the prompts both have (NaN where either is missing)."""
    return [num[p] / den[p] if is_number(num[p]) and is_number(den[p]) and den[p] else float("nan")
            for p in num if p in den]


def _best_k(rs: list[dict], ks: list[int], ref: dict[str, float], method: str) -> int | None:
    """The K with the highest median-over-prompts speedup over `ref` (raw tokens/s without one)."""
    scored = {}
    for k in ks:
        tps = _per_prompt(rs, method, k)
        if tps:
            scored[k] = median(_ratios(tps, ref) if ref else list(tps.values()))
    scored = {k: v for k, v in scored.items() if not math.isnan(v)}
    return max(scored, key=lambda k: (scored[k], -k)) if scored else None


def _fastest_alone(rs: list[dict]) -> tuple[str | None, dict[str, float]]:
    """The target-alone method with the highest median tokens/s over prompts, and its per-prompt speeds."""
    speeds = {m: _per_prompt(rs, m, None) for m in _variants(rs, TARGET_ALONE)}
    scored = {m: median(list(v.values())) for m, v in speeds.items() if v}
    scored = {m: v for m, v in scored.items() if not math.isnan(v)}
    if not scored:
        return None, {}
    name = max(scored, key=scored.get)
    return name, speeds[name]


def _best_of(rs: list[dict], ks: list[int], ref: dict[str, float], methods) -> dict | None:
    """Of `methods`, each at its best K: the one with the highest median speedup over `ref`."""
    best = None
    for m in _variants(rs, methods):
        k = _best_k(rs, ks, ref, m) if base_method(m) in K_METHODS else None
        tps = _per_prompt(rs, m, k)
        score = median(_ratios(tps, ref) if ref else list(tps.values())) if tps else float("nan")
        if not math.isnan(score) and (best is None or score > best["score"]):
            best = {"method": m, "k": k, "score": score}
    if best:
        best.pop("score")
    return best


def _headline(rs: list[dict]) -> dict[str, Any]:
    """The numbers reported overall and per category: specviz against the target, transformers, the fastest."""
    ks = sorted({r["k"] for r in rs if r["k"] is not None})
    target = _per_prompt(rs, "target", None)
    alone_name, alone = _fastest_alone(rs)
    bk = _best_k(rs, ks, target, "specviz") or _best_k(rs, ks, target, "specviz_notrace")
    spec_method = "specviz" if _per_prompt(rs, "specviz", bk) else "specviz_notrace"
    hk = _best_k(rs, ks, target, "hf_assisted")
    spec = _per_prompt(rs, spec_method, bk) if bk else {}
    hf = _per_prompt(rs, "hf_assisted", hk) if hk else {}
    s: dict[str, Any] = {"prompts": len({r["prompt_id"] for r in rs}), "best_k": bk, "hf_assisted_best_k": hk,
                         "fastest_alone": alone_name}
    s["speedup_vs_target"] = median(_ratios(spec, target))
    s["speedup_vs_fastest_alone"] = median(_ratios(spec, alone))
    s["ratio_vs_hf_assisted"] = median(_ratios(spec, hf))
    s["hf_assisted_speedup_vs_target"] = median(_ratios(hf, target))
    s["hf_assisted_speedup_vs_fastest_alone"] = median(_ratios(hf, alone))

    ref = target or alone
    best = {"specviz_best": _best_of(rs, ks, ref, SPECVIZ_SPEED_METHODS), "hf_best": _best_of(rs, ks, ref, HF_METHODS)}
    speeds = {}
    for name, b in best.items():
        s[name] = b
        speeds[name] = _per_prompt(rs, b["method"], b["k"]) if b else {}
        s[f"{name}_speedup_vs_target"] = median(_ratios(speeds[name], target))
        s[f"{name}_speedup_vs_fastest_alone"] = median(_ratios(speeds[name], alone))
        same = _per_prompt(rs, _same_precision_target(b["method"]), None) if b else {}
        s[f"{name}_speedup_vs_same_precision"] = median(_ratios(speeds[name], same))
    s["ratio_vs_hf_best"] = median(_ratios(speeds["specviz_best"], speeds["hf_best"]))
    llama = _per_prompt(rs, "llamacpp_target", None)
    if llama or _variants(rs, PEER_METHODS):
        s["llamacpp_best"] = _best_of(rs, ks, ref, PEER_METHODS)
        s["specviz_best_speedup_vs_llamacpp_target"] = median(_ratios(speeds["specviz_best"], llama))
    s["methods"] = _methods_at_best_k(rs, ks, target, alone)
    return s


def _methods_at_best_k(rs: list[dict], ks: list[int], target: dict, alone: dict) -> dict[str, dict]:
    """Every method that ran, at its best K: its K, tokens/s and both speedups."""
    out = {}
    for m in _variants(rs, ALL_METHODS):
        k = _best_k(rs, ks, target, m) if base_method(m) in K_METHODS else None
        tps = _per_prompt(rs, m, k)
        if tps:
            out[m] = {"k": k, "tokens_per_s": median(list(tps.values())),
                      "speedup_vs_target": median(_ratios(tps, target)),
                      "speedup_vs_fastest_alone": median(_ratios(tps, alone)),
                      "speedup_vs_same_precision": median(_ratios(tps, _per_prompt(rs, _same_precision_target(m),
                                                                                    None)))}
    return out


def _summarize_temperature(rs: list[dict]) -> dict[str, Any]:
    ks = sorted({r["k"] for r in rs if r["k"] is not None})
    target = _per_prompt(rs, "target", None)
    prompts = sorted({r["prompt_id"] for r in rs})
    s = _headline(rs)
    bk = s["best_k"]
    spec_method = "specviz" if _per_prompt(rs, "specviz", bk) else "specviz_notrace"
    spec = _per_prompt(rs, spec_method, bk) if bk else {}
    notrace = _per_prompt(rs, "specviz_notrace", bk) if bk else {}
    s["hf_generate_vs_target"] = median(_ratios(_per_prompt(rs, "hf_generate", None), target))
    theo = _per_prompt(rs, spec_method, bk, "theory_speedup") if bk else {}
    s["theory_speedup"] = median(list(theo.values()))
    s["achieved_over_theory"] = median([(spec[p] / target[p]) / theo[p] for p in spec
                                        if p in target and is_number(theo.get(p)) and theo[p]])
    ak = _best_k(rs, ks, target, "specviz_adaptive")
    if ak:  # the adaptive draft length against the best fixed K, both without a trace
        adaptive = _per_prompt(rs, "specviz_adaptive", ak)
        s["adaptive_best_max_k"] = ak
        s["adaptive_speedup_vs_target"] = median(_ratios(adaptive, target))
        s["adaptive_speedup_vs_fastest_alone"] = median(
            _ratios(adaptive, _per_prompt(rs, s["fastest_alone"], None) if s["fastest_alone"] else {}))
        s["adaptive_ratio_vs_fixed_k"] = median(_ratios(adaptive, notrace))
    s["trace_overhead"] = median([1 - _per_prompt(rs, "specviz", bk).get(p, float("nan")) / notrace[p]
                                  for p in notrace]) if bk else float("nan")
    s.update(_oracle(rs, ks, target, prompts, spec_method))
    s["alpha"] = median(list(_per_prompt(rs, spec_method, bk, "alpha").values())) if bk else float("nan")
    s["tau"] = median(list(_per_prompt(rs, spec_method, bk, "tau").values())) if bk else float("nan")
    s["c"] = median([r["c"] for r in rs if r["k"] is not None])
    s["categories"] = {c: _headline([r for r in rs if r["category"] == c])
                       for c in sorted({r["category"] for r in rs})}
    s["table"] = _table(rs, ks, target, _per_prompt(rs, s["fastest_alone"], None) if s["fastest_alone"] else {})
    return s


def _oracle(rs: list[dict], ks: list[int], target: dict[str, float], prompts: list[str], method: str) -> dict:
    """Per-prompt best K (an oracle a user could not pick in advance), for reference."""
    oracle_k, oracle_speed = [], []
    for p in prompts:
        by_k = {k: _per_prompt(rs, method, k).get(p) for k in ks}
        by_k = {k: v for k, v in by_k.items() if is_number(v)}
        if by_k and p in target:
            kk = max(by_k, key=lambda k: (by_k[k], -k))
            oracle_k.append(kk)
            oracle_speed.append(by_k[kk] / target[p])
    return {"per_prompt_best_k_median": median(oracle_k), "speedup_vs_target_per_prompt_best_k": median(oracle_speed)}


def _table(rs: list[dict], ks: list[int], target: dict[str, float], alone: dict[str, float]) -> list[dict]:
    """Median over prompts for every method and K (the printed table)."""
    table = []
    for m in _variants(rs, ALL_METHODS):
        same = _per_prompt(rs, _same_precision_target(m), None)
        for k in ([None] if base_method(m) not in K_METHODS else ks):
            sel = [r for r in rs if r["method"] == m and r["k"] == k]
            if not sel:
                continue
            tps = _per_prompt(rs, m, k)
            table.append({
                "method": m, "k": k, "tokens_per_s": median(list(tps.values())),
                "speedup_vs_target": median(_ratios(tps, target)),
                "speedup_vs_fastest_alone": median(_ratios(tps, alone)),
                "speedup_vs_same_precision": median(_ratios(tps, same)),
                "acceptance_rate": median(list(_per_prompt(rs, m, k, "acceptance_rate").values())),
                "tau": median(list(_per_prompt(rs, m, k, "tau").values())),
                "theory_speedup": median(list(_per_prompt(rs, m, k, "theory_speedup").values())),
                "lookup_share": median(list(_per_prompt(rs, m, k, "lookup_share").values())),
                "matches_target": _fraction([r.get("matches_target") for r in sel]),
                "errors": sum(1 for r in sel if r.get("error")),
                "error": next((r["error"] for r in sel if r.get("error")), None),
            })
    return table


def _fraction(flags) -> float:
    flags = [f for f in flags if f is not None]
    return sum(bool(f) for f in flags) / len(flags) if flags else float("nan")
