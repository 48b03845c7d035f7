"""The left column (prompt, K, sampling, models, Generate/Stop) and the live run it starts.

A run: check the form, load the pair (cached), start the decode worker, then
turn each batch of worker events into one page update through `StreamView`.
The target-alone comparison (speedup, identical-output check) is computed by
`specviz.compare`, after the speculative run has finished.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

from ...compare import compare_runs
from ...limits import ADAPTIVE_THRESHOLD, APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_PROMPT_CHARS
from ...models import ModelLoadError
from ...strings import t
from ...trace import Trace, metrics
from ...viz import html as vh
from .. import inputs, worker
from ..events import listen
from ..inputs import InputError, RunSettings
from ..session import AppContext, new_run, stop_run
from ..stream import VIEWS, StreamView, inspector_updates, status
from ..worker import BaselineDone, BaselineProgress, DecodeJob, Failed, Finished, RoundDone, SpecDone

RUN_INPUTS = ("prompt", "raw", "k", "adaptive", "temperature", "top_k", "top_p", "max_new", "seed", "pair",
              "draft_id", "target_id", "compare_switch")


# ---------------------------------------------------------------- layout
def controls(lang: str, examples: list[list], prompt: str, k: int, max_new: int, pair_label: str | None) -> dict:
    """The form; returns its components by name."""
    c = {}
    c["prompt"] = gr.Textbox(label=t("ui.prompt", lang), value=prompt, lines=4, max_lines=12,
                             max_length=APP_MAX_PROMPT_CHARS, elem_id="sv-prompt")
    c["raw"] = gr.Checkbox(label=t("ui.raw", lang), value=False)
    c["k"] = gr.Slider(1, APP_MAX_K, value=k, step=1, label=t("ui.k", lang), elem_id="sv-k")
    c["adaptive"] = gr.Checkbox(label=t("ui.adaptive", lang, threshold=ADAPTIVE_THRESHOLD), value=False,
                                elem_id="sv-adaptive")
    c["max_new"] = gr.Slider(1, APP_MAX_NEW_TOKENS, value=max_new, step=1, label=t("ui.max_new", lang),
                             elem_id="sv-max-new")
    with gr.Accordion(t("ui.sampling", lang), open=True):
        c["temperature"] = gr.Slider(0.0, 2.0, value=0.0, step=0.05, label=t("ui.temperature", lang), elem_id="sv-temp")
        c["top_p"] = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label=t("ui.top_p", lang), elem_id="sv-topp")
        with gr.Row():
            c["top_k"] = gr.Number(value=0, precision=0, minimum=0, label=t("ui.top_k", lang), elem_id="sv-topk")
            c["seed"] = gr.Number(value=0, precision=0, minimum=0, label=t("ui.seed", lang), elem_id="sv-seed")
    with gr.Accordion(t("ui.models", lang), open=False, elem_id="sv-models"):
        c["pair"] = gr.Dropdown(inputs.pair_choices(lang, pair_label), value=inputs.PACKAGED, label=t("ui.pair", lang),
                                elem_id="sv-pair")
        c["draft_id"] = gr.Textbox(label=t("ui.draft_id", lang), visible=False, elem_id="sv-draft",
                                   placeholder="Qwen/Qwen2.5-0.5B-Instruct")
        c["target_id"] = gr.Textbox(label=t("ui.target_id", lang), visible=False, elem_id="sv-target",
                                    placeholder="Qwen/Qwen2.5-1.5B-Instruct")
        gr.Markdown(t("ui.models_note", lang))
    c["compare_switch"] = gr.Checkbox(label=t("ui.compare", lang), value=True, elem_id="sv-compare-switch")
    with gr.Row():
        c["run_btn"] = gr.Button(t("ui.generate", lang), variant="primary", elem_id="sv-run")
        c["stop_btn"] = gr.Button(t("ui.stop", lang), variant="stop", elem_id="sv-stop")
    gr.Examples([e[:3] for e in examples], inputs=[c["prompt"], c["k"], c["temperature"]],
                example_labels=[e[3] for e in examples], label=t("ui.examples", lang))
    return c


def wire(ctx: AppContext, c: dict, concurrency_limit: int) -> list:
    """Listeners of the form; returns the run event (the Stop button cancels it)."""
    listen(c["pair"].change, pair_visibility, ctx, c, ["pair"], ["draft_id", "target_id"], queue=False)
    return [listen(c["run_btn"].click, generate, ctx, c, RUN_INPUTS, VIEWS, gpu=True, concurrency_limit=concurrency_limit,
                   concurrency_id="decode", show_progress="minimal")]


def wire_stop(ctx: AppContext, c: dict, cancels: list) -> None:
    listen(c["stop_btn"].click, stop, ctx, c, (), ["status"], cancels=cancels, queue=False)


# ---------------------------------------------------------------- events
def pair_visibility(ctx: AppContext, choice):
    custom = choice == inputs.CUSTOM
    return {"draft_id": gr.update(visible=custom), "target_id": gr.update(visible=custom)}


def stop(ctx: AppContext, request: gr.Request):
    stop_run(request)
    return status(t("status.stopped", ctx.lang), "warn")


@dataclass
class Outcome:
    """What the worker reported besides rounds."""

    spec_stats: dict = field(default_factory=dict)
    steps: list | None = None          # the target-alone run, when it ran
    error: BaseException | None = None
    finished: bool = False
    stopped: bool = False              # the user pressed Stop (or the page went away)


def generate(ctx: AppContext, prompt, raw, k, adaptive, temperature, top_k, top_p, max_new, seed, choice, draft_id,
             target_id, compare, request: gr.Request, progress=gr.Progress()):
    lang = ctx.lang
    run = new_run(request)
    try:
        s = inputs.run_settings(prompt, raw, k, adaptive, temperature, top_k, top_p, max_new, seed, choice, draft_id,
                                target_id, compare, lang)
    except InputError as e:
        gr.Warning(str(e))
        yield status(str(e), "error")
        return
    yield status(t("status.loading", lang), "run")
    try:
        pair = ctx.load(s.pair_ids, progress)
        ids = inputs.encode_prompt(pair, s.prompt, s.raw, s.max_new_tokens, s.k, lang)
    except (InputError, ModelLoadError) as e:
        gr.Warning(inputs.error_message(e))
        yield status(inputs.error_message(e), "error")
        return
    except Exception as e:  # noqa: BLE001 - keep serving; say what went wrong
        yield status(t("status.prepare_failed", lang, error=inputs.error_message(e)), "error")
        return
    view = StreamView(s.prompt, s.sampling.greedy, lang, ctx.chart_interval_s)
    decoding = t("status.decoding_adaptive" if s.adaptive_threshold else "status.decoding", lang, k=s.k)
    yield {**status(decoding, "run"), **view.start(), "compare": "", "metrics": vh.metrics_html(metrics([]), lang=lang)}
    events = worker.start(DecodeJob(pair, ids, s.k, s.sampling, s.max_new_tokens, s.seed, s.compare,
                                    s.adaptive_threshold), run)
    outcome = Outcome()
    try:
        for batch in worker.batches(events):
            update = apply_events(batch, view, outcome, s, run.stop.is_set, lang)
            if update and not outcome.finished:
                yield update
    finally:
        run.stop.set()  # a cancelled or closed page stops the decoder too
    yield finish(ctx, request, pair, s, ids, view, outcome)


def apply_events(batch: list, view: StreamView, outcome: Outcome, s: RunSettings, stopped, lang: str) -> dict:
    """Fold one batch of worker events into the view and the outcome; returns the page update."""
    message, added = None, False
    for event in batch:
        match event:
            case RoundDone(round=rnd):
                view.add(rnd)
                added = True
            case SpecDone(stats=stats):
                outcome.spec_stats = stats
                if s.compare and not stopped():
                    message = t("status.baseline_start", lang)
            case BaselineProgress(tokens=n):
                message = t("status.baseline_progress", lang, n=n, total=s.max_new_tokens)
            case BaselineDone(steps=steps):
                outcome.steps = steps
            case Failed(error=error):
                outcome.error = error
            case Finished():
                outcome.finished, outcome.stopped = True, stopped()
    update = {}
    if added:
        update = view.progress()
        update.update(status(t("status.round", lang, n=len(view.rounds), tokens=view.metrics["tokens"],
                               total=s.max_new_tokens), "run"))
    if message:
        update.update(status(message, "run"))
    return update


def make_trace(pair, s: RunSettings, ids: list[int], view: StreamView, outcome: Outcome) -> Trace:
    rounds = list(view.rounds)
    return Trace(prompt=s.prompt, prompt_ids=ids, draft_model=getattr(pair, "draft_name", ""),
                 target_model=getattr(pair, "target_name", ""), k=s.k, max_new_tokens=s.max_new_tokens, seed=s.seed,
                 sampling=s.sampling.to_dict(), rounds=rounds,
                 output_text=_decode(pair, [tok for r in rounds for tok in r.emitted]),
                 prefill_seconds=float(outcome.spec_stats.get("prefill_seconds", 0.0)),
                 device=str(getattr(pair, "device", "")), dtype=str(getattr(pair, "dtype", "")).replace("torch.", ""),
                 adaptive_threshold=s.adaptive_threshold)


def finish(ctx: AppContext, request, pair, s: RunSettings, ids: list[int], view: StreamView, outcome: Outcome) -> dict:
    """The last update of a run: final views, comparison, inspector, download, and the closing status."""
    lang = ctx.lang
    trace = make_trace(pair, s, ids, view, outcome)
    m = metrics(view.rounds)
    comparison = compare_runs(trace.output_ids, m["tokens_per_s"], outcome.steps or [], s.sampling.greedy)
    final = view.final(trace.prefill_seconds, comparison.base_tokens_per_s if comparison else None)
    final["trace"] = trace
    final.update(inspector_updates(trace, lang))
    if comparison is not None:
        final["compare"] = vh.comparison_html(comparison, dtype=trace.dtype, lang=lang)
    error = outcome.error
    if view.rounds:
        try:
            final["download"] = gr.update(value=ctx.write_trace(trace, request), interactive=True)
        except (OSError, ValueError) as e:
            error = error or e
    if error is not None:
        final.update(status(t("status.failed", lang, error=inputs.error_message(error)), "error"))
    elif outcome.stopped:
        final.update(status(t("status.stopped_after", lang, rounds=len(view.rounds), tokens=m["tokens"]), "warn"))
    else:
        final.update(status(t("status.done", lang, tokens=m["tokens"], rounds=m["rounds"], tps=vh.fmt(m["tokens_per_s"], 1),
                              acceptance=vh.pct(m["acceptance_rate"]), tau=vh.fmt(m["tau"], 2)), "ok"))
    return final


def _decode(pair, ids: list[int]) -> str:
    try:
        return pair.decode(ids)
    except Exception:  # noqa: BLE001 - a display convenience only
        return ""
