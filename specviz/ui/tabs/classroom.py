"""The "Classroom" tab: step through real rounds, the losslessness lab, the what-if calculator, prepared lessons.

Works on the shown run or on a prepared lesson (a recorded trace: no model
needed). The logic is in `specviz.classroom` (state, steps, lab, whatif, lessons),
the drawing in `specviz.viz.classroom`; here are the layout and small event
functions that render. The step position lives in `cls_cur` (a
`classroom.state.StepState`), the prediction score in `cls_score`, both per session.
"""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from ...classroom import lessons, whatif
from ...classroom.state import StepState
from ...classroom.steps import Redrawn, mass
from ...limits import APP_WHY_MAX_K, MAX_SEED
from ...strings import t
from ...viz import classroom as vc
from ...viz import html as vh
from .. import inputs
from ..events import listen
from ..inputs import InputError
from ..session import AppContext
from .classroom_lab import lab_layout, lab_settings, lab_wire  # noqa: F401 (lab_settings: tested here)

SEED = 1234            # the seed of re-drawn u, shown on the page
SPEEDS = (0.5, 5.0)    # seconds per decision while playing
SPEED = 1.5

# Keyboard: → next, ← previous, Space play/pause, whenever the step view is on screen and no field has focus.
KEYS_JS = """
if (!window.__svClassroomKeys) {
  window.__svClassroomKeys = true;
  document.addEventListener('keydown', (e) => {
    const el = e.target, tag = (el && el.tagName || '').toLowerCase();
    if (['input', 'textarea', 'select'].includes(tag) || (el && el.isContentEditable)) return;
    if (e.key === ' ' && tag === 'button') return;   // Space on a focused button presses that button
    const stage = document.getElementById('sv-cls-stage');
    if (!stage || stage.offsetParent === null || e.altKey || e.ctrlKey || e.metaKey) return;
    const id = {ArrowRight: 'sv-cls-next', ArrowLeft: 'sv-cls-prev', ' ': 'sv-cls-play'}[e.key];
    const button = id && document.getElementById(id);
    if (!button) return;
    e.preventDefault();
    button.click();
  });
}
"""
PRESENTER_JS = "(on) => { document.documentElement.classList.toggle('sv-presenter', !!on); return []; }"


# ---------------------------------------------------------------- layout
def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.classroom", lang), id="classroom"):
        gr.Markdown(t("cls.intro", lang))
        with gr.Row(equal_height=False):
            c["cls_lesson"] = gr.Dropdown(lesson_choices(lang), value=None, label=t("cls.lesson", lang),
                                          elem_id="sv-cls-lesson", scale=3)
            c["cls_open"] = gr.Button(t("cls.open", lang), elem_id="sv-cls-open", scale=1)
            c["cls_use_run"] = gr.Button(t("cls.use_run", lang), elem_id="sv-cls-use-run", scale=1)
            c["cls_presenter"] = gr.Checkbox(label=t("cls.presenter", lang), value=False, elem_id="sv-cls-presenter",
                                             scale=1)
        c["cls_info"] = gr.HTML("", elem_id="sv-cls-info")
        # Accordions rather than nested tabs: on a phone the three parts stack and any of them can stay open.
        with gr.Accordion(t("cls.tab_step", lang), open=True, elem_id="sv-cls-step"):
            c.update(step_layout(lang))
        with gr.Accordion(t("cls.tab_lab", lang), open=False, elem_id="sv-cls-lab"):
            c.update(lab_layout(lang))
        with gr.Accordion(t("cls.tab_whatif", lang), open=False, elem_id="sv-cls-whatif"):
            c.update(whatif_layout(lang))
    return c


