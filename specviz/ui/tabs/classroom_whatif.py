"""The classroom's what-if calculator and "why it is fast": the theory's curves, and the premise timed on this machine.

Split from the classroom tab (specviz/ui/tabs/classroom.py) to keep each file on one job; the arithmetic
and the verdict are pure, in specviz/classroom/whatif.py, the drawing in specviz/viz/classroom_whatif.py.
"Why it is fast" repeats its measurement (so the page can show the spread and refuse a verdict the noise
decided), yields after each repetition, ends at the session's Stop (within one timed forward: a repetition,
seconds on a CPU, is cut short and not counted), and never starts a repetition past its time budget.
"""
from __future__ import annotations

import time

import gradio as gr

from ...bench import costs as bench_costs   # bench_costs.forward_costs read at call time: tests stand in for it
from ...classroom import whatif
from ...limits import APP_WHY_MAX_K, APP_WHY_MAX_S, APP_WHY_REPEATS
from ...runtime.decoding import PrefillStopped
from ...strings import t
from ...viz import classroom_whatif as vw
from ...viz import html as vh
from .. import classroom_inputs, inputs, worker
from ..events import listen
from ..inputs import InputError
from ..plots import LocalePlot
from ..session import AppContext, end_run, new_run, stop_run


# ---------------------------------------------------------------- layout
def whatif_layout(lang: str) -> dict:
    c = {}
    gr.Markdown(t("whatif.intro", lang))
    # Number boxes, not sliders: a slider's own box clamped 1.5 to 1 without a word; here a value out of
    # range is refused with a sentence (`classroom_inputs.whatif_settings`).
    with gr.Row():
        c["wi_alpha"] = gr.Number(0.78, step=0.01, label=t("whatif.alpha", lang), elem_id="sv-wi-alpha",
                                  info=t("ui.range", lang, lo=0, hi=1))
        c["wi_k"] = gr.Number(5, step=1, label=t("whatif.k", lang), elem_id="sv-wi-k",
                              info=t("ui.range", lang, lo=1, hi=whatif.K_MAX))
        c["wi_c"] = gr.Number(round(8 / 70, 3), step=0.001, label=t("whatif.c", lang), elem_id="sv-wi-c",
                              info=t("ui.range", lang, lo=0, hi=int(whatif.C_MAX)))
    c["wi_preset"] = gr.Button(t("whatif.preset", lang), elem_id="sv-wi-preset")
    w = whatif.worked_example()
    first = whatif.curves(w.alpha, w.c)
    c["wi_text"] = gr.HTML(vw.whatif_html(w.alpha, w.k, w.c, first, None, w, lang), elem_id="sv-wi-text")
    c["wi_plot"] = LocalePlot(lang, vw.whatif_figure(first, w.k, None, lang), show_label=False, elem_id="sv-wi-plot")
    gr.Markdown(t("why.intro", lang))
    with gr.Row(equal_height=False):
        c["why_k"] = gr.Number(4, step=1, label=t("why.k", lang), elem_id="sv-why-k",
                               info=t("ui.range", lang, lo=1, hi=APP_WHY_MAX_K))
        c["why_btn"] = gr.Button(t("why.run", lang), elem_id="sv-why-run")
        c["why_stop"] = gr.Button(t("why.stop", lang), elem_id="sv-why-stop", variant="stop")
    c["why_text"] = gr.HTML("", elem_id="sv-why-text")
    c["why_plot"] = LocalePlot(lang, vw.premise_figure(None, lang), show_label=False, elem_id="sv-why-plot")
    return c


def whatif_wire(ctx: AppContext, c: dict, concurrency_limit: int = 1) -> None:
    wi_inputs = ["wi_alpha", "wi_k", "wi_c", "cls_trace", "trace", "cls_costs"]
    for slider in ("wi_alpha", "wi_k", "wi_c"):
        listen(c[slider].change, what_if, ctx, c, wi_inputs, ["wi_plot", "wi_text"], queue=False)
    listen(c["wi_preset"].click, preset, ctx, c, wi_inputs[3:], ["wi_alpha", "wi_k", "wi_c", "wi_plot", "wi_text"],
           queue=False)
    listen(c["why_btn"].click, why_fast, ctx, c, ["why_k", "prompt", "pair", "draft_id", "target_id"],
           ["why_plot", "why_text", "cls_costs"], gpu=True, concurrency_limit=concurrency_limit,
           concurrency_id="decode")
    listen(c["why_stop"].click, why_stop, ctx, c, (), (), queue=False, show_progress="hidden")


