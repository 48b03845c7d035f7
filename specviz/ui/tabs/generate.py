"""The left column (prompt, K, sampling, models, Generate/Stop) and the live run it starts.

A run: check the form (beside each field before anything is queued, and again
here), load the pair (cached) with its progress in the status, time the pair's
bare forwards once per pair, device and K (`ui.pays`: c and the verify cost
behind the "cannot pay" sentence), start the decode worker, then turn each
batch of worker events into one page update through `StreamView`. Stop is only
a flag: the run sees it within a round and ends with a final status, keeping
what it made (text, trace, download). The target-alone comparison is computed
by `specviz.trace.compare` after the run.
"""
from __future__ import annotations

import dataclasses
import time

import gradio as gr

from ...trace.compare import compare_runs
from ...runtime.invariance import identity_limit
from ...limits import (ADAPTIVE_THRESHOLD, APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_PROMPT_CHARS, APP_MAX_TEMPERATURE,
                       APP_MAX_TREE_NODES, APP_STOP_GRACE_S)
from ...strings import t
from ...trace.records import metrics
from ...viz import html as vh
from ...viz import pays as vp
from .. import inputs, pays, waiting, worker
from ..events import listen, listen_form
from ..inputs import RunSettings
from ..session import AppContext, end_session, stop_run
from ..stream import AFTER_RUN_VIEWS, RUN_VIEWS, StreamView, after_run_updates, status
from ..run import Outcome, clean_text, job_of, make_trace
from ..worker import BaselineProgress, RoundDone, SpecDone

# ---------------------------------------------------------------- layout
def controls(lang: str, examples: list[list], prompt: str, k: int, max_new: int, pair_label: str | None,
             gpu: bool = False, pair: str = inputs.PACKAGED) -> dict:
    """The form; returns its components by name. Numbers are plain boxes: a value out of range is refused with a
    sentence beside the box, never clamped. `gpu` offers the GPU presets; `pair` is the pair chosen at first."""
    c = {}
    c["prompt"] = gr.Textbox(label=t("ui.prompt", lang), value=prompt, lines=4, max_lines=12, elem_id="sv-prompt",
                             info=t("ui.prompt_info", lang, limit=APP_MAX_PROMPT_CHARS))
    # Generate right under the prompt: in view at 1366×900, and near the prompt on a phone (the settings follow).
    with gr.Row(elem_id="sv-run-row"):
        c["run_btn"] = gr.Button(t("ui.generate", lang), variant="primary", elem_id="sv-run")
        c["stop_btn"] = gr.Button(t("ui.stop", lang), variant="stop", elem_id="sv-stop")
    c["raw"] = gr.Checkbox(label=t("ui.raw", lang), value=False)
    with gr.Row():
        c["k"] = gr.Number(value=k, step=1, label=t("ui.k", lang), info=t("ui.range", lang, lo=1, hi=APP_MAX_K),
                           elem_id="sv-k")
        c["max_new"] = gr.Number(value=max_new, step=1, label=t("ui.max_new", lang),
                                 info=t("ui.range", lang, lo=1, hi=APP_MAX_NEW_TOKENS), elem_id="sv-max-new")
    c["adaptive"] = gr.Checkbox(label=t("ui.adaptive", lang, threshold=ADAPTIVE_THRESHOLD), value=False,
                                elem_id="sv-adaptive")
    drafter_info = f'{t("ui.drafter_info", lang)} {t("ui.drafter_tree_info", lang, limit=APP_MAX_TREE_NODES)}'
    c["drafter"] = gr.Radio(inputs.drafter_choices(lang), value="model", label=t("ui.drafter", lang),
                            info=drafter_info, elem_id="sv-drafter")
    with gr.Accordion(t("ui.sampling", lang), open=True):
        with gr.Row():
            c["temperature"] = gr.Number(value=0.0, step=0.05, label=t("ui.temperature", lang),
                                         info=t("ui.range", lang, lo=0, hi=APP_MAX_TEMPERATURE), elem_id="sv-temp")
            c["top_p"] = gr.Number(value=1.0, step=0.05, label=t("ui.top_p", lang), info=t("ui.top_p_info", lang),
                                   elem_id="sv-topp")
        with gr.Row():
            c["top_k"] = gr.Number(value=0, step=1, label=t("ui.top_k", lang), elem_id="sv-topk")
            c["seed"] = gr.Number(value=0, step=1, label=t("ui.seed", lang), elem_id="sv-seed")
    with gr.Accordion(t("ui.models", lang), open=False, elem_id="sv-models"):
        c["pair"] = gr.Dropdown(inputs.pair_choices(lang, pair_label, gpu), value=pair, label=t("ui.pair", lang),
                                elem_id="sv-pair")
        c["draft_id"] = gr.Textbox(label=t("ui.draft_id", lang), visible=False, elem_id="sv-draft",
                                   placeholder="Qwen/Qwen2.5-0.5B-Instruct")
        c["target_id"] = gr.Textbox(label=t("ui.target_id", lang), visible=False, elem_id="sv-target",
                                    placeholder="Qwen/Qwen2.5-1.5B-Instruct")
        gr.Markdown(t("ui.models_note", lang))
    with gr.Accordion(t("ui.advanced", lang), open=False, elem_id="sv-advanced"):
        c["compile"] = gr.Radio(inputs.compile_choices(lang), value="auto", label=t("ui.compile", lang),
                                info=t("ui.compile_info", lang), elem_id="sv-compile")
        c["lookup_k"] = gr.Number(value=0, step=1, label=t("ui.lookup_k", lang),
                                  info=t("ui.lookup_k_info", lang, hi=APP_MAX_K), elem_id="sv-lookup-k")
    c["compare_switch"] = gr.Checkbox(label=t("ui.compare", lang), value=True, elem_id="sv-compare-switch")
    gr.Examples([e[:3] for e in examples], inputs=[c["prompt"], c["k"], c["temperature"]],
                example_labels=[e[3] for e in examples], label=t("ui.examples", lang), api_visibility="private")
    return c


