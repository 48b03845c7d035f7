"""The "Classroom" tab: step through real rounds, the losslessness lab, the what-if calculator, prepared lessons.

Works on the shown run or on a prepared lesson (a recorded trace: no model
needed). The logic is in `specviz.classroom` (state, steps, lab, whatif, lessons),
the drawing in `specviz.viz.classroom`; here are the layout and small event
functions that render (one stop's view, a chain's round and a tree's alike, is
`classroom_stage`). The step position lives in `cls_cur` (a
`classroom.state.StepState`), the prediction score in `cls_score`, both per session.
"""
from __future__ import annotations

import gradio as gr

from ...classroom import lessons
from ...classroom.state import StepState
from ...strings import LANGUAGES, t
from ...viz import classroom as vc
from ...viz import html as vh
from .. import classroom_inputs, inputs
from ..events import listen
from ..inputs import InputError
from ..plots import LocalePlot
from ..session import AppContext
from ..sliders import Slider
from .classroom_js import KEYS_JS, PRESENTER_JS, SCROLL_TO_LESSON_JS
from .classroom_stage import step_updates
from .classroom_lab import lab_layout, lab_settings, lab_wire  # noqa: F401 (lab_settings: tested here)
from .classroom_race import race_layout, race_wire
from .classroom_run import VIEWS as RUN_VIEWS, run_layout, run_updates
from .classroom_whatif import preset, what_if, whatif_layout, whatif_wire  # noqa: F401 (what_if, preset: tested here)

SEED = 1234            # the seed of re-drawn u, shown on the page
SPEEDS = (0.5, 5.0)    # seconds per decision while playing
SPEED = 1.5

# ---------------------------------------------------------------- layout
def tab(lang: str) -> dict:
    c = {}
    with gr.Tab(t("tab.classroom", lang), id="classroom"):
        gr.Markdown(t("cls.intro", lang), elem_id="sv-cls-intro")
        with gr.Row(equal_height=False, elem_id="sv-cls-top"):
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
        with gr.Accordion(t("cls.tab_run", lang), open=False, elem_id="sv-cls-run"):
            c.update(run_layout(lang))
        with gr.Accordion(t("cls.tab_lab", lang), open=False, elem_id="sv-cls-lab"):
            c.update(lab_layout(lang))
        with gr.Accordion(t("cls.tab_whatif", lang), open=False, elem_id="sv-cls-whatif"):
            c.update(whatif_layout(lang))
        with gr.Accordion(t("cls.tab_race", lang), open=False, elem_id="sv-cls-race"):
            c.update(race_layout(lang))
    return c


