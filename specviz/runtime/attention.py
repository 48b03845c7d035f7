"""Attention that computes every query row exactly as a one-token step computes it.

Why this exists: a verify reads K+1 positions in one forward, and greedy speculative
output is bit-identical to the target alone only if each of those rows comes out of
the forward bit for bit as the one-token step that the target alone runs at that
position. The weight-only products are row-invariant (each output row is the same
sequence of operations whatever the number of rows; tests/test_row_invariance.py
checks it), but SDPA is not: one call over K+1 masked queries reduces over the keys
in another order than K+1 one-query calls, so logits differ in the last bits and a
near-tie flips a greedy token (docs/design.md, "Bit-identical verify").

So the target's attention is registered as ``ROWS`` ("sdpa_rows"): a forward of one
query row is transformers' own SDPA call, untouched; a forward of a few rows (a
verify, a tree, a short prompt: up to ``MAX_ROWS``) makes one such one-query call per
row over exactly the keys that row may see, gathered in cache order and without a
mask, which is what the one-token step at that position reads. A one-query step on a
static cache (a mask over a preallocated buffer) is brought to the same form, so
static and dynamic caches compute the same thing. Long prefills keep the batched
kernel: both the target alone and the speculative decoder read the prompt through
the same `prefill`, so it needs no row invariance.

Under torch.compile or a CUDA-graph capture the mask's content is not known on the
host, so there the function is plain SDPA (the GPU check reports what diverges).

On a CPU where specviz's extension is built (specviz.models.quant.q4a8, csrc/attention.cpp), every
one-query row, the one-token step's too, goes through its one-query kernel instead: all rows of a layer
in one call, each (row, head) one fixed sequence of fp32 operations, so the rows are still the one-token
step's bit for bit, and a verify of 8 rows no longer makes 8 SDPA calls a layer. The choice
is made when models are loaded (`runtime.setup.configure`), so a run and its target-alone baseline never compute
differently.
"""
from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

ROWS = "sdpa_rows"
MAX_ROWS = 64   # a verify is at most MAX_K + 1 rows, a tree at most its node budget + the pending tokens


def _capturing() -> bool:
    """True inside torch.compile's tracing or a CUDA-graph capture, where the mask cannot be read on the host."""
    if torch.compiler.is_compiling():
        return True
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _row_keys(attention_mask: torch.Tensor | None, q_length: int, kv_length: int) -> list[int | torch.Tensor]:
    """For each query row, the keys it may see: a length n (the first n keys) or the indices of a tree branch.

    No mask means what transformers' SDPA call means by it: causal, aligned top-left (row i sees keys
    0..i; it leaves the mask out only when the keys are the queries themselves, or a static cache's
    first prefill, where it cuts the keys to the queries' length). A mask is read once per forward: every
    layer gets the same mask object, so the answer for the last one is kept (with the mask, so
    its identity cannot be reused by another tensor).
    """
    global _last
    if attention_mask is None:
        return [i + 1 for i in range(q_length)]
    last = _last
    if last is not None and last[0] is attention_mask and last[1] == (q_length, kv_length):
        return last[2]
    if attention_mask.shape[0] != 1:
        raise ValueError("row-invariant attention decodes one sequence at a time")
    mask = attention_mask[0, 0]
    allowed = (mask if mask.dtype == torch.bool else mask == 0).expand(q_length, kv_length).cpu()
    keys: list[int | torch.Tensor] = []
    for row in allowed:
        index = row.nonzero()[:, 0]
        n = int(index.numel())
        keys.append(n if n and int(index[-1]) == n - 1 else index)
    _last = (attention_mask, (q_length, kv_length), keys)
    return keys


_last = None


KERNEL_ENV = "SPECVIZ_ATTENTION"   # "sdpa": keep PyTorch's SDPA for one-query rows on a CPU (read by runtime.setup)


_kernel = None   # the extension whose one-query attention rows use, or None: set by runtime.setup.configure


def use_kernel(extension) -> None:
    """Rows use `extension.one_query_attention` from now on (None: PyTorch's SDPA). Only runtime.setup.configure calls
    it, when models are loaded: the runtime imports nothing above it, so the models' layer hands the extension in."""
    global _kernel
    _kernel = extension


def kernel():
    """specviz's compiled extension where its one-query attention runs here, else None: what the process was
    configured with (runtime.setup), the same for every forward until models are loaded again."""
    return _kernel


def _kernel_fits(query, key, kwargs) -> bool:
    """Whether the kernel computes what SDPA would here: one CPU sequence in fp32/bf16, no softcap or sinks."""
    return (query.device.type == "cpu" and query.shape[0] == 1 and query.dtype == key.dtype
            and query.dtype in (torch.float32, torch.bfloat16) and query.shape[-1] % 8 == 0
            and query.shape[1] % key.shape[1] == 0 and not kwargs.get("softcap") and kwargs.get("s_aux") is None
            and not _capturing())


