"""The classroom's losslessness lab: N first tokens through the real rule or a known bug, live; then the
same position's "why not just compare tokens?" (the rule against exact matching, measured and by formula).

Split from the classroom tab (specviz/ui/tabs/classroom.py) to keep each file on one job;
the samplers and the teaching variants are pure, in specviz/classroom/lab.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import gradio as gr

from ...classroom import lab, lab_compare
from ...limits import APP_MAX_LAB_PROMPT_CHARS
from ...strings import t
from ...viz import classroom as vc
from ...viz import html as vh
from .. import classroom_inputs, inputs, worker
from ..events import listen, listen_form
from ..inputs import InputError
from ..plots import LocalePlot
from ..session import AppContext, session_id

# ---------------------------------------------------------------- the losslessness lab
@dataclass
class _LabRun:
    """A session's running lab: its stop flag, and what its status says once stopped (kept up to date by the run,
    so that Stop answers at once with how far it got)."""

    lang: str
    stop: threading.Event = field(default_factory=threading.Event)
    stopped: str = ""
    superseded: bool = False   # a newer lab run of the session took over the views: this one ends without a word

    def __post_init__(self):
        self.stopped = self.stopped or vh.status_html(t("lab.stopped_none", self.lang), "warn")


_LAB_RUNS: dict[str, _LabRun] = {}
_LAB_LOCK = threading.Lock()


def lab_layout(lang: str) -> dict:
    c = {}
    gr.Markdown(t("lab.intro", lang))
    with gr.Row():
        c["lab_models"] = gr.Radio([(t("lab.tiny", lang), "tiny"), (t("lab.pair", lang), "pair")], value="tiny",
                                   label=t("lab.models", lang), elem_id="sv-lab-models")
        c["lab_variant"] = gr.Dropdown([(t(vc.LAB_KEYS[v], lang), v) for v in lab.VARIANTS], value="real",
                                       label=t("lab.variant", lang), elem_id="sv-lab-variant")
    # Plain boxes, no max_length, minimum or precision: Gradio would cut, clamp, round or raise its bare "Error";
    # `classroom_inputs.lab_settings` refuses instead, with a sentence.
    with gr.Row():
        c["lab_prompt"] = gr.Textbox(t("lab.default_prompt", lang), label=t("lab.prompt", lang),
                                     info=t("ui.prompt_info", lang, limit=APP_MAX_LAB_PROMPT_CHARS),
                                     elem_id="sv-lab-prompt")
        c["lab_temp"] = gr.Number(0.6, step=0.05, label=t("lab.temperature", lang), elem_id="sv-lab-temp",
                                  info=t("ui.range", lang, lo=classroom_inputs.LAB_MIN_TEMPERATURE,
                                         hi=int(classroom_inputs.LAB_MAX_TEMPERATURE)))
        c["lab_n"] = gr.Number(2000, step=100, label=t("lab.n", lang), elem_id="sv-lab-n",
                               info=t("ui.range", lang, lo=100, hi=lab.MAX_SAMPLES))
        c["lab_seed"] = gr.Number(0, step=1, label=t("ui.seed", lang), elem_id="sv-lab-seed")
    with gr.Row():
        c["lab_run"] = gr.Button(t("lab.run", lang), variant="primary", elem_id="sv-lab-run")
        c["lab_stop"] = gr.Button(t("lab.stop", lang), variant="stop", elem_id="sv-lab-stop")
    c["lab_stats"] = gr.HTML("", elem_id="sv-lab-stats")
    c["lab_plot"] = LocalePlot(lang, vc.lab_figure([], None, 0, "real", lang), show_label=False, elem_id="sv-lab-plot")
    c["lab_compare"] = gr.HTML("", elem_id="sv-lab-compare")
    return c


# The lab's inputs, as `lab_run` receives them (one {name: value}); the pair is the Generate form's.
LAB_FORM = ("lab_models", "lab_variant", "lab_prompt", "lab_temp", "lab_n", "lab_seed", "pair", "draft_id", "target_id")


def lab_wire(ctx: AppContext, c: dict) -> None:
    listen_form(c["lab_run"].click, lab_run, ctx, c, LAB_FORM, ["lab_plot", "lab_stats", "lab_compare"],
                        gpu=True, concurrency_limit=None, show_progress="minimal")
    # No `cancels`: the run hears the flag within one chunk of samples and says where it stopped (a cancelled run
    # could not), as the app's other Stops do; Stop's own answer says it at once, whatever the run is doing.
    listen(c["lab_stop"].click, lab_stop, ctx, c, [], ["lab_stats"], queue=False)


def _lab_start(request, lang: str) -> _LabRun:
    """A fresh run record for the session's lab run; its previous one is told to stop."""
    run = _LabRun(lang)
    with _LAB_LOCK:
        old = _LAB_RUNS.get(session_id(request))
        if old is not None:
            old.superseded = True
            old.stop.set()
        _LAB_RUNS[session_id(request)] = run
    return run


