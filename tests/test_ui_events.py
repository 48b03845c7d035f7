"""specviz.ui.events: a form's inputs reach an event function as one {name: value}, zipped once by name."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import gradio as gr
from gradio.helpers import special_args

from specviz.ui import inputs
from specviz.ui.events import bind
from specviz.ui.session import AppContext, PairCache


def test_a_bound_form_function_takes_the_inputs_by_position_and_gets_them_by_name():
    seen = {}

    def submitted(ctx: AppContext, form: dict, request: gr.Request):
        seen.update(form=form, request=request, ctx=ctx)
        return {"status": "ok"}

    ctx = AppContext(cache=PairCache(lambda d, t, p: None))
    event = bind(submitted, ctx, {"status": "STATUS"}, form=inputs.RUN_FORM)
    assert list(inspect.signature(event).parameters) == [*inputs.RUN_FORM, "request"]
    values = list(range(len(inputs.RUN_FORM)))
    request = SimpleNamespace(session_hash="x")
    assert event(*values, request) == {"STATUS": "ok"}
    assert seen["form"] == dict(zip(inputs.RUN_FORM, values)) and seen["request"] is request and seen["ctx"] is ctx
    # Gradio finds the request parameter where it will insert the request: after the form's values.
    filled, *_ = special_args(event, list(values), request="REQ")
    assert filled == [*values, "REQ"]


def test_the_forms_name_only_fields_the_page_has_and_checks_cover_them():
    checked = set(inputs.FIELD_CHECKS)
    assert {"prompt", "k", "max_new", "seed", "temperature", "top_k", "top_p", "drafter", "compile"} <= checked
    assert {"k_lo", "k_hi", "sweep_tokens"} <= checked & set(inputs.SWEEP_FORM)
    assert len(set(inputs.RUN_FORM)) == len(inputs.RUN_FORM) and len(set(inputs.SWEEP_FORM)) == len(inputs.SWEEP_FORM)