def step_layout(lang: str) -> dict:
    c = {}
    with gr.Row(equal_height=False):
        c["cls_prev"] = gr.Button(t("cls.prev", lang), elem_id="sv-cls-prev", min_width=90)
        c["cls_play"] = gr.Button(t("cls.play", lang), elem_id="sv-cls-play", variant="primary", min_width=90)
        c["cls_next"] = gr.Button(t("cls.next", lang), elem_id="sv-cls-next", min_width=90)
        c["cls_speed"] = gr.Slider(*SPEEDS, value=SPEED, step=0.25, label=t("cls.speed", lang), elem_id="sv-cls-speed",
                                   min_width=160)
        c["cls_round"] = gr.Number(value=1, precision=0, minimum=1, label=t("cls.round", lang), elem_id="sv-cls-round",
                                   min_width=90)
        c["cls_go"] = gr.Button(t("cls.go", lang), elem_id="sv-cls-go", min_width=80)
    with gr.Row(equal_height=False):
        c["cls_seed"] = gr.Number(value=SEED, precision=0, minimum=0, label=t("cls.seed", lang), elem_id="sv-cls-seed",
                                  min_width=120)
        c["cls_redraw"] = gr.Button(t("cls.redraw", lang), elem_id="sv-cls-redraw", min_width=120)
        c["cls_recorded"] = gr.Button(t("cls.recorded", lang), elem_id="sv-cls-recorded", min_width=120)
        c["cls_predict"] = gr.Checkbox(label=t("cls.predict", lang), value=False, elem_id="sv-cls-predict")
    c["cls_stage"] = gr.HTML(vc.empty_stage_html(lang), elem_id="sv-cls-stage", js_on_load=KEYS_JS)
    with gr.Row(equal_height=False):
        c["cls_guess_accept"] = gr.Button(t("cls.guess_accept", lang), elem_id="sv-cls-guess-accept", min_width=110)
        c["cls_guess_reject"] = gr.Button(t("cls.guess_reject", lang), elem_id="sv-cls-guess-reject", min_width=110)
    c["cls_score_view"] = gr.HTML(vc.score_html(0, 0, lang), elem_id="sv-cls-score")
    c["cls_mass_text"] = gr.HTML("", elem_id="sv-cls-mass-text")
    c["cls_mass"] = gr.Plot(show_label=False, visible=False, elem_id="sv-cls-mass")
    return c


def whatif_layout(lang: str) -> dict:
    c = {}
    gr.Markdown(t("whatif.intro", lang))
    with gr.Row():
        c["wi_alpha"] = gr.Slider(0.0, 1.0, value=0.78, step=0.01, label=t("whatif.alpha", lang), elem_id="sv-wi-alpha")
        c["wi_k"] = gr.Slider(1, whatif.K_MAX, value=5, step=1, label=t("whatif.k", lang), elem_id="sv-wi-k")
        c["wi_c"] = gr.Slider(0.0, whatif.C_MAX, value=round(8 / 70, 3), step=0.001, label=t("whatif.c", lang),
                              elem_id="sv-wi-c")
    c["wi_preset"] = gr.Button(t("whatif.preset", lang), elem_id="sv-wi-preset")
    w = whatif.worked_example()
    first = whatif.curves(w.alpha, w.c)
    c["wi_text"] = gr.HTML(vc.whatif_html(w.alpha, w.k, w.c, first, None, w, lang), elem_id="sv-wi-text")
    c["wi_plot"] = gr.Plot(vc.whatif_figure(first, w.k, None, lang), show_label=False, elem_id="sv-wi-plot")
    gr.Markdown(t("why.intro", lang))
    with gr.Row(equal_height=False):
        c["why_k"] = gr.Slider(1, APP_WHY_MAX_K, value=4, step=1, label=t("why.k", lang), elem_id="sv-why-k")
        c["why_btn"] = gr.Button(t("why.run", lang), elem_id="sv-why-run")
    c["why_text"] = gr.HTML("", elem_id="sv-why-text")
    c["why_plot"] = gr.Plot(vc.premise_figure(None, lang), show_label=False, elem_id="sv-why-plot")
    return c