def _key_lists(keys: list[int | torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' keys as the kernel takes them: every row's key indices concatenated, and where each row starts."""
    lists = [torch.arange(k) if isinstance(k, int) else k.to("cpu", torch.int64) for k in keys]
    offsets = torch.tensor([0] + [int(t.numel()) for t in lists]).cumsum(0)
    return torch.cat(lists), offsets


class Rows:
    """The keys each query row of one forward may see, as the kernel takes them (built once, shared by every layer)."""

    def __init__(self, lists: list[int | torch.Tensor]):
        self.flat, self.offsets = _key_lists(lists)


_lists = None   # (tag, Rows): every layer of a forward asks for the same rows' keys


def _kernel_rows(query, key, value, attention_mask, scaling: float | None) -> torch.Tensor:
    """[1, H, R, D] queries over their keys -> [1, R, H, D] in the query's dtype, one kernel call."""
    global _lists
    q_length, kv_length = query.shape[2], key.shape[2]
    if q_length == 1 and attention_mask is None:   # the one-token step on a dynamic cache: every key
        tag = ("all", kv_length)
        if _lists is None or _lists[0] != tag:
            _lists = (tag, Rows([kv_length]))
    else:
        keys = _row_keys(attention_mask, q_length, kv_length)   # the same list object for every layer
        if _lists is None or _lists[0] is not keys:
            _lists = (keys, Rows(keys))
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    return rows_attention(query[0].transpose(0, 1), key[0], value[0], _lists[1], scale).unsqueeze(0)


def causal_rows(start: int, n: int) -> Rows:
    """`n` new positions after `start` cached ones in one chain: row i sees keys 0..start+i."""
    return Rows([start + i + 1 for i in range(n)])


def masked_rows(allowed: torch.Tensor) -> Rows:
    """Rows under a mask [n, kv] of allowed keys (a tree: the prefix, the pending tokens, its ancestors, itself)."""
    return Rows([row.nonzero()[:, 0] for row in allowed.cpu()])


def rows_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, rows: Rows,
                   scaling: float) -> torch.Tensor:
    """The kernel's call, for transformers' attention (`_kernel_rows`) and the lean layer stack (models.lean_forward)
    alike: query [n, H, D], key and value [Hkv, kv, D] -> [n, H, D] in the query's dtype, the same fp32 sequence
    per (row, head) whatever the other rows."""
    out = kernel().one_query_attention(query.float().contiguous(), key.contiguous(), value.contiguous(), rows.flat,
                                       rows.offsets, float(scaling))
    return out.to(query.dtype)


def _one_row(module, query, key, value, keep: int | torch.Tensor, **kwargs) -> torch.Tensor:
    """The one-token step's own SDPA call for one query [B, H, 1, D] over the keys `keep`."""
    if isinstance(keep, int):   # a prefix of the cache: what the one-token step at this position reads
        k, v = key[:, :, :keep], value[:, :, :keep]
    else:                       # a tree node: its prefix and ancestors, gathered as one branch's cache holds them
        index = keep.to(key.device)
        k, v = key.index_select(2, index), value.index_select(2, index)
    return sdpa_attention_forward(module, query, k, v, None, **kwargs)[0]


def row_invariant_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                            scaling: float | None = None, **kwargs):
    """transformers' attention signature: query [B, H, q, D], key/value [B, Hkv, kv, D] -> ([B, q, H, D], None).

    `is_causal`, when a model passes it, rides in `kwargs`: the batched kernel gets it as it always did, and the
    one-query calls never do (a single query row is not causal: it sees every key it is given)."""
    q_length, kv_length = query.shape[2], key.shape[2]
    ext = kernel() if q_length <= MAX_ROWS else None
    if ext is not None and _kernel_fits(query, key, kwargs):
        return _kernel_rows(query, key, value, attention_mask, scaling), None
    plain = q_length > MAX_ROWS or query.shape[0] != 1 or _capturing() or (q_length == 1 and attention_mask is None)
    if plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    kwargs.pop("is_causal", None)
    keys = _row_keys(attention_mask, q_length, kv_length)
    rows = [_one_row(module, query[:, :, i:i + 1], key, value, keys[i], dropout=dropout, scaling=scaling, **kwargs)
            for i in range(q_length)]
    return torch.cat(rows, dim=1), None


def _register() -> None:
    AttentionInterface.register(ROWS, row_invariant_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ROWS, sdpa_mask)


_register()


def use_row_invariant_attention(model) -> bool:
    """Give `model` the row-invariant attention where it runs SDPA today; True when it now has it.

    A model on another implementation (eager, flash kernels of a Hub model) keeps it:
    `has_row_invariant_attention` then says False and the page says why identity is not promised.
    """
    if not row_invariant_attention_possible(model):
        return False
    for config in {id(c): c for c in (model.config, model.config.get_text_config())}.values():
        config._attn_implementation = ROWS
    return True


def has_row_invariant_attention(model) -> bool:
    return getattr(model.config, "_attn_implementation", None) == ROWS


def row_invariant_attention_possible(model) -> bool:
    """Whether `use_row_invariant_attention` gives (or gave) `model` the row-by-row form."""
    return getattr(model.config, "_attn_implementation", None) in ("sdpa", ROWS)