def field_validator(ctx: AppContext, names: tuple[str, ...]):
    """Gradio's `validator` (it gets the inputs by position, in `names` order): a sentence beside each bad field,
    and the event is not queued at all."""
    def check(*values):
        errors = inputs.field_errors(dict(zip(names, values)), ctx.lang)
        return [gr.validate(name not in errors, errors.get(name, "")) for name in names]

    return check


def wire(ctx: AppContext, c: dict, concurrency_limit: int) -> list:
    """Listeners of the form; returns the run event."""
    ctx.concurrency_limit = concurrency_limit
    listen(c["pair"].change, pair_visibility, ctx, c, ["pair"], ["draft_id", "target_id"], queue=False)
    listen_form(c["run_btn"].click, submitted, ctx, c, inputs.RUN_FORM, ["status"], queue=False, show_progress="hidden")
    run = listen_form(c["run_btn"].click, generate, ctx, c, inputs.RUN_FORM, RUN_VIEWS, gpu=True,
                      concurrency_limit=concurrency_limit, concurrency_id="decode", show_progress="minimal",
                      validator=field_validator(ctx, inputs.RUN_FORM))
    # The charts and the inspector after the run, from its trace: no model, so no queue slot of the decode.
    listen(run.then, after_run, ctx, c, ["trace", "target_token_s"], AFTER_RUN_VIEWS, show_progress="hidden")
    return [run]


def wire_stop(ctx: AppContext, c: dict, demo: gr.Blocks | None = None, **_ignored) -> None:
    """Stop only raises the session's flag: each kind of work hears it within a round and closes with a status.
    Closing the page does the same (`unload`)."""
    listen(c["stop_btn"].click, stop, ctx, c, (), ["status"], queue=False, show_progress="hidden")
    if demo is not None:
        demo.unload(page_closed)


# ---------------------------------------------------------------- events
def pair_visibility(ctx: AppContext, choice):
    custom = choice == inputs.CUSTOM
    return {"draft_id": gr.update(visible=custom), "target_id": gr.update(visible=custom)}


def page_closed(request: gr.Request) -> None:
    end_session(request)


def stop(ctx: AppContext, request: gr.Request) -> dict:
    """Raise the session's Stop flag; a request still waiting in the queue is said withdrawn at once (the running
    ones say "Stopping…" themselves, within a round)."""
    if stop_run(request):
        return status(t("status.withdrawn", ctx.lang), "warn")
    return {}


def after_run(ctx: AppContext, trace, target_token_s=None):
    """After a run's event: its charts, the round inspector at its last round and its page for "Download as HTML"
    (`stream.AFTER_RUN_VIEWS`)."""
    page = ctx.write_html(trace) if trace is not None and trace.rounds else None
    return after_run_updates(trace, ctx.lang, target_token_s, page)


def submitted(ctx: AppContext, form: dict, request: gr.Request):
    """Right after the click, before the queue: a bad field's sentence, or the place in the queue.
    `form`: {name: value} of the fields in `inputs.RUN_FORM`."""
    return waiting.place_in_queue(ctx, request, lambda: inputs.run_settings(form, ctx.lang), status)


def generate(ctx: AppContext, form: dict, request: gr.Request):
    """The run (`form`: {name: value} of the fields in `inputs.RUN_FORM`), as a stream of page updates."""
    yield from waiting.guarded(ctx, request, lambda: inputs.run_settings(form, ctx.lang), status,
                               lambda run, s: _generate(ctx, run, request, s))