def _lab_end(request, run: _LabRun) -> None:
    with _LAB_LOCK:
        if _LAB_RUNS.get(session_id(request)) is run:
            del _LAB_RUNS[session_id(request)]


def lab_stop(ctx: AppContext, request: gr.Request) -> dict:
    """Stop the session's lab run; the status says so now, with the samples drawn so far (nothing to say, and
    nothing changed, when no lab run is going)."""
    with _LAB_LOCK:
        run = _LAB_RUNS.get(session_id(request))
    if run is None:
        return {}
    run.stop.set()
    return {"lab_stats": run.stopped}


def lab_settings(models, variant, temperature, n, seed, lang: str):
    """(models, variant, SamplingConfig, n, seed), checked (`classroom_inputs.lab_settings`); InputError in `lang`."""
    return classroom_inputs.lab_settings(models, variant, temperature, n, seed, lang)


def lab_run(ctx: AppContext, form: dict, request: gr.Request, progress=gr.Progress()):
    """Sample N first tokens through the chosen rule, redrawing the histogram and the fit as they come.

    `form`: the inputs named in LAB_FORM."""
    lang = ctx.lang
    run = _lab_start(request, lang)
    try:
        yield from _lab_run(ctx, form, run, progress)
    finally:
        _lab_end(request, run)


def _lab_run(ctx: AppContext, form: dict, run: _LabRun, progress):
    lang, stop = ctx.lang, run.stop
    try:
        models, variant, sampling, n, seed, text = classroom_inputs.lab_settings(
            form["lab_models"], form["lab_variant"], form["lab_temp"], form["lab_n"], form["lab_seed"], lang,
            prompt=form["lab_prompt"])
    except InputError as e:
        yield {"lab_stats": vh.status_html(str(e), "error")}
        return
    yield {"lab_stats": vh.status_html(t("lab.preparing", lang), "run"), "lab_compare": ""}
    try:
        if models == "tiny":
            d = lab.tiny_distributions(text, sampling)
        else:
            pair = worker.torch_thread.run(ctx.load, inputs.pair_ids(form["pair"], form["draft_id"],
                                                                     form["target_id"], lang), progress)
            ids = inputs.encode_prompt(pair, text, False, 1, 1, lang)
            d = worker.torch_thread.run(lab.distributions, pair.target, pair.draft, ids, sampling,
                                        lambda i: pair.decode([i]))
        note = vh.status_html(t("lab.t1_note", lang), "warn") if (variant == "untempered_q"
                                                                  and sampling.temperature == 1.0) else ""
        # The sampling and its tests work on whole-vocabulary tensors: on the models' thread (`worker`'s doc says why).
        samples, plot = lab.sample_counts(d, variant, n, seed, stop), {}
        while (counts := worker.torch_thread.run(next, samples, None)) is not None:
            f, bins = worker.torch_thread.run(lambda: (lab.fit(counts, d.p, seed), lab.top_bins(counts, d.p)))
            plot = {"lab_plot": vc.lab_figure(bins, d.texts, f.n, variant, lang)}
            run.stopped = vc.lab_stats_html(f, n, variant, f.n >= n, lang, stopped=True) + note
            if stop.is_set():   # Stop came while this chunk was drawn: the stopped status below counts it
                break
            yield {**plot, "lab_stats": vc.lab_stats_html(f, n, variant, f.n >= n, lang) + note}
        if stop.is_set():
            if not run.superseded:
                yield {**plot, "lab_stats": run.stopped}
            return
        # Why not just compare tokens: the same N drafts through the rule and through exact matching, on
        # this position's full p and q (the lab's temperature is never 0, so both tests are random).
        measured = worker.torch_thread.run(lab_compare.measure, d.p, d.q, n, seed)
        yield {"lab_compare": vc.lab_compare_html(measured, lang)}
    except Exception as e:  # noqa: BLE001 - keep serving; say what went wrong
        yield {"lab_stats": vh.status_html(t("lab.failed", lang, error=inputs.error_message(e, lang)), "error")}