def step_layout(lang: str) -> dict:
    c = {}
    with gr.Row(equal_height=False, elem_id="sv-cls-controls"):
        c["cls_prev"] = gr.Button(t("cls.prev", lang), elem_id="sv-cls-prev", min_width=90)
        c["cls_play"] = gr.Button(t("cls.play", lang), elem_id="sv-cls-play", variant="primary", min_width=90)
        c["cls_next"] = gr.Button(t("cls.next", lang), elem_id="sv-cls-next", min_width=90)
        c["cls_speed"] = Slider(*SPEEDS, value=SPEED, step=0.25, label=t("cls.speed", lang), elem_id="sv-cls-speed",
                                   min_width=160)
        # No precision or minimum: Gradio rounded 2.5 to 2 and raised a bare "Error" for 0;
        # `go_round` refuses both with a sentence.
        c["cls_round"] = gr.Number(value=1, step=1, label=t("cls.round", lang), elem_id="sv-cls-round",
                                   min_width=90)
        c["cls_go"] = gr.Button(t("cls.go", lang), elem_id="sv-cls-go", min_width=80)
    with gr.Row(equal_height=False, elem_id="sv-cls-tools"):
        c["cls_seed"] = gr.Number(value=SEED, step=1, label=t("cls.seed", lang), elem_id="sv-cls-seed",
                                  min_width=120)
        c["cls_redraw"] = gr.Button(t("cls.redraw", lang), elem_id="sv-cls-redraw", min_width=120)
        c["cls_recorded"] = gr.Button(t("cls.recorded", lang), elem_id="sv-cls-recorded", min_width=120)
        c["cls_predict"] = gr.Checkbox(label=t("cls.predict", lang), value=False, elem_id="sv-cls-predict")
    c["cls_stage"] = gr.HTML(vc.empty_stage_html(lang), elem_id="sv-cls-stage", js_on_load=KEYS_JS)
    # The guesses and their score only while "Predict, then reveal" is on (guess_visibility).
    with gr.Column(visible=False, elem_id="sv-cls-guess") as c["cls_guess_box"]:
        # The guess buttons only where a guess counts (a test whose u is hidden; `render` decides), the score always.
        with gr.Row(equal_height=False, visible=False, elem_id="sv-cls-guess-row") as c["cls_guess_row"]:
            c["cls_guess_accept"] = gr.Button(t("cls.guess_accept", lang), elem_id="sv-cls-guess-accept",
                                              min_width=110)
            c["cls_guess_reject"] = gr.Button(t("cls.guess_reject", lang), elem_id="sv-cls-guess-reject",
                                              min_width=110)
        c["cls_score_view"] = gr.HTML(vc.score_html(0, 0, lang), elem_id="sv-cls-score")
    c["cls_mass_text"] = gr.HTML("", elem_id="sv-cls-mass-text")
    c["cls_mass"] = LocalePlot(lang, show_label=False, visible=False, elem_id="sv-cls-mass")
    return c


def lesson_choices(lang: str) -> list[tuple[str, str]]:
    try:
        return [(lesson.text("title", lang), lesson.name) for lesson in lessons.index()]
    except lessons.LessonError:
        return []


# ---------------------------------------------------------------- wiring
STEP_VIEWS = ["cls_stage", "cls_mass", "cls_mass_text", "cls_round", "cls_cur", "cls_guess_row"]
STEP_INPUTS = ["cls_trace", "cls_cur", "cls_seed", "cls_predict"]
OPENED = STEP_VIEWS + ["cls_trace", "cls_info", "cls_score", "cls_score_view", "cls_timer", "cls_play", *RUN_VIEWS]
LOAD_VIEWS = OPENED + ["status", "tabs", "cls_lesson"]     # what on_load (the URL parameters) may set


def wire_load(ctx: AppContext, c: dict, demo: gr.Blocks) -> None:
    """The page's URL parameters (on_load), then the lesson scrolled into view when a link named one."""
    listen(demo.load, on_load, ctx, c, [], LOAD_VIEWS).then(None, js=SCROLL_TO_LESSON_JS)


