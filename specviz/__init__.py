"""specviz: speculative decoding you can watch.

The public API: `load_pair`, `SamplingConfig`, `DecodeOptions` (with its drafting, `Chain` or `Tree`),
`speculative_generate`, `autoregressive_generate` (each returns a `RunReport` when it ends: `Reporting` keeps it
around a `for`), `Round`. Data flows one way:
models -> sampling/speculative (decoding) -> trace -> viz -> ui.
"""
from .engine.baseline import autoregressive_generate
from .engine.options import Chain, DecodeOptions, Tree
from .engine.sampling import SamplingConfig
from .generate import speculative_generate
from .runtime.report import Reporting, RunReport, run_to_end
from .trace.records import Round, Step, Trace, metrics


def load_pair(*args, **kwargs):
    """Load a draft/target pair (see specviz.models.loading.load_pair); imported lazily to keep `import specviz` light."""
    from .models.loading import load_pair as _load_pair

    return _load_pair(*args, **kwargs)


__all__ = ["load_pair", "SamplingConfig", "DecodeOptions", "Chain", "Tree", "speculative_generate",
           "autoregressive_generate", "RunReport", "Reporting", "run_to_end",
           "Round", "Step", "Trace", "metrics"]
