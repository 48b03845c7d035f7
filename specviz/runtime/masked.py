"""Forwards under an explicit attention mask and explicit positions: how a draft tree is read in one forward.

A tree's node sits at (last position + its depth) and its row of the 4D attention mask lets it see the whole
prefix, its ancestors and itself only (SpecInfer's tree attention; transformers 5 takes a custom 4D mask as it is).
Afterwards only the accepted path is kept in the KV cache: its keys and values are copied down behind the prefix,
the rest cut. The runtime reads a tree as its depths and its ancestry matrix only; what a tree is, and how it is
drawn and checked, is the engine's (specviz.engine.tree.TreeShape).
"""
from __future__ import annotations

from typing import Sequence

import torch

from .decoding import KVCache, input_device, lean_masked_logits


def attention_mask(model, allowed: torch.Tensor, rows: int) -> torch.Tensor:
    """The 4D mask [rows, 1, Q, KV] of an `allowed` [Q, KV] pattern, in the form the attention kernel expects.

    SDPA (and the flash kernels) take a boolean mask (True = attend); the eager
    kernel adds the mask to its scores, so it gets 0 / the dtype's minimum.
    """
    allowed = allowed.to(input_device(model))[None, None].expand(rows, 1, -1, -1)
    if getattr(model.config, "_attn_implementation", "sdpa") != "eager":
        return allowed
    dtype = model.dtype
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, torch.finfo(dtype).min)


def forward_masked(model, ids: torch.Tensor, cache: KVCache | None, positions: torch.Tensor,
                   allowed: torch.Tensor, keep: int) -> torch.Tensor:
    """Feed `ids` [B, n] after what `cache` holds (None: nothing) with explicit positions [n] and mask [n, KV].

    Returns the logits of the last `keep` positions [B, keep, V]; the cache grows by n.
    """
    lean = lean_masked_logits(model, ids, cache, positions, allowed, keep)   # the same logits, bit for bit
    if lean is not None:
        return lean
    device = input_device(model)
    ids = ids.to(device)
    B, n = ids.shape
    out = model(input_ids=ids, attention_mask=attention_mask(model, allowed, B),
                position_ids=positions.to(device)[None].expand(B, -1), cache=cache.cache if cache else None,
                use_cache=cache is not None, logits_to_keep=keep)
    if cache is not None:
        cache.length += n
    return out.logits


def verify_mask(ancestry: torch.Tensor, seen: int, n_pending: int) -> torch.Tensor:
    """[P + N, seen + P + N] allowed pattern of a verify forward: P pending tokens (causal), then N nodes whose
    `ancestry` [N, N] is True at each node and its ancestors.

    Every node sees the cached prefix, every pending token, its ancestors and itself.
    """
    P, N = n_pending, ancestry.shape[0]
    allowed = torch.zeros(P + N, seen + P + N, dtype=torch.bool)
    allowed[:P, :seen] = True
    allowed[:P, seen:seen + P] = torch.ones(P, P, dtype=torch.bool).tril()
    allowed[P:, :seen + P] = True
    allowed[P:, seen + P:] = ancestry
    return allowed


def verify_positions(depths: Sequence[int], seen: int, n_pending: int) -> torch.Tensor:
    """Positions of a verify forward: the pending tokens in order, each node at the last one's + its `depths`
    (1 for a child of the last token)."""
    last = seen + n_pending - 1
    return torch.cat([torch.arange(seen, last + 1), last + torch.tensor(depths)])


def keep_path(cache: KVCache, prefix: int, slots: list[int]) -> None:
    """Keep the first `prefix` positions of `cache` and then the cache slots `slots` (in order); drop the rest.

    The kept slots' keys and values are copied down to sit right after the prefix
    (a copy of len(slots) positions per layer, not of the whole cache), then the
    tail is cut. A path that is already contiguous after the prefix costs no copy.
    """
    if slots != list(range(prefix, prefix + len(slots))):
        index = torch.tensor(slots)
        for layer in cache.cache.layers:
            for name in ("keys", "values"):
                states = getattr(layer, name)
                states[:, :, prefix:prefix + len(slots)] = states[:, :, index.to(states.device)]
    end = prefix + len(slots)
    if cache.length > end:
        cache.crop(end - cache.length)
