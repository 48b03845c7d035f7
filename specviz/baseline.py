"""Plain decoding with the target alone: the reference the speculative decoder must match.

Same sampling transform, same cache, seed and stopping semantics as
`speculative_generate`, one `Step` per token with its wall time.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch
from .sampling import SamplingConfig, probabilities, sample
from .decoding import (Timer, as_id_tensor, check_budget, decode_tokens, eos_ids, forward_logits, prefill,
                       resolve_compile, vocab_size, warm_up,
                          input_device, make_generator)
from .trace import Step


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
) -> Iterator[Step]:
    """Yield one `Step` per token; `compile` and `static_cache` as in `speculative_generate`,
    so a speedup is always measured against the target alone on the same path."""
    check_budget(max_new_tokens)
    device = input_device(target)
    tokens = as_id_tensor(input_ids, device)
    eos = set() if ignore_eos else set(eos_ids(target, eos_token_id))
    gen = make_generator(seed, device)
    clock = Timer(device)
    vocab = vocab_size(target)
    static, compiled = resolve_compile(compile, device, static_cache)
    max_len = len(tokens) + max_new_tokens + 1
    if compiled:
        t_warm = clock()
        warm_up(target, [1], max_len, verify=False)
        if stats is not None:
            stats["warmup_seconds"] = clock() - t_warm

    t0 = clock()
    cache = prefill(target, tokens[None], static=static, max_len=max_len, compiled=compiled)
    if stats is not None:
        stats["prefill_seconds"] = clock() - t0
    pending = tokens[-1:]
    for index in range(max_new_tokens):
        t_start = clock()
        probs = probabilities(forward_logits(target, pending, cache, 1)[:, :vocab].to(device), sampling)
        pending = sample(probs, gen, sampling.greedy)
        token, p = torch.stack([pending[0].float(), probs[0, pending[0]]]).tolist()
        token = int(token)
        yield Step(index, token, decode_tokens(tokenizer, [token])[0] if tokenizer else "", p, clock() - t_start)
        if token in eos:
            return