def wire(ctx: AppContext, c: dict, concurrency_limit: int = 1) -> None:
    # The per-session state and the play timer are made here, at the page's top level: made beside the tab
    # (children of the page's gr.Tabs), Gradio 6.31 draws the tab's button twice.
    c.update(cls_trace=gr.State(None), cls_cur=gr.State(StepState()), cls_score=gr.State({"right": 0, "total": 0}),
             cls_costs=gr.State(None), cls_timer=gr.Timer(1.5, active=False))
    listen(c["cls_open"].click, open_lesson, ctx, c, ["cls_lesson"], OPENED)
    listen(c["cls_use_run"].click, use_run, ctx, c, ["trace", "target_token_s"], OPENED)
    # Next and Prev queued, one at a time: Gradio drops a press made while its event is pending (a teacher's quick
    # double press lost one), and two run side by side would start from the same stop; each is ms of drawing.
    for button, delta in ((c["cls_next"], 1), (c["cls_prev"], -1)):
        listen(button.click, next_stop if delta > 0 else prev_stop, ctx, c, STEP_INPUTS, STEP_VIEWS,
               trigger_mode="multiple", concurrency_limit=1, concurrency_id="cls_step")
    listen(c["cls_timer"].tick, tick, ctx, c, STEP_INPUTS, STEP_VIEWS + ["cls_timer", "cls_play"], queue=False)
    listen(c["cls_play"].click, play, ctx, c, STEP_INPUTS + ["cls_speed"], STEP_VIEWS + ["cls_timer", "cls_play"],
           queue=False)
    listen(c["cls_speed"].change, speed, ctx, c, ["cls_speed"], ["cls_timer", "cls_info"], queue=False)
    listen(c["cls_go"].click, go_round, ctx, c, STEP_INPUTS + ["cls_round"], STEP_VIEWS + ["cls_info"], queue=False)
    listen(c["cls_redraw"].click, redraw_u, ctx, c, STEP_INPUTS, STEP_VIEWS + ["cls_info"], queue=False)
    listen(c["cls_recorded"].click, recorded_u, ctx, c, STEP_INPUTS, STEP_VIEWS, queue=False)
    listen(c["cls_predict"].change, show, ctx, c, STEP_INPUTS, STEP_VIEWS, queue=False)
    listen(c["cls_predict"].change, guess_visibility, ctx, c, ["cls_predict"], ["cls_guess_box"], queue=False)
    for button, guess in ((c["cls_guess_accept"], True), (c["cls_guess_reject"], False)):
        listen(button.click, predict_accept if guess else predict_reject, ctx, c, STEP_INPUTS + ["cls_score"],
               STEP_VIEWS + ["cls_score", "cls_score_view", "cls_info"], queue=False)
    c["cls_presenter"].change(None, [c["cls_presenter"]], None, js=PRESENTER_JS)
    lab_wire(ctx, c)
    whatif_wire(ctx, c, concurrency_limit)
    race_wire(ctx, c, concurrency_limit)


# ---------------------------------------------------------------- the step view
def render(ctx: AppContext, trace, state: StepState, seed, predict) -> dict:
    """The stage, the mass picture and the round box for the state (re-drawn u applied), and the guess buttons
    shown only where a guess counts: at a test whose u is still hidden (they showed where clicking
    did nothing)."""
    if not trace or not trace.rounds:
        return {"cls_stage": vc.empty_stage_html(ctx.lang), "cls_mass_text": "", "cls_round": gr.update(),
                "cls_mass": gr.update(visible=False), "cls_cur": state, "cls_guess_row": gr.update(visible=False)}
    v = state.view(trace.rounds, _seed(seed), predict)
    return {**step_updates(ctx, trace, state, v, _seed(seed)), "cls_guess_row": gr.update(visible=v.hidden)}


def _seed(seed) -> int:
    """The seed of re-drawn u; a bad one draws from the default (redraw_u refuses it and draws nothing)."""
    try:
        return classroom_inputs.classroom_checked({"cls_seed": seed}, ("cls_seed",))["cls_seed"]
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


def guess_visibility(ctx: AppContext, predict):
    """The guess buttons and the score exist only for "Predict, then reveal"."""
    return {"cls_guess_box": gr.update(visible=bool(predict))}


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
    """The play timer at the speed typed; a speed past either end plays at that end and one that is no number at the
    default, each said in the page's language (the slider passes what was typed: `sliders.Slider`)."""
    try:
        typed = inputs.finite_number(value, "cls.speed", *SPEEDS, lang=ctx.lang)
    except InputError as e:
        return {"cls_timer": gr.Timer(value=SPEED), "cls_info": vh.status_html(str(e), "error")}
    v = _speed(typed)
    if v == typed and v in SPEEDS:
        # At an end exactly: the browser puts a typed 0 back to 0.5 on leaving the box and sends that too, right after
        # the 0; the sentence the 0 got ("plays at 0.5") stays true and stays (clearing it lost it, 2 runs in 5)
        return {"cls_timer": gr.Timer(value=v), "cls_info": gr.skip()}
    info = "" if v == typed else vh.status_html(t("cls.speed_clamped", ctx.lang, value=inputs.shown(typed), lo=SPEEDS[0],
                                                  hi=SPEEDS[1]), "warn")
    return {"cls_timer": gr.Timer(value=v), "cls_info": info}


