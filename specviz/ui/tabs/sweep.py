"""The "Throughput vs K" tab: the target alone once, then the speculative decoder at each K (`bench.sweep_k`)."""
from __future__ import annotations

import gradio as gr

from ...compare import best_row
from ...limits import APP_MAX_K, APP_MAX_SWEEP_TOKENS
from ...models import ModelLoadError
from ...strings import t
from ...viz import charts
from ...viz import html as vh
from .. import inputs
from ..events import listen
from ..inputs import InputError
from ..session import AppContext

SWEEP_INPUTS = ("prompt", "raw", "temperature", "top_k", "top_p", "seed", "pair", "draft_id", "target_id",
                "k_lo", "k_hi", "sweep_tokens")


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.sweep", lang), id="sweep"):
        gr.Markdown(t("sweep.intro", lang))
        with gr.Row():
            c["k_lo"] = gr.Slider(1, APP_MAX_K, value=1, step=1, label=t("ui.k_lo", lang), elem_id="sv-klo")
            c["k_hi"] = gr.Slider(1, APP_MAX_K, value=8, step=1, label=t("ui.k_hi", lang), elem_id="sv-khi")
            c["sweep_tokens"] = gr.Slider(4, APP_MAX_SWEEP_TOKENS, value=32, step=1, label=t("ui.sweep_tokens", lang),
                                          elem_id="sv-sweep-tokens")
        c["sweep_btn"] = gr.Button(t("ui.sweep_run", lang), variant="primary", elem_id="sv-sweep")
        c["sweep_status"] = gr.HTML("", elem_id="sv-sweep-status")
        c["sweep_plot"] = gr.Plot(charts.throughput_vs_k_figure(None, lang=lang), show_label=False,
                                  elem_id="sv-sweep-plot")
    return c


def wire(ctx: AppContext, c: dict, concurrency_limit: int) -> None:
    # Same concurrency slot as Generate: a sweep never overlaps a run, so both timings stay honest.
    listen(c["sweep_btn"].click, sweep, ctx, c, SWEEP_INPUTS, ["sweep_plot", "sweep_status"], gpu=True,
           concurrency_limit=concurrency_limit, concurrency_id="decode")


def sweep(ctx: AppContext, prompt, raw, temperature, top_k, top_p, seed, choice, draft_id, target_id, k_lo, k_hi,
          n_tokens, progress=gr.Progress()):
    lang = ctx.lang
    try:
        s = inputs.sweep_settings(prompt, raw, temperature, top_k, top_p, seed, choice, draft_id, target_id, k_lo, k_hi,
                                  n_tokens, lang)
        progress(0.0, desc=t("sweep.loading", lang))
        pair = ctx.load(s.pair_ids, progress)
        ids = inputs.encode_prompt(pair, s.prompt, s.raw, s.n_tokens, s.ks[-1], lang)
    except (InputError, ModelLoadError) as e:
        gr.Warning(inputs.error_message(e))
        return {"sweep_plot": gr.update(), "sweep_status": vh.status_html(inputs.error_message(e), "error")}
    try:
        result = ctx.sweep()(pair.target, pair.draft, ids, s.ks, s.sampling, s.n_tokens, seed=s.seed,
                             tokenizer=pair.tokenizer, progress=lambda f, m: progress(f, desc=m))
    except Exception as e:  # noqa: BLE001
        return {"sweep_plot": gr.update(),
                "sweep_status": vh.status_html(t("sweep.failed", lang, error=inputs.error_message(e)), "error")}
    return {"sweep_plot": charts.throughput_vs_k_figure(result, lang=lang),
            "sweep_status": vh.status_html(summary(result, s.n_tokens, lang), "ok")}


def summary(result, n_tokens: int, lang: str) -> str:
    best = best_row(result)
    if best is None:
        return t("sweep.no_result", lang)
    return t("sweep.best", lang, k=result.best_k, tps=vh.fmt(best.tokens_per_s, 1), speedup=f"{best.speedup:.2f}",
             base=vh.fmt(result.target_tokens_per_s, 1), n=n_tokens)
