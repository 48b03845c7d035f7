"""Models made ready to decode: the runtime configured with this layer's lean stack and attention kernel, and each
model prepared once (specviz.runtime.setup).

`load_pair` ends here, and so does anything that builds its models another way (the benchmark's other targets, the
tests' tiny models): one call, so a process decodes alike however its models came to be.
"""
from __future__ import annotations

from ..runtime import setup
from .lean_forward import lean_for
from .quant import q4a8


def configure_runtime() -> setup.Setup:
    """The runtime's forwards for models of this layer: the lean layer stack, and the one-query attention kernel
    where specviz's extension is built here."""
    return setup.configure(lean_builder=lean_for, attention_kernel=q4a8.attention_kernel())


def prepare_models(*models):
    """Configure the runtime, then prepare each model (None skipped) for decoding: the row-invariant attention where
    it runs SDPA, its lean stack built (0.07-0.5 s each on a 2-core Zen 4: the joined weights' copy), here rather
    than in a request's first verify or draft step. Returns the first model, for a caller's chain."""
    configure_runtime()
    for model in models:
        if model is not None:
            setup.prepare(model)
    return models[0] if models else None
