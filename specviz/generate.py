"""`speculative_generate`: the engine's rounds (specviz.engine.speculative) recorded as `Round`s (specviz.trace).

The engine decides and the trace describes; this is where the two meet, so neither imports the other's side.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Generator, Sequence

import torch

from .engine.options import DecodeOptions, decode_options
from .engine.speculative import rounds, start
from .runtime.attention import has_row_invariant_attention, row_invariant_attention_possible
from .runtime.report import RunReport
from .trace.recording import RoundRecorder
from .trace.records import Round


@torch.inference_mode()
def speculative_generate(target, draft, input_ids: Sequence[int] | torch.Tensor, options: DecodeOptions | None = None,
                         **keywords) -> Generator[Round, None, RunReport]:
    """Yield one `Round` per draft/verify step until `options.max_new_tokens` or EOS, then return the run's
    `RunReport` (its set-up times, whether `options.stop` cut it: `report = yield from ...`, or
    specviz.runtime.report.Reporting around a `for`).

    `draft` is a draft model or any `Drafter`; `options.drafting` is a `Chain` (k, the drafter kind: "model",
    "ngram" (prompt lookup; `draft` may be None), "hybrid" or "trimmed", an adaptive threshold) or a `Tree`
    (a shape or "dynamic:N", costs; dynamic caches only). Keywords build or amend the options, as the README's
    examples call it: `speculative_generate(target, draft, ids, k=4, max_new_tokens=64)` (`decode_options`).
    """
    options = decode_options(options, **keywords)
    _warn_if_unprepared(target)
    started = start(target, draft, input_ids, options)
    if isinstance(started, RunReport):   # stopped during the set-up: no round
        return started
    recorder = RoundRecorder(options.tokenizer, options.sampling, options.record, started.run.clock, started.name,
                             started.trees)
    for decided in rounds(started, options):
        yield recorder.record(decided.index, decided.tensors, decided.outcome, decided.marks)
    return started.run.report()


_WARNED: weakref.WeakSet = weakref.WeakSet()


def _warn_if_unprepared(target) -> None:
    """Once per model: a CPU target built outside load_pair and never prepared verifies with transformers' attention,
    whose rows differ in the last bits from one-token decoding's, so greedy output may drift from the target alone;
    the decoder no longer changes a model it is given (the fix is one call, after loading)."""
    params = next(target.parameters(), None) if hasattr(target, "parameters") else None
    if params is None or params.device.type != "cpu" or target in _WARNED:
        return
    if row_invariant_attention_possible(target) and not has_row_invariant_attention(target):
        _WARNED.add(target)
        warnings.warn("specviz: this target was not prepared (load_pair prepares its models; for models loaded "
                      "otherwise call specviz.models.prepare.prepare_models(target, draft) once): its verify runs "
                      "transformers' attention, so greedy output may differ from the target alone in the last bits",
                      RuntimeWarning, stacklevel=3)
