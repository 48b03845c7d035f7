"""The event functions that use the GPU, decorated for ZeroGPU; unchanged everywhere else.

`spaces.GPU(duration=..., size=...)` gets a function of the request
(specviz.runtime.zerogpu): tokens, K, the sweep's Ks, and the target step measured on
this pair's earlier calls, read from the page's form or, for an API endpoint,
from the call's own arguments (named as the form names them: `api_fields`);
and the slice the Space asks for (SPECVIZ_ZEROGPU_SIZE). Before a call that would need more than one call may ask for, the page
says so (a warning; the call still runs, cut at the limit). Each finished call's
wall time feeds the measured step. Off ZeroGPU the event is returned as it is
(the `spaces` package is a no-op there too).
"""
from __future__ import annotations

import functools
import inspect
import os
import time
from typing import Any, Callable, Mapping, Sequence

import gradio as gr

from ..runtime import zerogpu
from ..limits import (APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_RACE_TOKENS, APP_MAX_SWEEP_TOKENS, ZEROGPU_MAX_DURATION_S,
                      ZEROGPU_QUOTA_ANONYMOUS_S, ZEROGPU_QUOTA_FREE_S, ZEROGPU_QUOTA_NOTE_S)
from ..strings import DEFAULT_LANG, t
from ..models.devices import gpu_available
from ..viz import html as vh
from .inputs import default_pair, pair_ids
from .session import default_cache
from .worker import torch_thread


def _int(form: Mapping[str, Any], name: str, default: int, hi: int) -> int:
    try:
        return min(hi, max(1, int(float(form.get(name, default)))))
    except (TypeError, ValueError):
        return default


def request_of(form: Mapping[str, Any] | None) -> zerogpu.GpuRequest | None:
    """What a Generate (RUN_FORM), sweep (SWEEP_FORM) or race (RACE_FORM) submission will decode; None for other
    events."""
    if not form:
        return None
    if "race_tokens" in form:   # the classroom's race: four drafters at one K, and the target alone
        return zerogpu.GpuRequest(_int(form, "race_tokens", 48, APP_MAX_RACE_TOKENS),
                                  (_int(form, "race_k", 8, APP_MAX_K),) * 4, baseline=True)
    if "sweep_tokens" in form:
        lo, hi = _int(form, "k_lo", 1, APP_MAX_K), _int(form, "k_hi", 1, APP_MAX_K)
        return zerogpu.GpuRequest(_int(form, "sweep_tokens", 64, APP_MAX_SWEEP_TOKENS),
                                  tuple(range(min(lo, hi), max(lo, hi) + 1)), baseline=True)
    if "max_new" in form:   # a hybrid's lookup rounds may verify more rows than K (lookup_k; 0 or absent: K)
        k = max(_int(form, "k", 4, APP_MAX_K), _int(form, "lookup_k", 1, APP_MAX_K))
        return zerogpu.GpuRequest(_int(form, "max_new", 128, APP_MAX_NEW_TOKENS), (k,),
                                  baseline=bool(form.get("compare_switch")))
    return None


# The sentence for each kind of long request, by the field only that kind's form has.
_QUOTA_KEYS = {"race_tokens": "zerogpu.quota_race", "sweep_tokens": "zerogpu.quota_sweep"}


def quota_time(seconds: int, lang: str = DEFAULT_LANG) -> str:
    """A stretch of quota in words: "45 s", "2 min", "2 min 27 s"."""
    m, s = divmod(int(seconds), 60)
    if not m:
        return t("zerogpu.seconds", lang, s=s)
    return t("zerogpu.whole_minutes", lang, m=m) if not s else t("zerogpu.minutes", lang, m=m, s=s)


def quota_note(form: Mapping[str, Any] | None, lang: str = DEFAULT_LANG) -> str:
    """What a sweep or race (SWEEP_FORM, RACE_FORM) would ask of a ZeroGPU visitor's daily quota, in a sentence, from
    the very duration its call will ask for; "" off ZeroGPU, for other forms, or when it asks for little."""
    key = next((k for field, k in _QUOTA_KEYS.items() if field in (form or {})), None)
    if key is None or not zerogpu.on_zero_gpu():
        return ""
    seconds = zerogpu.quota_seconds(request_of(form), zerogpu.STEPS.step_seconds(pair_key(form)), zerogpu.gpu_size())
    if seconds <= ZEROGPU_QUOTA_NOTE_S:
        return ""
    return t(key, lang, time=quota_time(seconds, lang), anon=quota_time(ZEROGPU_QUOTA_ANONYMOUS_S, lang),
             free=quota_time(ZEROGPU_QUOTA_FREE_S, lang))


def quota_html(form: Mapping[str, Any] | None, lang: str = DEFAULT_LANG) -> str:
    """`quota_note` as the page shows it beside the sweep's and the race's buttons ("" when there is nothing to say)."""
    note = quota_note(form, lang)
    return vh.status_html(note, "info") if note else ""