def _refused(ctx: AppContext, trace, state: StepState, seed, predict, e: InputError) -> dict:
    """The step view as it was, the box's value left for the user to correct, and why it was refused."""
    out = render(ctx, trace, state, seed, predict)
    out.pop("cls_round", None)
    return {**out, "cls_info": vh.status_html(str(e), "error")}


def go_round(ctx: AppContext, trace, state: StepState, seed, predict, number):
    try:
        r = classroom_inputs.classroom_round(number, len(trace.rounds) if trace else 0, ctx.lang)
    except InputError as e:
        return _refused(ctx, trace, state, seed, predict, e)
    return {**render(ctx, trace, state.go(r - 1), seed, predict), "cls_info": ""}


def redraw_u(ctx: AppContext, trace, state: StepState, seed, predict):
    """The next re-draw of u from the seed; a bad seed is refused and nothing is drawn."""
    try:
        classroom_inputs.classroom_checked({"cls_seed": seed}, ("cls_seed",), ctx.lang)
    except InputError as e:
        return _refused(ctx, trace, state, seed, predict, e)
    return {**render(ctx, trace, state.redraw(), seed, predict), "cls_info": ""}


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
def _opened(ctx: AppContext, trace, state: StepState, info: str, target_token_s: float | None = None) -> dict:
    out = render(ctx, trace, state, SEED, False)
    out.update(cls_trace=trace, cls_info=info, cls_score={"right": 0, "total": 0},
               cls_score_view=vc.score_html(0, 0, ctx.lang), **_play_updates(ctx, False),
               **run_updates(trace, ctx.lang, target_token_s))
    return out


def open_lesson(ctx: AppContext, name, step=None):
    """The lesson at its own opening step, or at decision `step` (1-based, a link's ?step=N) when given."""
    lang = ctx.lang
    if not name:
        return {"cls_info": vh.status_html(t("cls.lesson_choose", lang), "warn")}
    try:
        lesson, trace = lessons.load(name)
    except lessons.LessonError as e:
        return {"cls_info": vh.status_html(t(e.key, lang, **e.values), "error")}
    info = vh.status_html(t("cls.lesson_opened", lang, title=lesson.text("title", lang),
                            description=lesson.text("description", lang)), "ok")
    state = lesson.opening(trace.rounds)
    if step not in (None, ""):
        total = _steps(trace)
        try:
            state = StepState.at_step(trace.rounds, inputs.whole_number(str(step)[:20], "cls.step_name", 1, total,
                                                                         lang))
        except InputError as e:   # the lesson still opens, at its own step, and the page says why
            info = vh.status_html(str(e), "warn")
    return _opened(ctx, trace, state, info)


def _steps(trace) -> int:
    """How many decisions the trace's recorded rounds hold (the last step a link can name)."""
    return StepState.at_step(trace.rounds, 10**9).step_number(trace.rounds)


def use_run(ctx: AppContext, trace, target_token_s=None):
    """The shown run in the classroom (`target_token_s`: its target alone's seconds per token, when it ran)."""
    if not trace or not getattr(trace, "rounds", None):
        return {"cls_info": vh.status_html(t("cls.no_run", ctx.lang), "warn")}
    return _opened(ctx, trace, StepState(), vh.status_html(t("cls.run_opened", ctx.lang, n=len(trace.rounds)), "ok"),
                   target_token_s)


def on_load(ctx: AppContext, request: gr.Request):
    """URL parameters: ?lesson=name[&step=N] opens a lesson in the classroom; an unknown ?lang= is reported."""
    params = getattr(request, "query_params", None) or {}
    out: dict = {}
    code = str(params.get("lang", "") or "")[:20]
    if code and code.lower()[:2] not in _languages():
        out["status"] = vh.status_html(t("lang.unknown", ctx.lang, code=code), "warn")
    name = str(params.get("lesson", "") or "")[:80]
    if name:
        opened = open_lesson(ctx, name, params.get("step"))
        out.update(opened, tabs=gr.update(selected="classroom"))   # the lesson, or why it did not open
        if "cls_trace" in opened:
            out["cls_lesson"] = name
    return out


def _languages():
    return LANGUAGES
