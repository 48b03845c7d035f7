"""The "Throughput vs K" tab: the target alone once, then the speculative decoder at each K (`bench.sweep_k`).

The sweep runs in a thread; this event function says which step it is on and
for how long (in the tab and in the page's status), and Stop (or closing the
page) ends it at the next step.
"""
from __future__ import annotations

import gradio as gr

from ...trace.compare import best_row
from ...limits import APP_MAX_K, APP_MAX_SWEEP_TOKENS
from ...runtime.zerogpu import on_zero_gpu
from ...strings import t
from ...viz import charts
from ...viz import html as vh
from .. import inputs, waiting, worker
from ..events import listen_form
from ..gpu_calls import quota_html
from ..plots import LocalePlot
from ..session import AppContext
from ..worker import Failed, Progress, Result, Stopped
from .generate import field_validator

# The form's starting values, which the ZeroGPU quota note is first computed from.
DEFAULTS = {"k_lo": 1, "k_hi": 8, "sweep_tokens": 32}


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.sweep", lang), id="sweep"):
        gr.Markdown(t("sweep.intro", lang))
        with gr.Row():
            c["k_lo"] = gr.Number(value=DEFAULTS["k_lo"], step=1, label=t("ui.k_lo", lang),
                                  info=t("ui.range", lang, lo=1, hi=APP_MAX_K), elem_id="sv-klo")
            c["k_hi"] = gr.Number(value=DEFAULTS["k_hi"], step=1, label=t("ui.k_hi", lang),
                                  info=t("ui.range", lang, lo=1, hi=APP_MAX_K), elem_id="sv-khi")
            c["sweep_tokens"] = gr.Number(value=DEFAULTS["sweep_tokens"], step=1, label=t("ui.sweep_tokens", lang),
                                          info=t("ui.range", lang, lo=4, hi=APP_MAX_SWEEP_TOKENS), elem_id="sv-sweep-tokens")
        c["sweep_btn"] = gr.Button(t("ui.sweep_run", lang), variant="primary", elem_id="sv-sweep")
        if on_zero_gpu():   # what the sweep will ask of a visitor's daily GPU quota, said before it runs
            c["sweep_quota"] = gr.HTML(quota_html(DEFAULTS, lang), elem_id="sv-sweep-quota")
        c["sweep_status"] = gr.HTML("", elem_id="sv-sweep-status")
        c["sweep_plot"] = LocalePlot(lang, charts.throughput_vs_k_figure(None, lang=lang), show_label=False,
                                  elem_id="sv-sweep-plot")
    return c


def wire(ctx: AppContext, c: dict, concurrency_limit: int) -> None:
    # Same concurrency slot as Generate: a sweep never overlaps a run, so both timings stay honest.
    listen_form(c["sweep_btn"].click, submitted, ctx, c, inputs.SWEEP_FORM, ["sweep_status", "status"], queue=False,
                show_progress="hidden")
    listen_form(c["sweep_btn"].click, sweep, ctx, c, inputs.SWEEP_FORM, ["sweep_plot", "sweep_status", "status"],
                gpu=True, concurrency_limit=concurrency_limit, concurrency_id="decode", show_progress="minimal",
                validator=field_validator(ctx, inputs.SWEEP_FORM))
    if "sweep_quota" in c:   # the note follows the fields (and the step measured so far) before each sweep
        for trigger in (c["k_lo"].change, c["k_hi"].change, c["sweep_tokens"].change, c["sweep_btn"].click):
            listen_form(trigger, quota, ctx, c, inputs.SWEEP_FORM, ["sweep_quota"], queue=False,
                        show_progress="hidden")


def quota(ctx: AppContext, form: dict) -> dict:
    return {"sweep_quota": quota_html(form, ctx.lang)}


def say(message: str, kind: str) -> dict:
    """The sweep's line, in its tab and in the page's status (which stays in view)."""
    html = vh.status_html(message, kind)
    return {"sweep_status": html, "status": html}


def submitted(ctx: AppContext, form: dict, request: gr.Request):
    """`form`: {name: value} of the fields in `inputs.SWEEP_FORM`."""
    return waiting.place_in_queue(ctx, request, lambda: inputs.sweep_settings(form, ctx.lang), say)


def sweep(ctx: AppContext, form: dict, request: gr.Request):
    yield from waiting.guarded(ctx, request, lambda: inputs.sweep_settings(form, ctx.lang), say,
                               lambda run, s: _sweep(ctx, run, s))


def _sweep(ctx: AppContext, run, s):
    lang = ctx.lang
    ready = yield from waiting.prepared(ctx, run, s.pair_ids, say, lambda pair: inputs.encode_prompt(
        pair, s.prompt, s.raw, s.n_tokens, s.ks[-1], lang))
    if ready is None:
        return
    pair, ids = ready

    def measure(progress):
        return ctx.sweep()(pair.target, pair.draft, ids, s.ks, s.sampling, s.n_tokens, seed=s.seed,
                           tokenizer=pair.tokenizer, progress=progress, stop=run.stop.is_set)

    outcome = yield from waiting.wait_for(ctx, run, worker.call(measure, run), lambda p, sec: step_line(p, s.ks, sec, lang),
                                          say, "sweep.stopping")
    if isinstance(outcome, Result) and not run.stop.is_set():
        yield {**say(summary(outcome.value, s.n_tokens, lang), "ok"),
               "sweep_plot": charts.throughput_vs_k_figure(outcome.value, lang=lang)}
    elif isinstance(outcome, Failed) and not isinstance(outcome.error, Stopped) and not run.stop.is_set():
        yield say(t("sweep.failed", lang, error=inputs.error_message(outcome.error, lang)), "error")
    else:
        yield say(t("sweep.stopped", lang), "warn")


def step_line(p: Progress | None, ks: list[int], seconds: str, lang: str) -> str:
    """Which step of the sweep is running, in the page's language: `sweep_k` reports before each of its steps."""
    steps = len(ks) + 2
    i = 0 if p is None else min(steps, max(0, round(p.fraction * steps)))
    if i == 0:
        what = t("sweep.step_costs", lang)
    elif i == 1:
        what = t("sweep.step_target", lang)
    elif i < steps:
        what = t("sweep.step_k", lang, k=ks[i - 2])
    else:
        what = t("sweep.step_done", lang)
    return t("sweep.progress", lang, i=min(i + 1, steps), n=steps, what=what, seconds=seconds)


def summary(result, n_tokens: int, lang: str) -> str:
    best = best_row(result)
    if best is None:
        return t("sweep.no_result", lang)
    if not best.tokens_per_s > result.target_tokens_per_s:
        return t("sweep.none_faster", lang, k=result.best_k, tps=vh.display_number(best.tokens_per_s, 1),
                 base=vh.display_number(result.target_tokens_per_s, 1), n=n_tokens)
    return t("sweep.best", lang, k=result.best_k, tps=vh.display_number(best.tokens_per_s, 1), speedup=f"{best.speedup:.2f}",
             base=vh.display_number(result.target_tokens_per_s, 1), n=n_tokens)
