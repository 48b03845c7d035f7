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

from .session import AppContext, gpu as _gpu


def bind(fn: Callable, ctx: AppContext, components: Mapping[str, Any], *, gpu: bool = False) -> Callable:
    """`fn` with `ctx` bound, its {name: value} results keyed by component; the signature Gradio sees drops ctx."""
    def resolve(update):
        if update is None:   # an event without outputs
            return None
        if not update:   # nothing to change: Gradio reads an empty dict as one (missing) value, so skip instead
            return gr.skip()
        return {components[name]: value for name, value in update.items()}

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def event(*args, **kwargs):
            updates = fn(ctx, *args, **kwargs)
            try:
                for update in updates:
                    yield resolve(update)
            finally:
                updates.close()  # a cancelled event closes the inner generator now (its finally stops the run)
    else:
        @functools.wraps(fn)
        def event(*args, **kwargs):
            return resolve(fn(ctx, *args, **kwargs))
    sig = inspect.signature(fn)
    event.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
    return _gpu(event) if gpu else event


def listen(trigger: Callable, fn: Callable, ctx: AppContext, components: Mapping[str, Any],
           inputs: Sequence[str] = (), outputs: Sequence[str] = (), *, gpu: bool = False, **kwargs):
    """`trigger(bound fn, input components, output components, **kwargs)`, e.g. trigger=button.click."""
    return trigger(bind(fn, ctx, components, gpu=gpu), [components[n] for n in inputs],
                   [components[n] for n in outputs], **kwargs)
