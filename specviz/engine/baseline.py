"""Plain decoding with the target alone: the reference the speculative decoder must match.

Same sampling transform, same cache, seed and stopping semantics as
`speculative_generate`, one `Step` per token with its wall time.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from ..runtime.decoding import (PrefillStopped, StopCheck, decode_tokens, forward_logits, prefill, start_run,
                                vocab_size, warm_up)
from .sampling import SamplingConfig, probabilities, sample
from ..trace.records import Step


@torch.inference_mode()
def autoregressive_generate(
    target,
    input_ids: Sequence[int] | torch.Tensor,
    sampling: SamplingConfig = SamplingConfig(),
    max_new_tokens: int = 64,
    seed: int | None = 0,
    *,
    tokenizer=None,
    eos_token_id: int | list[int] | None = None,
    ignore_eos: bool = False,
    stats: dict | None = None,
    compile: str = "auto",
    static_cache: bool | None = None,
    stop: StopCheck | None = None,
) -> Iterator[Step]:
    """Yield one `Step` per token; `compile` and `static_cache` as in `speculative_generate`,
    so a speedup is always measured against the target alone on the same path; `stop` as there (the prefill)."""
    run = start_run(target, input_ids, max_new_tokens, seed, eos_token_id=eos_token_id, ignore_eos=ignore_eos,
                    compile=compile, static_cache=static_cache, stats=stats, room=1, stop=stop)
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
        return
    pending = run.tokens[-1:]
    for index in range(max_new_tokens):
        t_start = clock()
        probs = probabilities(forward_logits(target, pending, cache, 1)[:, :vocab].to(device), sampling)
        pending = sample(probs, run.generator, sampling.greedy)
        token, p = torch.stack([pending[0].float(), probs[0, pending[0]]]).tolist()
        token = int(token)
        yield Step(index, token, decode_tokens(tokenizer, [token])[0] if tokenizer else "", p, clock() - t_start)
        if token in run.eos:
            return
