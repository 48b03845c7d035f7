"""What specviz keeps per loaded model, beside it rather than on it: one `Runtime` per model, reached by `runtime_of`.

Why not attributes on the model: a transformers model is someone else's object (its `__dict__`, `state_dict`
and `modules()` are theirs), and state set on it from several modules had no single owner. The registry
is weak: an entry lives as long as its model, so dropping a pair frees everything kept for it. For that the
entry must not hold its model strongly (a strong reference from value to key keeps both forever):
the compiled forwards are compiled as functions of the module (`compiled(module, ...)`), and a GraphSet
holds its model through a weak proxy (specviz.runtime.graphs).
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(eq=False)
class Runtime:
    """One model's runtime state; each field's owner is the module named beside it."""

    linear_path: str = "default"            # how its linear layers run (models.quant.kernels / weights)
    # How a new nn.Linear joins that path (a trimmed head, engine.vocab_trim); set with linear_path by
    # models.quant, so the engine builds one without importing the models layer. None: kept as it is.
    store_linear: Callable | None = None
    target_weights: str = "as-loaded"       # how its weights are stored (models.quant.weights / weights_cache)
    static_cache: Any = None                # (StaticCache, its length): the one graphs replay on (runtime.decoding)
    compiled: Callable | None = None        # forward(module, ...) compiled once (runtime.decoding)
    compiled_base: Callable | None = None   # the base model's forward(base, ...) compiled once (runtime.decoding)
    graphs: dict[bool, Any] = field(default_factory=dict)         # GraphSet by `hidden` (runtime.graphs)
    trimmed_heads: dict[tuple, Any] = field(default_factory=dict)  # the draft's trimmed heads (engine.vocab_trim)
    lean: Any = None                        # its lean stack, built when it is prepared (models.lean_forward)


_RUNTIMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()     # the page decodes in worker threads: two first uses must not make two Runtimes


def runtime_of(model) -> Runtime:
    """The model's Runtime, made on first use."""
    with _LOCK:
        runtime = _RUNTIMES.get(model)
        if runtime is None:
            runtime = _RUNTIMES[model] = Runtime()
        return runtime


def known_runtime(model) -> Runtime:
    """The model's Runtime if it has one, else a default one left unregistered (reads: nothing is made,
    and a test double that takes no weak reference reads the defaults)."""
    try:
        runtime = _RUNTIMES.get(model)
    except TypeError:
        runtime = None
    return runtime if runtime is not None else Runtime()


def forget_runtime(model) -> None:
    """Drop everything kept for `model` (tests; a model reset to as-loaded)."""
    with _LOCK:
        _RUNTIMES.pop(model, None)
