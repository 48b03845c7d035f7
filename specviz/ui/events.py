"""Wiring: event functions written as `fn(ctx, *inputs) -> {view name: value}` become Gradio listeners.

Why names instead of components: an event function then needs neither the
layout nor the components (it can be read, and tested, on its own), and the
layout can move a view to another tab without touching any logic.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Mapping, Sequence

import gradio as gr

from .gpu_calls import gpu as _gpu   # ZeroGPU's decoration, with a duration of the request
from .session import AppContext


def bind(fn: Callable, ctx: AppContext, components: Mapping[str, Any], *, form: Sequence[str] | None = None,
         gpu: bool = False) -> Callable:
    """`fn` with `ctx` bound, its {name: value} results keyed by component; the signature Gradio sees drops ctx.

    With `form` (input names), `fn(ctx, form, *rest)` receives the inputs as one {name: value} mapping, zipped
    here once; Gradio still passes them by position (one parameter per name in the signature it sees)."""
    def resolve(update):
        if update is None:   # an event without outputs
            return None
        if not update:   # nothing to change: Gradio reads an empty dict as one (missing) value, so skip instead
            return gr.skip()
        return {components[name]: value for name, value in update.items()}

    def call(args, kwargs):
        if form is not None:
            args = (dict(zip(form, args[:len(form)])), *args[len(form):])
        return fn(ctx, *args, **kwargs)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def event(*args, **kwargs):
            updates = call(args, kwargs)
            try:
                for update in updates:
                    yield resolve(update)
            finally:
                updates.close()  # a cancelled event closes the inner generator now (its finally stops the run)
    else:
        @functools.wraps(fn)
        def event(*args, **kwargs):
            return resolve(call(args, kwargs))
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    if form is not None:
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in form] + params[1:]
    event.__signature__ = sig.replace(parameters=params)
    return _gpu(event, form, ctx.lang) if gpu else event


def listen(trigger: Callable, fn: Callable, ctx: AppContext, components: Mapping[str, Any],
           inputs: Sequence[str] = (), outputs: Sequence[str] = (), *, gpu: bool = False, **kwargs):
    """`trigger(bound fn, input components, output components, **kwargs)`, e.g. trigger=button.click.

    Private unless told otherwise: a page event is no API (the API is `ui.api`, one set for every language)."""
    kwargs.setdefault("api_visibility", "private")
    return trigger(bind(fn, ctx, components, gpu=gpu), [components[n] for n in inputs],
                   [components[n] for n in outputs], **kwargs)


def listen_form(trigger: Callable, fn: Callable, ctx: AppContext, components: Mapping[str, Any],
                form: Sequence[str], outputs: Sequence[str] = (), *, gpu: bool = False, **kwargs):
    """As `listen`, for `fn(ctx, form: dict, ...)`: the inputs named in `form` reach it as one {name: value}."""
    kwargs.setdefault("api_visibility", "private")
    return trigger(bind(fn, ctx, components, form=tuple(form), gpu=gpu), [components[n] for n in form],
                   [components[n] for n in outputs], **kwargs)