# ---------------------------------------------------------------- the calculator
def what_if(ctx: AppContext, alpha, k, c, cls_trace, trace, costs):
    lang = ctx.lang
    try:
        a, kk, cc = classroom_inputs.whatif_settings(alpha, k, c, lang)
    except InputError as e:
        return {"wi_plot": gr.update(), "wi_text": vh.status_html(str(e), "error")}
    shown = cls_trace if cls_trace and cls_trace.rounds else trace
    curves = whatif.curves(a, cc)
    measured = whatif.measured_point(list(shown.rounds), shown.k, (costs or {}).get("c")) if shown else None
    return {"wi_plot": vw.whatif_figure(curves, kk, measured, lang),
            "wi_text": vw.whatif_html(a, kk, cc, curves, measured, whatif.worked_example(), lang)}


def preset(ctx: AppContext, cls_trace, trace, costs):
    """The worked example in the sliders, and its curves (a slider already there fires no change)."""
    w = whatif.WORKED
    values = {"wi_alpha": w["alpha"], "wi_k": w["k"], "wi_c": round(w["c"], 3)}
    return {**values, **what_if(ctx, *values.values(), cls_trace, trace, costs)}


# ---------------------------------------------------------------- why it is fast
def _failed(lang: str, error: Exception) -> dict:
    return {"why_plot": gr.update(), "cls_costs": gr.update(),
            "why_text": vh.status_html(t("why.failed", lang, error=inputs.error_message(error, lang)), "error")}


def why_fast(ctx: AppContext, k, prompt, choice, draft_id, target_id, request: gr.Request, progress=gr.Progress()):
    """Time the target's forward over 1..K+1 positions against the draft's one-token forward, APP_WHY_REPEATS
    times (or until Stop, or until APP_WHY_MAX_S is spent), showing the numbers after each repetition."""
    lang = ctx.lang
    try:
        kk = classroom_inputs.classroom_checked({"why_k": k}, ("why_k",), lang)["why_k"]
        pair = worker.torch_thread.run(ctx.load, inputs.pair_ids(choice, draft_id, target_id, lang), progress)
        ids = inputs.encode_prompt(pair, inputs.check_prompt(prompt, lang), False, 1, kk, lang)
    except Exception as e:  # noqa: BLE001 - keep serving; say what went wrong
        yield _failed(lang, e)
        return
    device = f"{pair.device} {str(pair.dtype).replace('torch.', '')}"
    run, repeats, ended, t0 = new_run(request), [], "", time.monotonic()
    try:
        for _ in range(APP_WHY_REPEATS):
            if run.stop.is_set() or time.monotonic() - t0 > APP_WHY_MAX_S:
                ended = "stopped" if run.stop.is_set() else "budget"
                break
            try:
                costs = worker.torch_thread.run(lambda: bench_costs.forward_costs(
                    pair.target, pair.draft, ids, ks=range(0, kk + 1), repeats=3, stop=run.stop.is_set))
            except PrefillStopped:   # Stop, heard between two forwards of this repetition
                ended = "stopped"
                break
            except Exception as e:  # noqa: BLE001
                yield _failed(lang, e)
                return
            repeats.append(whatif.premise({k_ + 1: s for k_, s in costs.target_k.items()}, costs.draft_1))
            spread = whatif.premise_spread(repeats)
            yield {"why_plot": vw.premise_figure(spread, lang), "cls_costs": gr.update(),
                   "why_text": vw.premise_html(spread, device, lang, done=len(repeats), total=APP_WHY_REPEATS)}
    finally:
        end_run(run)
    yield _why_final(whatif.premise_spread(repeats), device, ended, lang)


def _why_final(spread, device: str, ended: str, lang: str) -> dict:
    if spread is None:   # stopped before the first repetition
        return {"why_plot": gr.update(), "cls_costs": gr.update(),
                "why_text": vh.status_html(t("why.stopped", lang, done=0, total=APP_WHY_REPEATS), "warn")}
    c = spread.draft_1 / spread.target[0] if spread.target[0] > 0 else None
    return {"why_plot": vw.premise_figure(spread, lang), "cls_costs": {"c": c} if c else gr.update(),
            "why_text": vw.premise_html(spread, device, lang, done=len(spread.ratios), total=APP_WHY_REPEATS,
                                        ended=ended)}


def why_stop(ctx: AppContext, request: gr.Request) -> None:
    stop_run(request)
