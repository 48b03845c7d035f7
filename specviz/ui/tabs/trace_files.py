"""The "Trace files" tab: download the shown run as JSON; upload a trace to replay it without any model."""
from __future__ import annotations

import time

import gradio as gr

from ...strings import t
from ...trace import TraceFormatError
from ...viz import html as vh
from .. import inputs
from ..events import listen
from ..session import AppContext, new_run
from ..stream import VIEWS, StreamView, inspector_updates, status


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.trace", lang), id="trace"):
        gr.Markdown(t("trace.intro", lang))
        c["download"] = gr.DownloadButton(t("ui.download", lang), value=None, interactive=False, elem_id="sv-download")
        c["upload"] = gr.File(label=t("ui.upload", lang), file_types=[".json"], type="filepath", elem_id="sv-upload")
        c["replay_btn"] = gr.Button(t("ui.replay", lang), elem_id="sv-replay")
    return c


def wire(ctx: AppContext, c: dict) -> list:
    """Replay on upload and on the button; returns both events (the Stop button cancels them)."""
    # No concurrency limit: a replay uses no model, so it never waits for a running decode.
    return [listen(trigger, replay, ctx, c, ["upload"], VIEWS, concurrency_limit=None)
            for trigger in (c["upload"].upload, c["replay_btn"].click)]


def replay(ctx: AppContext, file, request: gr.Request):
    """Stream a trace's rounds into the page as a run would, `ctx.replay_delay` seconds apart."""
    lang = ctx.lang
    run = new_run(request)
    if file is None:
        yield status(t("replay.choose", lang), "warn")
        return
    try:
        trace = inputs.read_trace(getattr(file, "name", file), lang)
    except (TraceFormatError, OSError) as e:
        message = t("replay.unusable", lang, error=inputs.error_message(e))
        gr.Warning(message)
        yield status(message, "error")
        return
    view = StreamView(trace.prompt, trace.greedy, lang, ctx.chart_interval_s)
    recorded = t("replay.recorded_on", lang, device=trace.device, dtype=trace.dtype).strip()
    yield {**status(t("replay.start", lang, n=len(trace.rounds)), "run"), **view.start(),
           "compare": vh.trace_summary_html(trace.prompt, trace.draft_model, trace.target_model, trace.k,
                                            trace.sampling, recorded, lang=lang)}
    for rnd in trace.rounds:
        if run.stop.is_set():
            break
        view.add(rnd)
        yield {**view.progress(), **status(t("replay.round", lang, n=len(view.rounds), total=len(trace.rounds)), "run")}
        if ctx.replay_delay > 0:
            time.sleep(ctx.replay_delay)
    final = view.final(prefill_seconds=trace.prefill_seconds)
    final.update(trace=trace, **inspector_updates(trace, lang))
    final.update(status(t("replay.done", lang, tokens=view.metrics["tokens"], rounds=view.metrics["rounds"]), "ok"))
    yield final
