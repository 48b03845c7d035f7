"""The "Trace files" tab: download the shown run as JSON or as one HTML page that replays it offline
(specviz.viz.export); upload a trace to replay it without any model."""
from __future__ import annotations

import math

import gradio as gr

from ...limits import APP_OUTPUT_TAIL_CHARS, APP_REPLAY_MAX_S
from ...strings import t
from ...trace.files import TraceFormatError
from ...viz import html as vh
from ...viz.format import strip_special
from .. import inputs, waiting, worker
from ..events import listen
from ..session import AppContext, end_run, new_run
from ..stream import VIEWS, StreamView, html_download, inspector_updates, status
from ..worker import Failed, Result

BATCH_PAUSE_S = 0.5    # between the updates of a replay too long to show round by round


def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.trace", lang), id="trace"):
        gr.Markdown(t("trace.intro", lang))
        with gr.Row():
            c["download"] = gr.DownloadButton(t("ui.download", lang), value=None, interactive=False,
                                              elem_id="sv-download")
            c["download_html"] = gr.DownloadButton(t("ui.download_html", lang), value=None, interactive=False,
                                                   elem_id="sv-download-html")
        # No file_types: Gradio would refuse another file with a bare "Error"; `inputs.read_trace` says why instead.
        c["upload"] = gr.File(label=t("ui.upload", lang), type="filepath", elem_id="sv-upload")
        c["replay_btn"] = gr.Button(t("ui.replay", lang), elem_id="sv-replay")
    return c


def wire(ctx: AppContext, c: dict) -> list:
    """Replay on upload and on the button; returns both events."""
    # No concurrency limit: a replay uses no model, so it never waits for a running decode.
    return [listen(trigger, replay, ctx, c, ["upload"], VIEWS, concurrency_limit=None, show_progress="hidden")
            for trigger in (c["upload"].upload, c["replay_btn"].click)]


def replay(ctx: AppContext, file, request: gr.Request):
    """Stream a trace's rounds into the page as a run would, `ctx.replay_delay` seconds apart (faster for a trace
    that would take longer than `APP_REPLAY_MAX_S`); Stop ends it within one step."""
    run = new_run(request, uses_models=False)
    try:
        yield from _replay(ctx, run, file)
    finally:
        end_run(run)


def pacing(n_rounds: int, delay: float) -> tuple[int, float]:
    """(rounds per update, seconds between updates): one round per `delay`, unless that would take longer than
    `APP_REPLAY_MAX_S`; then `BATCH_PAUSE_S` apart, as many rounds each as fit the time (a 10,000-round trace comes
    in about a hundred updates, each of bounded size, that a browser draws without falling behind)."""
    if n_rounds * delay <= APP_REPLAY_MAX_S:
        return 1, delay
    pause = max(delay, BATCH_PAUSE_S)
    return max(1, math.ceil(n_rounds * pause / APP_REPLAY_MAX_S)), pause


def _read(ctx: AppContext, run, file):
    """The uploaded trace, parsed in a thread (a large one takes seconds) with a status line; None if unusable
    (said) or stopped."""
    lang = ctx.lang
    if file is None:
        yield status(t("replay.choose", lang), "warn")
        return None
    path = getattr(file, "name", file)
    reading = worker.call(lambda progress: inputs.read_trace(path), run, models=False)   # no model: never queued
    outcome = yield from waiting.wait_for(ctx, run, reading,
                                          lambda p, seconds: t("replay.reading", lang, seconds=seconds),
                                          lambda m, kind: status(m, kind), "replay.stopping")
    if isinstance(outcome, Result) and not run.stop.is_set():
        return outcome.value
    if isinstance(outcome, Failed) and isinstance(outcome.error, (TraceFormatError, OSError)):
        yield status(t("replay.unusable", lang, error=inputs.error_message(outcome.error, lang)), "error")
    elif isinstance(outcome, Failed) and not run.stop.is_set():
        raise outcome.error
    else:
        yield status(t("status.stopped", lang), "warn")
    return None


def _replay(ctx: AppContext, run, file):
    lang = ctx.lang
    trace = yield from _read(ctx, run, file)
    if trace is None:
        return
    (step, pause), text = pacing(len(trace.rounds), ctx.replay_delay), []
    view = StreamView(trace.prompt, trace.greedy, lang, ctx.chart_interval_s, stream_charts=step == 1)
    recorded = t("replay.recorded_on", lang, device=trace.device, dtype=trace.dtype).strip()
    yield {**status(t("replay.start", lang, n=len(trace.rounds)), "run"), **view.start(), "output": "",
           "compare": vh.trace_summary_html(trace.prompt, trace.draft_model, trace.target_model, trace.k,
                                            trace.sampling, recorded, lang=lang)}
    for start in range(0, len(trace.rounds), step):
        if run.stop.is_set():
            break
        for rnd in trace.rounds[start:start + step]:
            view.add(rnd)
            text.append(vh.plain_rounds_text([rnd]))
        update = view.progress()
        if "metrics" in update or step == 1:     # a fast replay's text comes with the tiles, at their pace
            update["output"] = tail("".join(text))
        yield {**update, **status(t("replay.round", lang, n=len(view.rounds), total=len(trace.rounds)), "run")}
        if pause > 0:
            run.stop.wait(pause)                 # a pause that Stop cuts short
    yield {**replay_final(trace, view, "".join(text), lang), "download_html": html_download(ctx.write_html(trace))}


def tail(text: str) -> str:
    """The end of a replay's text while it streams: the output box measures its whole text on every update, which
    for a long trace is what freezes a page (the whole text comes with the final update)."""
    text = strip_special(text)
    return text if len(text) <= APP_OUTPUT_TAIL_CHARS else "…" + text[-APP_OUTPUT_TAIL_CHARS:]


def replay_final(trace, view: StreamView, text: str, lang: str) -> dict:
    """The last update of a replay, whole or stopped."""
    final = view.final(prefill_seconds=trace.prefill_seconds)
    whole = len(view.rounds) == len(trace.rounds)
    text = strip_special(trace.output_text) if whole and trace.output_text else strip_special(text)
    final.update(trace=trace, output=text, target_token_s=None, **inspector_updates(trace, lang))   # no target alone
    if whole:
        final.update(status(t("replay.done", lang, tokens=view.metrics["tokens"], rounds=view.metrics["rounds"]), "ok"))
    else:
        final.update(status(t("replay.stopped", lang, n=len(view.rounds), total=len(trace.rounds)), "warn"))
    return final