def lesson_choices(lang: str) -> list[tuple[str, str]]:
    try:
        return [(lesson.text("title", lang), lesson.name) for lesson in lessons.index()]
    except lessons.LessonError:
        return []


# ---------------------------------------------------------------- wiring
STEP_VIEWS = ["cls_stage", "cls_mass", "cls_mass_text", "cls_round", "cls_cur"]
STEP_INPUTS = ["cls_trace", "cls_cur", "cls_seed", "cls_predict"]
OPENED = STEP_VIEWS + ["cls_trace", "cls_info", "cls_score", "cls_score_view", "cls_timer", "cls_play"]
LOAD_VIEWS = OPENED + ["status", "tabs", "cls_lesson"]     # what on_load (the URL parameters) may set


def wire(ctx: AppContext, c: dict, concurrency_limit: int = 1) -> None:
    # The per-session state and the play timer are made here, at the page's top level: made beside the tab
    # (children of the page's gr.Tabs), Gradio 6.31 draws the tab's button twice.
    c.update(cls_trace=gr.State(None), cls_cur=gr.State(StepState()), cls_score=gr.State({"right": 0, "total": 0}),
             cls_costs=gr.State(None), cls_timer=gr.Timer(1.5, active=False))
    listen(c["cls_open"].click, open_lesson, ctx, c, ["cls_lesson"], OPENED)
    listen(c["cls_use_run"].click, use_run, ctx, c, ["trace"], OPENED)
    for button, delta in ((c["cls_next"], 1), (c["cls_prev"], -1)):
        listen(button.click, next_stop if delta > 0 else prev_stop, ctx, c, STEP_INPUTS, STEP_VIEWS, queue=False)
    listen(c["cls_timer"].tick, tick, ctx, c, STEP_INPUTS, STEP_VIEWS + ["cls_timer", "cls_play"], queue=False)
    listen(c["cls_play"].click, play, ctx, c, STEP_INPUTS + ["cls_speed"], STEP_VIEWS + ["cls_timer", "cls_play"],
           queue=False)
    listen(c["cls_speed"].change, speed, ctx, c, ["cls_speed"], ["cls_timer", "cls_info"], queue=False)
    listen(c["cls_go"].click, go_round, ctx, c, STEP_INPUTS + ["cls_round"], STEP_VIEWS + ["cls_info"], queue=False)
    listen(c["cls_redraw"].click, redraw_u, ctx, c, STEP_INPUTS, STEP_VIEWS + ["cls_info"], queue=False)
    listen(c["cls_recorded"].click, recorded_u, ctx, c, STEP_INPUTS, STEP_VIEWS, queue=False)
    listen(c["cls_predict"].change, show, ctx, c, STEP_INPUTS, STEP_VIEWS, queue=False)
    for button, guess in ((c["cls_guess_accept"], True), (c["cls_guess_reject"], False)):
        listen(button.click, predict_accept if guess else predict_reject, ctx, c, STEP_INPUTS + ["cls_score"],
               STEP_VIEWS + ["cls_score", "cls_score_view", "cls_info"], queue=False)
    c["cls_presenter"].change(None, [c["cls_presenter"]], None, js=PRESENTER_JS)
    lab_wire(ctx, c)
    wi_inputs = ["wi_alpha", "wi_k", "wi_c", "cls_trace", "trace", "cls_costs"]
    for slider in ("wi_alpha", "wi_k", "wi_c"):
        listen(c[slider].change, what_if, ctx, c, wi_inputs, ["wi_plot", "wi_text"], queue=False)
    listen(c["wi_preset"].click, preset, ctx, c, wi_inputs[3:], ["wi_alpha", "wi_k", "wi_c", "wi_plot", "wi_text"],
           queue=False)
    listen(c["why_btn"].click, why_fast, ctx, c, ["why_k", "prompt", "pair", "draft_id", "target_id"],
           ["why_plot", "why_text", "cls_costs"], gpu=True, concurrency_limit=concurrency_limit, concurrency_id="decode")


