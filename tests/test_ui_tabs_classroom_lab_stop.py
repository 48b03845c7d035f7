"""The lab's Stop on the page (tiny models, no download): Gradio takes its answer without a warning, the status
says at once that the lab stopped and after how many samples, and the run ends there, in English and Spanish."""
from __future__ import annotations

import asyncio
import warnings
from types import SimpleNamespace

import gradio as gr
import pytest

from specviz.classroom import lab
from specviz.strings import LANGUAGES, t
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import classroom_lab

PROMPT, TEMP, SEED = "The cat", 0.6, 3


def _ctx(lang: str) -> AppContext:
    return AppContext(cache=PairCache(lambda *a: None), lang=lang)


def _form(n: int) -> dict:
    return dict(zip(classroom_lab.LAB_FORM, ("tiny", "real", PROMPT, TEMP, n, SEED, "packaged", "", "")))


def _lab_blocks(ctx: AppContext):
    with gr.Blocks() as demo:
        c = classroom_lab.lab_layout(ctx.lang)
        c.update(pair=gr.Textbox(), draft_id=gr.Textbox(), target_id=gr.Textbox())   # the Generate form's pair
        classroom_lab.lab_wire(ctx, c)
    return demo, c


def _stop_fn(demo):
    (fn,) = [f for f in demo.fns.values() if f.name == "lab_stop"]
    return fn


@pytest.mark.parametrize("running", [False, True])
def test_gradio_takes_the_labs_stop_answer_without_a_warning(running):
    """The page's Stop listener returns exactly what its outputs hold, with or without a lab run going."""
    ctx = _ctx("en")
    demo, c = _lab_blocks(ctx)
    fn = _stop_fn(demo)
    request = SimpleNamespace(session_hash=f"lab-stop-wiring-{running}")
    gen = classroom_lab.lab_run(ctx, _form(lab.MAX_SAMPLES), request) if running else None
    if gen is not None:
        next(gen)   # "Computing p and q…": the run is registered
    answer = fn.fn(request)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # Gradio's "returned too many output values" is a UserWarning
        asyncio.run(demo.postprocess_data(fn, answer, None))
    assert [o._id for o in fn.outputs] == [c["lab_stats"]._id]
    if gen is not None:
        gen.close()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_stop_says_the_lab_stopped_after_the_samples_drawn_and_the_run_ends_there(lang, monkeypatch):
    monkeypatch.setattr(lab, "ELEMENTS_PER_CALL", 1)   # one row per call: many chunks of N // 10 samples
    ctx, n = _ctx(lang), lab.MAX_SAMPLES
    request = SimpleNamespace(session_hash=f"lab-stop-{lang}")
    gen = classroom_lab.lab_run(ctx, _form(n), request)
    assert t("lab.preparing", lang) in next(gen)["lab_stats"]
    shown = next(gen)["lab_stats"]                       # the first chunk's histogram
    drawn = n // 10
    assert t("lab.progress", lang, n=drawn, total=n) in shown
    said = classroom_lab.lab_stop(ctx, request)["lab_stats"]
    assert t("lab.stopped", lang, n=drawn, total=n) in said and t("lab.progress", lang, n=drawn, total=n) not in said
    rest = list(gen)
    assert len(rest) == 1 and rest[0]["lab_stats"] == said    # the run's last word is the same: stopped there
    assert not any(o.get("lab_compare") for o in rest)
    assert classroom_lab.lab_stop(ctx, request) == {}        # the run is over: Stop changes nothing now


@pytest.mark.parametrize("lang", LANGUAGES)
def test_stop_before_the_first_sample_says_so(lang):
    ctx = _ctx(lang)
    request = SimpleNamespace(session_hash=f"lab-stop-early-{lang}")
    gen = classroom_lab.lab_run(ctx, _form(1000), request)
    next(gen)   # computing p and q
    said = classroom_lab.lab_stop(ctx, request)["lab_stats"]
    assert t("lab.stopped_none", lang) in said
    rest = list(gen)
    assert [o["lab_stats"] for o in rest] == [said]


def test_a_new_lab_run_silences_the_one_it_replaces():
    ctx = _ctx("en")
    request = SimpleNamespace(session_hash="lab-stop-twice")
    first = classroom_lab.lab_run(ctx, _form(1000), request)
    next(first)
    second = classroom_lab.lab_run(ctx, _form(1000), request)
    next(second)
    assert list(first) == []                                 # ended without overwriting the new run's views
    assert "lab_compare" in list(second)[-1]
