"""The "Trace files" tab: download the shown run as JSON; upload a trace to replay it without any model."""
from __future__ import annotations

import time

import gradio as gr

from ...strings import t
from ...tracefile import TraceFormatError
from ...viz import html as vh
from ...viz.format import strip_special
from .. import inputs
from ..events import listen
from ..session import AppContext, end_run, new_run
from ..stream import VIEWS, StreamView, inspector_updates, status


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.trace", lang), id="trace"):
        gr.Markdown(t("trace.intro", lang))
        c["download"] = gr.DownloadButton(t("ui.download", lang), value=None, interactive=False, elem_id="sv-download")
        # No file_types: Gradio would refuse another file with a bare "Error"; `inputs.read_trace` says why instead.
        c["upload"] = gr.File(label=t("ui.upload", lang), type="filepath", elem_id="sv-upload")
        c["replay_btn"] = gr.Button(t("ui.replay", lang), elem_id="sv-replay")
    return c


def wire(ctx: AppContext, c: dict) -> list:
    """Replay on upload and on the button; returns both events."""
    # No concurrency limit: a replay uses no model, so it never waits for a running decode.
    return [listen(trigger, replay, ctx, c, ["upload"], VIEWS, concurrency_limit=None)
            for trigger in (c["upload"].upload, c["replay_btn"].click)]


def replay(ctx: AppContext, file, request: gr.Request):
    """Stream a trace's rounds into the page as a run would, `ctx.replay_delay` seconds apart; Stop ends it."""
    run = new_run(request, uses_models=False)
    try:
        yield from _replay(ctx, run, file)
    finally:
        end_run(run)


def _replay(ctx: AppContext, run, file):
    lang = ctx.lang
    if file is None:
        yield status(t("replay.choose", lang), "warn")
        return
    try:
        trace = inputs.read_trace(getattr(file, "name", file))
    except (TraceFormatError, OSError) as e:
        yield status(t("replay.unusable", lang, error=inputs.error_message(e, lang)), "error")
        return
    view = StreamView(trace.prompt, trace.greedy, lang, ctx.chart_interval_s)
    recorded = t("replay.recorded_on", lang, device=trace.device, dtype=trace.dtype).strip()
    yield {**status(t("replay.start", lang, n=len(trace.rounds)), "run"), **view.start(), "output": "",
           "compare": vh.trace_summary_html(trace.prompt, trace.draft_model, trace.target_model, trace.k,
                                            trace.sampling, recorded, lang=lang)}
    for rnd in trace.rounds:
        if run.stop.is_set():
            break
        view.add(rnd)
        yield {**view.progress(), "output": strip_special(vh.plain_rounds_text(view.rounds)),
               **status(t("replay.round", lang, n=len(view.rounds), total=len(trace.rounds)), "run")}
        if ctx.replay_delay > 0:
            time.sleep(ctx.replay_delay)
    final = view.final(prefill_seconds=trace.prefill_seconds)
    whole = len(view.rounds) == len(trace.rounds)
    text = strip_special(trace.output_text) if whole and trace.output_text else \
        strip_special(vh.plain_rounds_text(view.rounds))
    final.update(trace=trace, output=text, **inspector_updates(trace, lang))
    if whole:
        final.update(status(t("replay.done", lang, tokens=view.metrics["tokens"], rounds=view.metrics["rounds"]), "ok"))
    else:
        final.update(status(t("replay.stopped", lang, n=len(view.rounds), total=len(trace.rounds)), "warn"))
    yield final
