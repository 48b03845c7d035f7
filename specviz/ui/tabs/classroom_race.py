"""The classroom's drafter race: the target alone, then four drafters on the same prompt, each lane shown as it ends.

The lanes run one by one in a worker thread (`worker.call`) on the pair chosen on the left, in the decode queue's
slot (a race never overlaps a run or a sweep, so their times stay honest); `waiting.wait_for` says which lane runs
and for how long, and hears Stop (this section's button, the page's, or a newer run), which ends the lane at its
next round. The race itself is `specviz.classroom.race`, its drawing `specviz.viz.race`.
"""
from __future__ import annotations

import gradio as gr

from ...classroom import race as cr
from ...limits import APP_MAX_RACE_PROMPT_CHARS, APP_MAX_RACE_TOKENS
from ...runtime.zerogpu import on_zero_gpu
from ...strings import t
from ...viz import html as vh
from ...viz import race as vr
from .. import classroom_inputs, inputs, waiting, worker
from ..classroom_inputs import RACE_FORM
from ..events import listen, listen_form
from ..gpu_calls import quota_html
from ..session import AppContext, stop_run
from ..worker import Failed, Result, Stopped

DEFAULT_TOKENS = 48
DEFAULT_K = 8


def race_layout(lang: str) -> dict:
    c = {}
    gr.Markdown(t("race.intro", lang))
    # Plain boxes (no max_length, minimum or precision): `classroom_inputs.race_settings` refuses with a sentence.
    c["race_prompt"] = gr.Textbox(t("race.default_prompt", lang), lines=6, label=t("race.prompt", lang),
                                  info=t("ui.prompt_info", lang, limit=APP_MAX_RACE_PROMPT_CHARS),
                                  elem_id="sv-race-prompt")
    with gr.Row():
        c["race_tokens"] = gr.Number(DEFAULT_TOKENS, step=1, label=t("race.tokens", lang), elem_id="sv-race-tokens",
                                     info=t("ui.range", lang, lo=1, hi=APP_MAX_RACE_TOKENS), min_width=140)
        c["race_k"] = gr.Number(DEFAULT_K, step=1, label=t("race.k", lang), elem_id="sv-race-k",
                                info=t("ui.range", lang, lo=1, hi=cr.MAX_RACE_K), min_width=140)
    with gr.Row():
        c["race_run"] = gr.Button(t("race.run", lang), variant="primary", elem_id="sv-race-run", min_width=140)
        c["race_stop"] = gr.Button(t("race.stop", lang), variant="stop", elem_id="sv-race-stop", min_width=140)
    if on_zero_gpu():   # what the race will ask of a visitor's daily GPU quota, said before it runs
        c["race_quota"] = gr.HTML(quota_html({"race_tokens": DEFAULT_TOKENS, "race_k": DEFAULT_K}, lang),
                                  elem_id="sv-race-quota")
    c["race_status"] = gr.HTML("", elem_id="sv-race-status")
    c["race_view"] = gr.HTML("", elem_id="sv-race-view")
    gr.Markdown(t("race.lesson_note", lang))
    return c


def race_wire(ctx: AppContext, c: dict, concurrency_limit: int) -> None:
    listen_form(c["race_run"].click, race_submitted, ctx, c, RACE_FORM, ["race_status"], queue=False,
                show_progress="hidden")
    listen_form(c["race_run"].click, race, ctx, c, RACE_FORM, ["race_status", "race_view"], gpu=True,
                concurrency_limit=concurrency_limit, concurrency_id="decode", show_progress="minimal")
    listen(c["race_stop"].click, race_stop, ctx, c, [], ["race_status"], queue=False, show_progress="hidden")
    if "race_quota" in c:   # the note follows the fields (and the step measured so far) before each race
        for trigger in (c["race_tokens"].change, c["race_k"].change, c["race_run"].click):
            listen_form(trigger, race_quota, ctx, c, RACE_FORM, ["race_quota"], queue=False, show_progress="hidden")


def race_quota(ctx: AppContext, form: dict) -> dict:
    return {"race_quota": quota_html(form, ctx.lang)}


def say(message: str, kind: str) -> dict:
    return {"race_status": vh.status_html(message, kind)}


def race_submitted(ctx: AppContext, form: dict, request: gr.Request):
    """Right after the click: a bad field's sentence at once, or the place in the queue."""
    return waiting.place_in_queue(ctx, request, lambda: classroom_inputs.race_settings(form, ctx.lang), say)


def race_stop(ctx: AppContext, request: gr.Request) -> dict:
    """The session's Stop (the race hears it within a round); a race still in the queue is withdrawn at once."""
    if stop_run(request):
        return say(t("status.withdrawn", ctx.lang), "warn")
    return {}


def race(ctx: AppContext, form: dict, request: gr.Request):
    yield from waiting.guarded(ctx, request, lambda: classroom_inputs.race_settings(form, ctx.lang), say,
                               lambda run, settings: _race(ctx, run, settings))


def _race(ctx: AppContext, run, settings):
    lang = ctx.lang
    prompt, tokens, k, pair_ids = settings
    yield {**say(t("race.loading", lang), "run"), "race_view": ""}
    ready = yield from waiting.prepared(ctx, run, pair_ids, say,
                                        lambda pair: inputs.encode_prompt(pair, prompt, False, tokens, k, lang))
    if ready is None:
        return
    pair, ids = ready
    text_of = _texts(pair)
    lanes: list[cr.Lane] = []
    for i, name in enumerate(cr.LANES):
        lane = yield from _lane(ctx, run, pair, ids, name, i, k, tokens)
        if lane is None:
            return
        lanes.append(lane)
        yield {"race_view": vr.race_html(lanes, text_of, lang)}
    yield say(*vr.done_message(lanes, lang))


def _lane(ctx: AppContext, run, pair, ids: list[int], name: str, i: int, k: int, tokens: int):
    """One lane in the worker thread, its progress said each second; the Lane, or None after Stop or an error
    (said)."""
    lang = ctx.lang
    shown = vr.lane_name(name, lang)

    def line(_progress, seconds: str) -> str:
        return t("race.running", lang, lane=shown, i=i + 1, n=len(cr.LANES), seconds=seconds)

    yield say(line(None, "0"), "run")
    events = worker.call(lambda _progress: cr.run_lane(pair, ids, name, k, tokens, run.stop.is_set), run)
    outcome = yield from waiting.wait_for(ctx, run, events, line, say, "race.stopping")
    if isinstance(outcome, Result) and not run.stop.is_set():
        return outcome.value
    if isinstance(outcome, Failed) and not isinstance(outcome.error, (Stopped, cr.RaceStopped)) \
            and not run.stop.is_set():
        yield say(t("race.failed", lang, error=inputs.error_message(outcome.error, lang)), "error")
        return None
    yield say(t("race.stopped", lang), "warn")
    return None


def _texts(pair):
    """Each token's text, decoded once (the same tokens recur in every lane)."""
    cache: dict[int, str] = {}

    def text_of(token_id: int) -> str:
        if token_id not in cache:
            cache[token_id] = pair.decode([token_id])
        return cache[token_id]

    return text_of
