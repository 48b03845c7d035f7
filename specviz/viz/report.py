"""The benchmark's standalone HTML report: Plotly figures with plotly.js inline (works offline).

A view of the benchmark's result dict ({"rows", "summary", "meta"}, see
`specviz.bench.suite`); it never imports the benchmark (the benchmark imports
it). Which methods exist and which of them take a K is read from the data: the
summary's table lists every method that ran, with k None for those without K.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import plotly.graph_objects as go

from ..stats import format_measurement, is_number, median
from .charts import throughput_vs_k_figure

METHOD_COLORS = {
    "target": "#6b7280", "hf_generate": "#9ca3af", "hf_static": "#4b5563", "hf_assisted": "#f59e0b",
    "hf_assisted_default": "#d97706", "hf_prompt_lookup": "#ef4444",
    "specviz": "#2563eb", "specviz_notrace": "#10b981", "specviz_adaptive": "#8b5cf6",
    "specviz_ngram": "#ec4899", "specviz_hybrid": "#0891b2",
}


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white",
                      height=420, margin=dict(l=60, r=20, t=60, b=50), legend=dict(orientation="h", y=-0.2))
    return fig


def methods_vs_k_figure(summary: dict, temperature: str) -> go.Figure:
    """Median tokens/s versus K per method; methods without K are horizontal lines."""
    s = summary[temperature]
    fig = go.Figure()
    ks = sorted({r["k"] for r in s["table"] if r["k"] is not None})
    for r in s["table"]:
        if r["k"] is None and is_number(r["tokens_per_s"]) and ks:
            fig.add_trace(go.Scatter(x=[ks[0], ks[-1]], y=[r["tokens_per_s"]] * 2, mode="lines",
                                     name=r["method"], line=dict(dash="dash", color=METHOD_COLORS.get(r["method"]))))
    for m in dict.fromkeys(r["method"] for r in s["table"] if r["k"] is not None):   # the methods with K
        rows = [r for r in s["table"] if r["method"] == m and is_number(r["tokens_per_s"])]
        if rows:
            fig.add_trace(go.Scatter(x=[r["k"] for r in rows], y=[r["tokens_per_s"] for r in rows],
                                     mode="lines+markers", name=m, line=dict(color=METHOD_COLORS.get(m))))
    return _layout(fig, f"Throughput versus K (temperature {temperature}, median over prompts)",
                   "K (draft length)", "tokens / s")


def acceptance_by_position_figure(rows: list[dict], temperature: float, method: str = "specviz") -> go.Figure:
    """Mean acceptance rate of the i-th draft position, one line per K."""
    fig = go.Figure()
    ks = sorted({r["k"] for r in rows if r["method"] == method and r["temperature"] == temperature})
    for k in ks:
        pp = [r["per_position"] for r in rows if r["method"] == method and r["temperature"] == temperature
              and r["k"] == k and r.get("per_position")]
        if not pp:
            continue
        n = max(len(p) for p in pp)
        ys = [median([p[i] for p in pp if i < len(p)]) for i in range(n)]
        fig.add_trace(go.Scatter(x=list(range(1, n + 1)), y=ys, mode="lines+markers", name=f"K = {k}"))
    fig.update_yaxes(range=[0, 1.05])
    return _layout(fig, f"Acceptance by draft position ({method}, temperature {temperature:g}, median over runs)",
                   "draft position i", "acceptance rate")


def speedup_by_category_figure(rows: list[dict], summary: dict, temperature: str) -> go.Figure:
    """Median speedup over the target alone per prompt category; K methods at their best K."""
    s = summary[temperature]
    t = float(temperature)
    # Each method at its own best K over all prompts (summary["methods"]); older results lack it.
    best = {m: v.get("k") for m, v in s.get("methods", {}).items()}
    best.update({"specviz": s.get("best_k"), "specviz_notrace": s.get("best_k"),
                 "hf_assisted": s.get("hf_assisted_best_k"), "specviz_adaptive": s.get("adaptive_best_max_k")})
    rs = [r for r in rows if r["temperature"] == t]
    cats = sorted({r["category"] for r in rs})
    fig = go.Figure()
    for m in dict.fromkeys(r["method"] for r in s["table"] if r["method"] != "target"):
        k = best.get(m)
        ys = [median([r["speedup_vs_target"] for r in rs if r["method"] == m and r["category"] == c
                      and r["k"] == k]) for c in cats]
        if any(is_number(y) for y in ys):
            fig.add_trace(go.Bar(x=cats, y=ys, name=m + (f" (K = {k})" if k else ""),
                                 marker_color=METHOD_COLORS.get(m)))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#6b7280")
    fig.update_layout(barmode="group")
    return _layout(fig, f"Speedup over the target alone by category (temperature {temperature})",
                   "category", "speedup (×)")


def _app_throughput_chart(sweep, temperature: float) -> go.Figure | None:
    """The app's own Throughput-vs-K chart, fed with the benchmark's medians as a KSweep (specviz without trace)."""
    if sweep is None:
        return None
    try:
        fig = throughput_vs_k_figure(sweep)
        fig.update_layout(title=f"Throughput vs K: specviz without trace, temperature {temperature:.1f} "
                                f"(medians over prompts; the app's chart)")
        return fig
    except Exception:   # the report never fails because of the app's chart
        return None


def _cell(x, spec="{:.2f}"):
    """A table cell of the report: a measurement, or an en dash where none was made."""
    return format_measurement(x, spec, missing="–")


def _best_name(b) -> str:
    if not isinstance(b, dict):
        return "–"
    return b.get("method", "?") + (f" (K = {b['k']})" if b.get("k") is not None else "")


# (summary key, format): the headline rows of the summary table, one column per temperature.
SUMMARY_KEYS = [
    ("best_k", "{}"), ("speedup_vs_target", "{:.2f}×"), ("speedup_vs_fastest_alone", "{:.2f}×"),
    ("ratio_vs_hf_assisted", "{:.2f}×"), ("ratio_vs_hf_best", "{:.2f}×"),
    ("specviz_best_speedup_vs_target", "{:.2f}×"), ("specviz_best_speedup_vs_fastest_alone", "{:.2f}×"),
    ("hf_best_speedup_vs_target", "{:.2f}×"), ("hf_best_speedup_vs_fastest_alone", "{:.2f}×"),
    ("achieved_over_theory", "{:.2f}"), ("trace_overhead", "{:+.1%}"), ("hf_assisted_best_k", "{}"),
    ("hf_assisted_speedup_vs_target", "{:.2f}×"), ("theory_speedup", "{:.2f}×"), ("alpha", "{:.2f}"),
    ("tau", "{:.2f}"), ("c", "{:.3f}"), ("speedup_vs_target_per_prompt_best_k", "{:.2f}×"),
]


def _summary_html(summary: dict) -> str:
    parts = []
    head = "".join(f"<th>{html.escape(t)}</th>" for t in summary)
    names = "".join(
        f"<tr><th>{label}</th>" + "".join(f"<td>{html.escape(fn(s))}</td>" for s in summary.values()) + "</tr>"
        for label, fn in (("fastest target-alone method", lambda s: str(s.get("fastest_alone") or "–")),
                          ("specviz best (speed modes)", lambda s: _best_name(s.get("specviz_best"))),
                          ("transformers best", lambda s: _best_name(s.get("hf_best")))))
    body = "".join(
        f"<tr><th>{html.escape(k)}</th>" + "".join(f"<td>{_cell(s.get(k), spec)}</td>" for s in summary.values())
        + "</tr>" for k, spec in SUMMARY_KEYS)
    parts.append(f"<h2>Summary (medians over prompts)</h2><table><tr><th>temperature</th>{head}</tr>"
                 f"{names}{body}</table>")
    for t, s in summary.items():
        rows = "".join(
            f"<tr><td>{html.escape(r['method'])}</td><td>{_cell(r['k'], '{}')}</td><td>{_cell(r['tokens_per_s'])}</td>"
            f"<td>{_cell(r['speedup_vs_target'], '{:.2f}×')}</td>"
            f"<td>{_cell(r.get('speedup_vs_fastest_alone'), '{:.2f}×')}</td><td>{_cell(r['acceptance_rate'])}</td>"
            f"<td>{_cell(r['tau'])}</td><td>{_cell(r['theory_speedup'], '{:.2f}×')}</td>"
            f"<td>{_cell(r['matches_target'], '{:.0%}')}</td>"
            f"<td>{html.escape(str(r.get('error') or ''))}</td></tr>" for r in s["table"])
        parts.append(f"<h3>Temperature {html.escape(t)}</h3><table><tr><th>method</th><th>K</th><th>tokens/s</th>"
                     f"<th>speedup</th><th>vs {html.escape(str(s.get('fastest_alone') or 'fastest alone'))}</th>"
                     f"<th>acceptance</th><th>τ</th><th>theory</th><th>same output as target</th><th>error</th>"
                     f"</tr>{rows}</table>{_categories_html(s)}")
    return "".join(parts)


def _categories_html(s: dict) -> str:
    """The headline numbers per prompt category (best K and best methods chosen within each)."""
    cats = s.get("categories") or {}
    if not cats:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(c)}</td><td>{v.get('prompts', '')}</td>"
        f"<td>{html.escape(_best_name(v.get('specviz_best')))}</td>"
        f"<td>{_cell(v.get('specviz_best_speedup_vs_target'), '{:.2f}×')}</td>"
        f"<td>{_cell(v.get('specviz_best_speedup_vs_fastest_alone'), '{:.2f}×')}</td>"
        f"<td>{html.escape(str(v.get('fastest_alone') or '–'))}</td>"
        f"<td>{html.escape(_best_name(v.get('hf_best')))}</td><td>{_cell(v.get('ratio_vs_hf_best'), '{:.2f}×')}</td>"
        f"<td>{_cell(v.get('ratio_vs_hf_assisted'), '{:.2f}×')}</td></tr>" for c, v in cats.items())
    return ("<h4>By category</h4><table><tr><th>category</th><th>prompts</th><th>specviz best</th>"
            "<th>vs target</th><th>vs fastest alone</th><th>fastest alone</th><th>transformers best</th>"
            f"<th>ratio vs hf best</th><th>ratio vs hf_assisted</th></tr>{rows}</table>")


def report_html(result: dict, sweeps: dict | None = None) -> str:
    """The whole report as one self-contained HTML string (no external scripts).

    `sweeps`: summary key ("0.0") -> the benchmark's medians as a KSweep, drawn
    with the app's Throughput-vs-K chart; without it that chart is left out.
    """
    summary, rows, meta = result["summary"], result["rows"], result.get("meta", {})
    figs = []
    for t in summary:
        app_chart = _app_throughput_chart((sweeps or {}).get(t), float(t))
        if app_chart is not None:
            figs.append(app_chart)
        figs.append(methods_vs_k_figure(summary, t))
        figs.append(acceptance_by_position_figure(rows, float(t)))
        figs.append(speedup_by_category_figure(rows, summary, t))
    blocks = [f.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
              for i, f in enumerate(figs)]
    machine = meta.get("machine", {})
    meta_html = "<br>".join(html.escape(f"{k}: {v}") for k, v in [
        ("command", meta.get("command", "")), ("pair", meta.get("pair", "")),
        ("device / dtype", f"{meta.get('device', '')} / {meta.get('dtype', '')}"), ("date", meta.get("date", "")),
        ("machine", json.dumps(machine, ensure_ascii=False))])
    style = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#111}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;"
             "text-align:right}th{background:#f3f4f6}.meta{color:#555;font-size:.9em}")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>specviz benchmark</title>"
            f"<style>{style}</style></head><body><h1>specviz benchmark</h1>"
            f"<p class=\"meta\">{meta_html}</p>{_summary_html(summary)}"
            + "".join(f"<div>{b}</div>" for b in blocks) + "</body></html>")


def write_report(result: dict, path: str | Path, sweeps: dict | None = None) -> Path:
    path = Path(path)
    path.write_text(report_html(result, sweeps), encoding="utf-8")
    return path
