"""The API's HTTP edge: a call whose body is not what Gradio's routes take gets one sentence, never a traceback.

Gradio answers a call with too few values (`{"data": ["Hi"]}` to /gradio_api/call/generate) with a ValueError's
traceback in the server's log and `{"error": null}` to the caller, lets extra values through unread, and leaves a body
that is no JSON object with a list `data` to FastAPI's bare 422 (pydantic's `{"detail": [...]}`). Here the count is
checked for every public endpoint (`arguments_refused`, from `api.Blocks.validate_inputs`) and a malformed body gets a
JSON `{"error": sentence}` (`exception_handlers`, given to the app at launch); both name what the endpoint takes.
A call to an endpoint that does not exist (/gradio_api/call/nope) raised Gradio's FnIndexInferError out of the route:
a 500, "Internal Server Error" and a traceback in the log; it is a 404 with a sentence naming the endpoints there are.
"""
from __future__ import annotations

import inspect
import re

import gradio as gr
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from gradio.route_utils import FnIndexInferError

from ..strings import DEFAULT_LANG, t

LANG = DEFAULT_LANG   # as the API's other sentences: English (a program has no page language)
_CALL_PATH = re.compile(r"/gradio_api/(?:call|run)/([^/]+)/?$")


def parameter_names(block_fn) -> list[str]:
    """The endpoint's parameters in order, as a program names them (its function's first parameters, one per input)."""
    names = list(inspect.signature(block_fn.fn).parameters)
    return names[:len(block_fn.inputs)]


def arguments_refused(block_fn, inputs: list) -> gr.Error | None:
    """For a public endpoint called with other than one value per parameter: the sentence, as an error that Gradio
    sends to the caller without a traceback in the log; None otherwise."""
    if block_fn.api_visibility != "public" or not block_fn.api_name or len(inputs) == len(block_fn.inputs):
        return None
    names = parameter_names(block_fn)
    return gr.Error(t("api.arguments", LANG, endpoint=block_fn.api_name, n=len(names), names=", ".join(names),
                      got=len(inputs)), print_exception=False)


def _endpoint(request) -> str | None:
    match = _CALL_PATH.search(request.url.path)
    return match.group(1) if match else None


def _body_sentence(request) -> str:
    name = _endpoint(request)
    try:
        blocks = request.app.get_blocks()
        block_fn = next(fn for fn in blocks.fns.values() if fn.api_name == name and fn.api_visibility == "public")
    except (AttributeError, StopIteration):
        return t("api.body", LANG)
    names = parameter_names(block_fn)
    return t("api.body_for", LANG, endpoint=name, n=len(names), names=", ".join(names))


async def _malformed(request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's answer to a body its route cannot read, as one sentence in JSON (same status: 422)."""
    return JSONResponse({"error": _body_sentence(request)}, status_code=422)


def _public_names(request) -> list[str]:
    try:
        blocks = request.app.get_blocks()
    except AttributeError:
        return []
    return sorted({fn.api_name for fn in blocks.fns.values() if fn.api_visibility == "public" and fn.api_name})


async def _unknown(request, exc: FnIndexInferError) -> JSONResponse:
    """Gradio's answer to a call of an endpoint it does not have (a 500 and a traceback), as a 404 and one sentence."""
    name = (_endpoint(request) or "")[:60]
    return JSONResponse({"error": t("api.unknown_endpoint", LANG, endpoint=name, names=", ".join(_public_names(request)))},
                        status_code=404)


def exception_handlers() -> dict:
    """For `launch(app_kwargs={"exception_handlers": ...})`: FastAPI's app takes them at creation."""
    return {RequestValidationError: _malformed, FnIndexInferError: _unknown}
