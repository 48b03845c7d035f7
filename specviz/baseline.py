"""Plain decoding with the target alone: the reference the speculative decoder must match.

Same sampling transform, same cache, seed and stopping semantics as
`speculative_generate`, one `Step` per token with its wall time.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch
from transformers import DynamicCache

from .sampling import SamplingConfig, probabilities, sample
from .decoding import (Timer, as_id_tensor, check_budget, decode_tokens, eos_ids, forward_logits,
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
) -> Iterator[Step]:
    check_budget(max_new_tokens)
    device = input_device(target)
    tokens = as_id_tensor(input_ids, device)
    eos = set() if ignore_eos else set(eos_ids(target, eos_token_id))
    gen = make_generator(seed, device)
    clock = Timer(device)
    vocab = target.config.get_text_config().vocab_size

    t0 = clock()
    cache = DynamicCache()
    if len(tokens) > 1:
        forward_logits(target, tokens[:-1], cache, 1)
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