# ---------------------------------------------------------------- the step view
def render(ctx: AppContext, trace, state: StepState, seed, predict) -> dict:
    """The stage, the mass picture and the round box for the state (re-drawn u applied)."""
    lang = ctx.lang
    if not trace or not trace.rounds:
        return {"cls_stage": vc.empty_stage_html(lang), "cls_mass_text": "", "cls_round": gr.update(),
                "cls_mass": gr.update(visible=False), "cls_cur": state}
    seed = _seed(seed)
    v = state.view(trace.rounds, seed, predict)
    rnd = v.round
    note = redraw_note(v.redrawn, state.draw, seed, trace.greedy, lang)
    stage = vc.stage_html(rnd, len(trace.rounds), v.pos, trace.greedy, hidden=v.hidden,
                          show_summary=not predict or v.last, note=note, lang=lang)
    out = {"cls_stage": stage, "cls_round": state.round + 1, "cls_cur": replace(state, stop=v.pos),
           "cls_mass_text": "", "cls_mass": gr.update(visible=False)}
    if v.shows_rejection and rnd.rejected_at is not None and not trace.greedy:
        # A re-draw that moved the rejection has only an estimated residual (the decoder kept the recorded one).
        m = mass(rnd.drafted[rnd.rejected_at], rnd.correction, exact_r=not v.redrawn.changed)
        title = t("cls.mass_title", lang, round=rnd.index + 1, pos=rnd.rejected_at + 1)
        out["cls_mass"] = gr.update(value=vc.mass_figure(m, title, lang), visible=True)
        out["cls_mass_text"] = vc.mass_text_html(m, rnd, title, lang)
    return out


def redraw_note(r: Redrawn, draw: int, seed: int, greedy: bool, lang: str) -> str:
    """What the page says about a re-drawn round ("" for the recorded u)."""
    if draw <= 0:
        return ""
    notes = [t("cls.redrawn", lang, draw=draw, seed=seed)]
    if greedy:
        notes.append(t("cls.redraw_greedy", lang))
    elif r.changed:
        notes.append(t("cls.redraw_changed", lang))
        if r.approximate:
            notes.append(t("cls.redraw_approx", lang))
        if r.bonus_unknown:
            notes.append(t("cls.redraw_bonus_unknown", lang))
    else:
        notes.append(t("cls.redraw_same", lang))
    return " ".join(notes)


def _seed(seed) -> int:
    """The seed of re-drawn u; a bad one draws from the default (redraw_u says why)."""
    try:
        return inputs.whole_number(seed, "cls.seed", 0, MAX_SEED)
    except InputError:
        return SEED


def _rounds(trace) -> list:
    return list(trace.rounds) if trace else []


def next_stop(ctx: AppContext, trace, state: StepState, seed, predict):
    return render(ctx, trace, state.next(_rounds(trace), _seed(seed), predict), seed, predict)


def prev_stop(ctx: AppContext, trace, state: StepState, seed, predict):
    return render(ctx, trace, state.prev(_rounds(trace), _seed(seed)), seed, predict)


def show(ctx: AppContext, trace, state: StepState, seed, predict):
    return render(ctx, trace, state, seed, predict)


def _play_updates(ctx, playing: bool) -> dict:
    return {"cls_timer": gr.Timer(active=playing), "cls_play": gr.update(value=t("cls.pause" if playing else "cls.play",
                                                                                 ctx.lang))}


def tick(ctx: AppContext, trace, state: StepState, seed, predict):
    state = state.tick(_rounds(trace), _seed(seed))
    out = render(ctx, trace, state, seed, predict)
    return out if state.playing else {**out, **_play_updates(ctx, False)}


