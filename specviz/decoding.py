"""Helpers shared by every decoding loop: the speculative decoder and the target-alone baseline.

Both loops must agree on how a prompt becomes a tensor, how a cache is
prefilled, how EOS is recognised and how time is measured, or the baseline would
not be a fair reference. Nothing here knows about drafting or the rejection rule.
"""
from __future__ import annotations

import time
from typing import Sequence

import torch
from transformers import DynamicCache

from .limits import DECODER_MAX_NEW_TOKENS


def as_id_tensor(input_ids: Sequence[int] | torch.Tensor, device) -> torch.Tensor:
    """A list of ints or a [1, T] / [T] tensor -> a 1-D int64 tensor on `device`."""
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    if ids.dim() == 2:
        if ids.shape[0] != 1:
            raise ValueError(f"only batch size 1 is supported, got input_ids of shape {tuple(ids.shape)}")
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError("input_ids must hold at least one token")
    return ids.to(device)


def input_device(model) -> torch.device:
    # With accelerate's device_map the embedding may sit on another device than model.device.
    return model.get_input_embeddings().weight.device


def vocab_size(model) -> int:
    return model.config.get_text_config().vocab_size


def eos_ids(model, eos_token_id) -> list[int]:
    if eos_token_id is None:
        eos_token_id = getattr(model.generation_config, "eos_token_id", None)
    if eos_token_id is None:
        return []
    return [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)


def check_budget(max_new_tokens: int, limit: int = DECODER_MAX_NEW_TOKENS) -> None:
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= limit:
        raise ValueError(f"max_new_tokens must be a whole number in [1, {limit}], got {max_new_tokens!r}")


def make_generator(seed: int | None, device) -> torch.Generator:
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


class Timer:
    """Wall clock that waits for queued CUDA work, so per-phase times are honest."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __call__(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


def forward_logits(model, ids: torch.Tensor, cache: DynamicCache | None, keep: int) -> torch.Tensor:
    """Feed `ids` ([T] or [B, T]) after what `cache` holds; logits of the last `keep` positions.

    A 1-D `ids` gives [keep, V] (the decoder's batch of one); a 2-D one gives [B, keep, V].
    """
    batched = ids.dim() == 2
    out = model(input_ids=(ids if batched else ids[None]).to(input_device(model)), cache=cache,
                use_cache=cache is not None, logits_to_keep=keep)
    return out.logits if batched else out.logits[0]


def prefill(model, tokens: torch.Tensor) -> DynamicCache:
    """A cache holding all of `tokens` but the last, which the first step reads."""
    cache = DynamicCache()
    if tokens.shape[-1] > 1:
        forward_logits(model, tokens[..., :-1], cache, 1)
    return cache


def crop_to(cache: DynamicCache, length: int) -> None:
    """Drop cached positions beyond `length` (transformers 5's crop takes a negative count)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def decode_tokens(tokenizer, ids: list[int]) -> list[str]:
    if tokenizer is None:
        return [f"<{i}>" for i in ids]
    return tokenizer.batch_decode([[i] for i in ids])
