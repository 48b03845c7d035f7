"""The process's forwards beyond transformers' own, configured in one explicit call, and a model's one-time preparation.

Two things above the runtime decide how a few-position forward runs on a CPU: the lean layer stack (built by the
models layer, which knows the layers: models.lean_forward) and specviz's one-query attention kernel (the compiled
extension of models.quant.q4a8). The runtime imports nothing above it, so whoever loads models hands both in here,
`configure(lean_builder=..., attention_kernel=...)`: `load_pair` does (through models.prepare), and so does a process
that builds its models another way (the tests' tiny models), with the same call. Until then a process runs
transformers' forwards with PyTorch's SDPA.

`prepare(model)` is the one-time set-up of a model for decoding, done when it is loaded and never by the decoder:
the row-invariant attention where the model runs SDPA (its config names it), its lean stack built (its q4a8 layers
then read views into the joined weights). The decoder only reads what was prepared, so decoding a model twice, or a
model prepared at load, computes the same thing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from . import attention
from .attention import use_row_invariant_attention


@dataclass(frozen=True)
class Setup:
    """What the process's forwards may use beyond transformers' own."""

    lean_builder: Callable | None = None   # model -> its lean layer stack, kept in its Runtime, or None
    attention_kernel: Any = None           # the compiled extension whose one-query attention rows use, or None: SDPA


_current = Setup()


def configure(lean_builder: Callable | None = None, attention_kernel: Any = None) -> Setup:
    """Set the process's forwards: `lean_builder(model)` builds a model's lean stack at `prepare` (models.lean_forward),
    `attention_kernel` (an extension with `one_query_attention`, or None) computes every one-query row on a CPU.

    SPECVIZ_ATTENTION=sdpa keeps PyTorch's SDPA whatever is given. Called when models are loaded, before any of
    them decodes, so a run and its target-alone baseline never compute differently."""
    global _current
    if os.environ.get(attention.KERNEL_ENV, "").strip().lower() == "sdpa":
        attention_kernel = None
    _current = Setup(lean_builder, attention_kernel)
    attention.use_kernel(attention_kernel)
    return _current


def current() -> Setup:
    """The process's setup (a default one, transformers' forwards alone, until `configure`)."""
    return _current


def prepare(model) -> bool:
    """Make `model` ready to decode, once, where it is loaded: the row-invariant attention where it runs SDPA, and its
    lean stack where one is configured and fits it. True when its attention is now the row-invariant one."""
    invariant = use_row_invariant_attention(model)
    if _current.lean_builder is not None:
        _current.lean_builder(model)
    return invariant