def _generate(ctx: AppContext, run, request, s: RunSettings):
    lang = ctx.lang
    ready = yield from waiting.prepared(ctx, run, s.pair_ids, status, lambda pair: inputs.encode_prompt(
        pair, s.prompt, s.raw, s.max_new_tokens, s.k, lang))
    if ready is None:
        return
    pair, ids = ready
    compiled = pays.compiles(worker.compile_mode(s.drafter, s.compile), pair)   # a tree: never
    # The live text on every update, the tiles at a slower pace, the log at the end, the charts after it.
    view = StreamView(s.prompt, s.sampling.greedy, lang, ctx.live_log_interval_s, stream_charts=False, live_log=False)
    outcome = Outcome()
    yield from stream_run(ctx, run, pair, s, ids, compiled, view, outcome)
    costs = pays.cached(pair, s.k, s.drafter, compiled)
    final = finish(ctx, request, pair, s, ids, view, outcome, costs)
    if costs is not None or outcome.stopped or outcome.error is not None or not view.rounds \
            or not pays.wanted(pair, s.drafter, compiled):
        yield final
        return
    # The answer first: the bare forwards behind the "cannot pay" sentence are timed after it, once per pair and K
    # (still in this event, so no other run's timing overlaps them), and Stop abandons them.
    closing = final.pop("status")
    yield from pays.costs(ctx, run, pays.CostRequest(pair, ids, s.k, s.drafter, compiled),
                          lambda m, kind: status(m, kind), key="status.costs_after", first=final)
    costs = pays.cached(pair, s.k, s.drafter, compiled)
    # The whole final update again, not only the tiles (it once carried the inspector's chart, which Gradio did not
    # draw in a tab not yet opened when only the tiles came last; the inspector now comes after the event).
    yield {**final, "metrics": final["metrics"] + pays_html(pair, s, view, outcome, costs, lang), "status": closing}


def stream_run(ctx: AppContext, run, pair, s: RunSettings, ids: list[int], compiled: bool, view: StreamView,
               outcome: Outcome):
    """Start the decode worker and turn each batch of its events into one page update. After Stop the page waits
    at most `APP_STOP_GRACE_S` for the worker to end its round (or prefill chunk), then leaves it to end alone.

    The updates come at most `ctx.live_updates_per_s` a second, each from the newest state (every round
    that arrived meanwhile is folded in, none skipped), in the speculative part and the target-alone part alike, so
    both are timed under the same drawing; between updates this thread sleeps and the decoder has the cores."""
    lang = ctx.lang
    t0, said, announced = time.monotonic(), time.monotonic(), None
    expected = waiting.PREFILLS.expected(s.pair_ids, len(ids))
    yield {**status(waiting_line(outcome, compiled, t0, len(ids), s.k, lang, expected), "run"), **view.start(),
           "compare": "", "output": "", "metrics": vh.metrics_html(metrics([]), lang=lang)}
    events = worker.start(job_of(pair, s, ids), run)
    rate = ctx.live_updates_per_s
    for batch in worker.batches(events, tick=min(ctx.tick_s, APP_STOP_GRACE_S / 2),
                                interval=1.0 / rate if rate else None):
        shown = len(view.rounds)
        update = apply_events(batch, view, outcome, s, run.stop.is_set, lang)
        if len(view.rounds) > shown:   # the text grows only with rounds (a status-only update leaves it alone)
            update["output"] = clean_text(pair, [tok for r in view.rounds for tok in r.emitted])
        if run.stop.is_set() and announced is None and not outcome.finished:
            announced = time.monotonic()
            update.update(status(t("status.stopping", lang), "run"))
        elif announced is not None and not outcome.finished and time.monotonic() - announced >= APP_STOP_GRACE_S:
            outcome.finished, outcome.stopped = True, True
            return
        elif not view.rounds and announced is None and time.monotonic() - said >= 1.0:
            said = time.monotonic()  # the warm-up or the prefill: no round yet, say what it is and for how long
            update.update(status(waiting_line(outcome, compiled, t0, len(ids), s.k, lang, expected), "run"))
        elif announced is not None and "status" in update:
            update.pop("status")     # keep "Stopping…" until the final status
        if update and not outcome.finished:
            yield update