def play(ctx: AppContext, trace, state: StepState, seed, predict, speed_s):
    state = state.play(_rounds(trace))
    out = render(ctx, trace, state, seed, predict)
    out.update(_play_updates(ctx, state.playing))
    if state.playing:
        out["cls_timer"] = gr.Timer(value=_speed(speed_s), active=True)
    return out


def _speed(value) -> float:
    """Seconds per decision; a value past either end of SPEEDS plays at that end, an unreadable one at the default."""
    try:
        v = inputs.finite_number(value, "cls.speed", *SPEEDS)
    except InputError:
        return SPEED
    return max(SPEEDS[0], min(SPEEDS[1], v))


def speed(ctx: AppContext, value):
    v = _speed(value)
    info = "" if v == value else vh.status_html(t("cls.speed_clamped", ctx.lang, value=str(value)[:20],
                                                 lo=SPEEDS[0], hi=SPEEDS[1]), "warn")
    return {"cls_timer": gr.Timer(value=v), "cls_info": info}


def go_round(ctx: AppContext, trace, state: StepState, seed, predict, number):
    n = len(trace.rounds) if trace else 0
    try:
        r = inputs.whole_number(number, "cls.round", 1, max(1, n), ctx.lang)
    except InputError as e:
        return {**render(ctx, trace, state, seed, predict), "cls_info": vh.status_html(str(e), "error")}
    return {**render(ctx, trace, state.go(r - 1), seed, predict), "cls_info": ""}


def redraw_u(ctx: AppContext, trace, state: StepState, seed, predict):
    info = ""
    try:
        inputs.whole_number(seed, "cls.seed", 0, MAX_SEED, ctx.lang)
    except InputError as e:
        info = vh.status_html(str(e), "error")
    return {**render(ctx, trace, state.redraw(), seed, predict), "cls_info": info}


def recorded_u(ctx: AppContext, trace, state: StepState, seed, predict):
    return render(ctx, trace, state.recorded(), seed, predict)


def _predict(ctx: AppContext, trace, state: StepState, seed, predict, score, guess: bool):
    state, right = state.guess(_rounds(trace), _seed(seed), guess)
    if right is None:
        return {**render(ctx, trace, state, seed, predict), "cls_score": score, "cls_score_view": gr.update(),
                "cls_info": vh.status_html(t("cls.predict_where", ctx.lang), "info")}
    score = {"right": score["right"] + right, "total": score["total"] + 1}
    return {**render(ctx, trace, state, seed, True), "cls_score": score, "cls_info": "",
            "cls_score_view": vc.score_html(score["right"], score["total"], ctx.lang, right)}


def predict_accept(ctx: AppContext, trace, state: StepState, seed, predict, score):
    return _predict(ctx, trace, state, seed, predict, score, True)


def predict_reject(ctx: AppContext, trace, state: StepState, seed, predict, score):
    return _predict(ctx, trace, state, seed, predict, score, False)


# ---------------------------------------------------------------- lessons, the shown run, the URL
def _opened(ctx: AppContext, trace, start_round: int, info: str) -> dict:
    out = render(ctx, trace, StepState.opened(start_round), SEED, False)
    out.update(cls_trace=trace, cls_info=info, cls_score={"right": 0, "total": 0},
               cls_score_view=vc.score_html(0, 0, ctx.lang), **_play_updates(ctx, False))
    return out


def open_lesson(ctx: AppContext, name):
    lang = ctx.lang
    if not name:
        return {"cls_info": vh.status_html(t("cls.lesson_choose", lang), "warn")}
    try:
        lesson, trace = lessons.load(name)
    except lessons.LessonError as e:
        return {"cls_info": vh.status_html(t(e.key, lang, **e.values), "error")}
    info = vh.status_html(t("cls.lesson_opened", lang, title=lesson.text("title", lang),
                            description=lesson.text("description", lang)), "ok")
    return _opened(ctx, trace, min(lesson.start, len(trace.rounds)) - 1, info)