def pair_key(form: Mapping[str, Any] | None) -> tuple:
    form = form or {}
    return form.get("pair"), form.get("draft_id"), form.get("target_id")


def gpu(event: Callable, form: Sequence[str] | None = None, lang: str = DEFAULT_LANG,
        warn: Callable[[str], Any] | None = None, api_fields: Mapping[str, str] | None = None) -> Callable:
    """`event` for ZeroGPU: decorated with a duration of its request, announced when too long, timed.

    `form`: the page event's inputs, in order. `api_fields`: for an API endpoint (keyword arguments, defaults in its
    signature), {parameter: the form's name for it} where they differ (`max_new_tokens` -> `max_new`)."""
    if not zerogpu.on_zero_gpu():
        return event
    read = _api_reader(event, api_fields) if api_fields is not None else _form_reader(tuple(form or ()))

    def request(args, kwargs) -> tuple[tuple, zerogpu.GpuRequest | None]:
        values = read(args, kwargs)
        return pair_key(values), request_of(values)

    def duration(*args, **kwargs) -> int:
        key, req = request(args, kwargs)
        return zerogpu.duration(req, zerogpu.STEPS.step_seconds(key)) if req else 2 * zerogpu.ZEROGPU_MIN_S

    decorated = _decorate(event, duration, zerogpu.gpu_size())

    def before(args, kwargs) -> tuple:
        key, req = request(args, kwargs)
        step = zerogpu.STEPS.step_seconds(key)
        if req is not None and zerogpu.exceeds(req, step):
            (warn or _warning)(t("zerogpu.long", lang, seconds=int(zerogpu.estimate_seconds(req, step)),
                                 limit=ZEROGPU_MAX_DURATION_S))
        return key, req, time.monotonic()

    def after(key, req, t0) -> None:
        if req is not None:
            zerogpu.STEPS.record(key, req, time.monotonic() - t0)

    if inspect.isgeneratorfunction(event):
        @functools.wraps(event)
        def outer(*args, **kwargs):
            key, req, t0 = before(args, kwargs)
            yield from decorated(*args, **kwargs)
            after(key, req, t0)
    else:
        @functools.wraps(event)
        def outer(*args, **kwargs):
            key, req, t0 = before(args, kwargs)
            result = decorated(*args, **kwargs)
            after(key, req, t0)
            return result
    return outer


def _form_reader(names: tuple[str, ...]) -> Callable:
    """A page event's positional inputs as {form name: value} (None without a form: not a decoding event)."""
    return lambda args, kwargs: dict(zip(names, args)) if names else None


def _api_reader(event: Callable, fields: Mapping[str, str]) -> Callable:
    """An API call's arguments, positional or by name, with the signature's defaults, as {form name: value}: the
    call's own tokens, K and Ks, not a flat guess (an API call used to ask for 60 s whatever it decoded)."""
    signature = inspect.signature(event)

    def read(args, kwargs):
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError:      # arguments the endpoint will refuse anyway: the pessimistic defaults
            return None
        bound.apply_defaults()
        return {fields.get(name, name): value for name, value in bound.arguments.items()}

    return read


def _decorate(event: Callable, duration: Callable, size: str = zerogpu.ZEROGPU_DEFAULT_SIZE) -> Callable:
    try:
        import spaces  # type: ignore
    except ImportError:    # not installed: nothing attaches a GPU, the event runs as it is
        return event
    if "size" in inspect.signature(spaces.GPU).parameters:   # `spaces` before the Blackwell sizes has no `size`
        return spaces.GPU(event, duration=duration, size=size)
    return spaces.GPU(event, duration=duration)


def _warning(message: str) -> None:
    gr.Warning(message)


PRELOAD_ENV_VAR = "SPECVIZ_PRELOAD"   # "0": the start-up pair loads at the first Generate, as it once did


def preload(choice: str | None, cache=None, say: Callable[[str], Any] = print,
            submit: Callable[[Callable[[], None]], None] | None = None) -> bool:
    """Load the start-up pair (SPECVIZ_DEFAULT_PAIR) before any visitor asks; True when a load was done or started.

    On ZeroGPU now, outside the decorated calls, so the first visitor waits only for the graphs' capture. Elsewhere on
    the models' thread in the background (`submit`, default the worker's; the one thread that may run models,
    ui/worker.py), while the server starts and the first visitor reads the page: the first Generate finds the pair
    loaded or follows the rest of the load in its status (waiting.load). SPECVIZ_PRELOAD=0 leaves it to that Generate.
    """
    cache = cache or default_cache()
    if zerogpu.on_zero_gpu():
        draft, target = pair_ids(default_pair(choice, gpu=True), None, None)
        say(f"specviz: loading {target or 'the packaged pair'} at start-up (ZeroGPU)")
        cache.get(draft, target, lambda fraction, message: None)
        return True
    if os.environ.get(PRELOAD_ENV_VAR, "").strip() == "0":
        return False
    draft, target = pair_ids(default_pair(choice, gpu=gpu_available()), None, None)
    return cache.preload(draft, target, submit or torch_thread.submit)