def waiting_line(outcome: Outcome, compiled: bool, t0: float, n_ids: int, k: int, lang: str,
                 expected: float | None = None) -> str:
    """Before the first round: compiling and capturing the forwards (a compiled run), then reading the prompt, with
    how long it should take in all where a read on this pair was measured (`expected`, `waiting.PREFILLS`)."""
    if compiled and outcome.warmup_seconds is None:
        return t("status.warmup", lang, k=k, seconds=waiting.seconds_since(t0))
    seconds = waiting.seconds_since(t0 + (outcome.warmup_seconds or 0.0))
    if expected is not None and float(seconds) <= 1.5 * expected:
        return t("status.prefill_eta", lang, n=n_ids, seconds=seconds, total=f"{max(expected, 1.0):.0f}")
    return t("status.prefill", lang, n=n_ids, seconds=seconds)


def apply_events(batch: list, view: StreamView, outcome: Outcome, s: RunSettings, stopped, lang: str) -> dict:
    """Fold one batch of worker events into the view and the outcome; returns the page update."""
    message, added = None, False
    for event in batch:
        outcome.take(event, stopped)
        match event:
            case RoundDone(round=rnd):
                view.add(rnd)
                added = True
            case SpecDone(report=report):
                if report.graphs_fallback:   # A failed capture is said, once, in words
                    message = t("status.graphs_fallback", lang, reason=report.graphs_fallback)
                if s.compare and not stopped():
                    message = t("status.baseline_start", lang)
            case BaselineProgress(tokens=n):
                message = t("status.baseline_progress", lang, n=n, total=s.max_new_tokens)
    update = {}
    if added:
        update = view.progress()
        update.update(status(t("status.round", lang, n=len(view.rounds), tokens=view.tokens,
                               total=s.max_new_tokens), "run"))
    if message:
        update.update(status(message, "run"))
    return update


def finish(ctx: AppContext, request, pair, s: RunSettings, ids: list[int], view: StreamView, outcome: Outcome,
           costs=None) -> dict:
    """The last update of a run (stopped or not): final views, comparison, inspector, download, the closing status,
    and under the tiles the sentence saying when speculation cannot pay here (`costs`: the pair's bare forwards)."""
    lang = ctx.lang
    trace = make_trace(pair, s, ids, view.rounds, outcome.spec_report)
    if view.rounds:   # the prompt was read whole: its time tells the next run on this pair how long a read takes
        waiting.PREFILLS.record(s.pair_ids, len(ids), trace.prefill_seconds)
    m = metrics(view.rounds)
    # A stopped comparison would compare a whole run with part of one: leave it out.
    steps = [] if outcome.stopped else (outcome.steps or [])
    comparison = compare_runs(trace.output_ids, m["tokens_per_s"], steps, s.sampling.greedy)
    # The speedup is in the comparison; the charts and the inspector come after the event (`after_run`).
    final = view.final(trace.prefill_seconds, warmup_seconds=outcome.warmup_seconds, charts=False)
    outcome.speedup = comparison.speedup if comparison is not None else None
    final["metrics"] += pays_html(pair, s, view, outcome, costs, lang)
    # The target alone's time per token, the reference of the per-round time chart drawn after the event.
    final.update(trace=trace, output=trace.output_text,
                 target_token_s=sum(x.seconds for x in steps) / len(steps) if steps else None)
    limit = identity_limit(pair.target, pays.compiles(worker.compile_mode(s.drafter, s.compile),
                                                      pair)) if comparison is not None else None
    final["compare"] = (vh.comparison_html(comparison, limit=limit, weights=trace.target_weights, lang=lang)
                        if comparison is not None else "")
    error = outcome.error
    if view.rounds:
        try:
            final["download"] = gr.update(value=ctx.write_trace(trace, request), interactive=True)
        except (OSError, ValueError) as e:
            error = error or e
    if error is not None:
        final.update(status(t("status.failed", lang, error=inputs.error_message(error, lang)), "error"))
    elif outcome.stopped and not view.rounds:
        final.update(status(t("status.stopped", lang), "warn"))
    elif outcome.stopped:
        final.update(status(t("status.stopped_after", lang, rounds=len(view.rounds), tokens=m["tokens"]), "warn"))
    else:
        final.update(status(t("status.done", lang, tokens=m["tokens"], rounds=m["rounds"], tps=vh.display_number(m["tokens_per_s"], 1),
                              acceptance=vh.pct(m["acceptance_rate"]), tau=vh.display_number(m["tau"], 2)), "ok"))
    return final


def pays_html(pair, s: RunSettings, view: StreamView, outcome: Outcome, costs, lang: str) -> str:
    """The sentence under the tiles saying when speculation cannot pay here ("" without costs or a reason)."""
    check = pays.check(costs, s.k, view.metrics, view.rounds, outcome.speedup, pays.device_of(pair))
    weights = pair.weights_label()
    if check is not None and weights:
        check = dataclasses.replace(check, weights=weights)
    return vp.html(check, lang)