def use_run(ctx: AppContext, trace):
    if not trace or not getattr(trace, "rounds", None):
        return {"cls_info": vh.status_html(t("cls.no_run", ctx.lang), "warn")}
    return _opened(ctx, trace, 0, vh.status_html(t("cls.run_opened", ctx.lang, n=len(trace.rounds)), "ok"))


def on_load(ctx: AppContext, request: gr.Request):
    """URL parameters: ?lesson=name opens a lesson in the classroom; an unknown ?lang= is reported."""
    params = getattr(request, "query_params", None) or {}
    out: dict = {}
    code = str(params.get("lang", "") or "")[:20]
    if code and code.lower()[:2] not in _languages():
        out["status"] = vh.status_html(t("lang.unknown", ctx.lang, code=code), "warn")
    name = str(params.get("lesson", "") or "")[:80]
    if name:
        opened = open_lesson(ctx, name)
        out.update(opened, tabs=gr.update(selected="classroom"))   # the lesson, or why it did not open
        if "cls_trace" in opened:
            out["cls_lesson"] = name
    return out


def _languages():
    from ...strings import LANGUAGES

    return LANGUAGES


# ---------------------------------------------------------------- what-if and why it is fast
def what_if(ctx: AppContext, alpha, k, c, cls_trace, trace, costs):
    lang = ctx.lang
    try:
        a = inputs.number_between(alpha, "whatif.alpha_name", 0.0, 1.0, lang)
        kk = inputs.whole_number(k, "whatif.k_name", 1, whatif.K_MAX, lang)
        cc = inputs.number_between(c, "whatif.c_name", 0.0, whatif.C_MAX, lang)
    except InputError as e:
        return {"wi_plot": gr.update(), "wi_text": vh.status_html(str(e), "error")}
    shown = cls_trace if cls_trace and cls_trace.rounds else trace
    curves = whatif.curves(a, cc)
    measured = whatif.measured_point(list(shown.rounds), shown.k, (costs or {}).get("c")) if shown else None
    return {"wi_plot": vc.whatif_figure(curves, kk, measured, lang),
            "wi_text": vc.whatif_html(a, kk, cc, curves, measured, whatif.worked_example(), lang)}


def preset(ctx: AppContext, cls_trace, trace, costs):
    """The seed text's worked example in the sliders, and its curves (a slider already there fires no change)."""
    w = whatif.WORKED
    values = {"wi_alpha": w["alpha"], "wi_k": w["k"], "wi_c": round(w["c"], 3)}
    return {**values, **what_if(ctx, *values.values(), cls_trace, trace, costs)}


def why_fast(ctx: AppContext, k, prompt, choice, draft_id, target_id, progress=gr.Progress()):
    """Time the target's forward over 1..K+1 positions against the draft's one-token forward."""
    from ...bench.costs import forward_costs   # lazily: the bench pulls in more than the page needs at start-up

    lang = ctx.lang
    try:
        kk = inputs.whole_number(k, "why.k_name", 1, APP_WHY_MAX_K, lang)
        pair = ctx.load(inputs.pair_ids(choice, draft_id, target_id, lang), progress)
        ids = inputs.encode_prompt(pair, inputs.check_prompt(prompt, lang), False, 1, kk, lang)
        costs = forward_costs(pair.target, pair.draft, ids, ks=range(0, kk + 1), repeats=3)
    except Exception as e:  # noqa: BLE001 - keep serving; say what went wrong
        return {"why_plot": gr.update(), "why_text": vh.status_html(t("why.failed", lang, error=inputs.error_message(e, lang)),
                                                                   "error"), "cls_costs": gr.update()}
    pr = whatif.premise({k_ + 1: s for k_, s in costs.target_k.items()}, costs.draft_1)
    device = f"{pair.device} {str(pair.dtype).replace('torch.', '')}"
    return {"why_plot": vc.premise_figure(pr, lang), "why_text": vc.premise_html(pr, device, lang),
            "cls_costs": {"c": costs.c}}
