"""Plain decoding with the target alone: the reference the speculative decoder must match.

Same sampling transform, same cache, seed and stopping semantics as
`speculative_generate`, one `Step` per token with its wall time.
"""
from __future__ import annotations

from typing import Generator, Sequence

import torch

from ..runtime.token_text import decode_tokens
from ..runtime.decoding import (PrefillStopped, forward_logits, prefill, start_run,
                                vocab_size, warm_up)
from ..runtime.report import RunReport
from .options import DecodeOptions, decode_options
from .sampling import draw
from .step import Step  # noqa: F401 - the record it yields, re-exported where callers have always found it


@torch.inference_mode()
def autoregressive_generate(target, input_ids: Sequence[int] | torch.Tensor, options: DecodeOptions | None = None,
                            **keywords) -> Generator[Step, None, RunReport]:
    """Yield one `Step` per token, then return the run's `RunReport`; the same `DecodeOptions` as
    `speculative_generate` (its drafting unused), so a speedup is always measured against the target alone on the
    same path (`compile`, `static_cache`); `stop` as there (the warm-up, the prefill, then between tokens; the
    report's `stopped` once it ended the run). Keywords amend `options` (`sampling=..., max_new_tokens=...`:
    `decode_options`)."""
    options = decode_options(options, **keywords)
    run = start_run(target, input_ids, options, room=1)
    stop, sampling, tokenizer = options.stop, options.sampling, options.tokenizer
    vocab, clock, device = vocab_size(target), run.clock, run.tokens.device
    try:   # Stop during the warm-up or the prefill: no step
        with run.timed("warmup_seconds", when=run.compiled):
            if run.compiled:
                warm_up(target, [1], run.cache_options["max_len"], verify=False,
                        backend=run.cache_options["backend"], stop=stop)
        run.note_graph_failure(target)
        with run.timed("prefill_seconds"):
            cache = prefill(target, run.tokens[None], **run.cache_options)
    except PrefillStopped:
        run.note_stopped()
        return run.report()
    pending = run.tokens[-1:]
    for index in range(options.max_new_tokens):
        if index and run.stopped():   # between tokens, as the speculative loop between rounds
            return run.report()
        t_start = clock()
        probs, pending = draw(forward_logits(target, pending, cache, 1)[:, :vocab].to(device), sampling, run.generator)
        token, p = torch.stack([pending[0].float(), probs[0, pending[0]]]).tolist()
        token = int(token)
        yield Step(index, token, decode_tokens(tokenizer, [token])[0] if tokenizer else "", p, clock() - t_start)
        if token in run.eos:
            break
    return run.report()
