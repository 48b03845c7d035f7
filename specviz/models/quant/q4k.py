"""A GGUF's Q4_K and Q6_K tensors in their own form: codes and scales read from the blocks, and proved exact.

Why this exists: the q4a8 kernel runs near the memory roofline, so bytes are time, and its first 4-bit layout
spends a third of them on fp32 scales and minimums recovered from the dequantized weights. A Q4_K tensor
stores them smaller: per super-block of 256 weights an fp16 d and dmin, per group of 32 a 6-bit sub-scale sc
and sub-minimum m; w = d*sc*q - dmin*m. Those values cannot be recovered with certainty from the fp32 weights
(a group with one distinct code says nothing of its step), so they are read from the GGUF's own blocks:
`q4k_parts` / `q6k_parts` give a tensor's codes and scales as Q4KA8Linear / Q6KA8Linear pack them (the loader,
specviz.models.gguf_loader, has the extension repack the same bytes), `block_scales` the Q4_K scales alone (the
load's weight probe, specviz.models.gguf_pair). `exact_codes` finds the codes from the weights and proves the
result bit for bit (the probed layer, specviz.models.quant.weights): gguf's own dequantizer (the one transformers
uses) computes (d*sc)*q - dmin*m in fp32, every product exact, one rounding at the subtraction, the very operations
`q4k_grid` and the layer's dense weight perform; a layer whose weights do not come out bit for bit keeps the first
layout. `exact_q6k_codes` does the same for Q6_K, the independent check the block readers are tested against.

Imports nothing of specviz: the GGUF loaders (which read blocks) and q4a8.py (which packs) both use it.
"""
from __future__ import annotations

import numpy as np
import torch

SUPER = 256          # weights per Q4_K super-block
BLOCK_BYTES = 144    # fp16 d, fp16 dmin, 12 bytes of packed 6-bit sc and m, 128 bytes of codes
Q6_BLOCK_BYTES = 210  # Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 sub-scales (per 16), fp16 d


def q4k_grid(d, sc, dmin, m) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (column, group of 32): (scale, minimum) = (sc * d, m * (-dmin)), each product exact in fp32."""
    per_group = sc.shape[1] // d.shape[1]
    return (sc.float() * d.float().repeat_interleave(per_group, 1),
            m.float() * (-dmin.float()).repeat_interleave(per_group, 1))


def block_scales(blocks: np.ndarray, rows: int) -> dict[str, torch.Tensor]:
    """Raw Q4_K blocks ([rows * super-blocks, 144] uint8) -> d, dmin fp16 [rows, S]; sc, m uint8 [rows, 8 S]."""
    from gguf.quants import Q4_K

    blocks = np.ascontiguousarray(blocks).reshape(-1, BLOCK_BYTES)
    halves = np.ascontiguousarray(blocks[:, :4]).view(np.float16)   # [n, 2]: d, dmin
    sc, m = Q4_K.get_scale_min(np.ascontiguousarray(blocks[:, 4:4 + Q4_K.K_SCALE_SIZE]))
    out = {"d": halves[:, 0], "dmin": halves[:, 1], "sc": sc, "m": m}
    return {k: torch.from_numpy(np.ascontiguousarray(v)).reshape(rows, -1) for k, v in out.items()}


def q6k_block_scales(blocks: np.ndarray, rows: int) -> dict[str, torch.Tensor]:
    """Raw Q6_K blocks ([rows * super-blocks, 210] uint8) -> q6k_d fp16 [rows, S]; q6k_sc int8 [rows, 16 S]."""
    blocks = np.ascontiguousarray(blocks).reshape(-1, Q6_BLOCK_BYTES)
    out = {"q6k_d": np.ascontiguousarray(blocks[:, 208:210]).view(np.float16)[:, 0],
           "q6k_sc": np.ascontiguousarray(blocks[:, 192:208]).view(np.int8)}
    return {k: torch.from_numpy(np.ascontiguousarray(v)).reshape(rows, -1) for k, v in out.items()}


def exact_q6k_codes(weight: torch.Tensor, scales, rows: int = 512) -> torch.Tensor | None:
    """The Q6_K codes (0..63, the GGUF's q + 32) that, with `scales` (d, sc), give `weight` [N, K] bit for bit as
    gguf's dequantizer computes it, (d * sc) * (q - 32) in fp32; None if none do. A sub-block whose scale is 0 gets
    code 32 (q = 0)."""
    d, sc = scales
    n, k = weight.shape
    if k % SUPER or tuple(d.shape) != (n, k // SUPER) or tuple(sc.shape) != (n, k // 16):
        return None
    step = sc.float() * d.float().repeat_interleave(SUPER // 16, 1)   # exact: fp16 times int8
    codes = torch.empty(n, k // 16, 16, dtype=torch.int32)
    for r in range(0, n, rows):
        w = weight[r:r + rows].float().reshape(-1, k // 16, 16)
        s = step[r:r + rows, :, None]
        q = torch.where(s != 0, torch.round(w / torch.where(s != 0, s, 1)), 0).clamp(-32, 31)
        if not torch.equal(s * q, w):
            return None
        codes[r:r + rows] = (q + 32).to(torch.int32)
    return codes.reshape(n, k)


def exact_codes(weight: torch.Tensor, scales, rows: int = 512) -> torch.Tensor | None:
    """The 4-bit codes that, with `scales` (d, sc, dmin, m), give `weight` [N, K] bit for bit; None if none do
    (another tensor, a wrong shape, weights not from these scales). A group whose scale is 0 gets code 0."""
    d, sc, dmin, m = scales
    n, k = weight.shape
    if k % SUPER or tuple(d.shape) != (n, k // SUPER) or tuple(sc.shape) != (n, k // 32) \
            or tuple(dmin.shape) != tuple(d.shape) or tuple(m.shape) != tuple(sc.shape):
        return None
    scale, lo = q4k_grid(d, sc, dmin, m)
    codes = torch.empty(n, k // 32, 32, dtype=torch.int32)
    for r in range(0, n, rows):
        w = weight[r:r + rows].float().reshape(-1, k // 32, 32)
        s, z = scale[r:r + rows, :, None], lo[r:r + rows, :, None]
        c = torch.where(s > 0, torch.round((w - z) / torch.where(s > 0, s, 1)), 0).clamp(0, 15)
        if not torch.equal(c * s + z, w):
            return None
        codes[r:r + rows] = c.to(torch.int32)
    return codes.reshape(n, k)


def q4k_parts(blocks: np.ndarray, rows: int) -> tuple[torch.Tensor, ...]:
    """A Q4_K tensor's raw blocks ([rows, super-blocks * 144] uint8, straight from the GGUF) -> (codes [rows, K]
    int32 0..15, d, sc, dmin, m) as Q4KA8Linear packs them: the values gguf's dequantizer reads, without forming one
    weight. A group whose step is 0 gets code 0, as `exact_codes` gives it (its weights are its minimum either way)."""
    blocks = np.ascontiguousarray(blocks).reshape(-1, BLOCK_BYTES)
    qs = blocks[:, 16:].reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    codes = torch.from_numpy((qs & np.uint8(15)).reshape(rows, -1)).to(torch.int32)   # [rows, K]: gguf's order
    scales = block_scales(blocks, rows)
    step = scales["sc"].float() * scales["d"].float().repeat_interleave(8, 1)
    if bool((step <= 0).any()):
        codes = torch.where((step > 0).repeat_interleave(32, 1), codes, 0)
    return codes, scales["d"], scales["sc"], scales["dmin"], scales["m"]


def q6k_parts(blocks: np.ndarray, rows: int) -> tuple[torch.Tensor, ...]:
    """A Q6_K tensor's raw blocks ([rows, super-blocks * 210] uint8) -> (codes [rows, K] int32 0..63, the GGUF's
    q + 32; d fp16; sc int8) as Q6KA8Linear packs them. A sub-block whose step is 0 gets code 32 (q = 0), as
    `exact_q6k_codes` gives it."""
    blocks = np.ascontiguousarray(blocks).reshape(-1, Q6_BLOCK_BYTES)
    ql = (blocks[:, :128].reshape(-1, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 15
    qh = (blocks[:, 128:192].reshape(-1, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    q = ql.reshape(-1, 8, 32) | (qh.reshape(-1, 8, 32) << np.uint8(4))
    codes = torch.from_numpy(q.reshape(rows, -1)).to(torch.int32)
    scales = q6k_block_scales(blocks, rows)
    step = scales["q6k_sc"].float() * scales["q6k_d"].float().repeat_interleave(16, 1)
    if bool((step == 0).any()):
        codes = torch.where((step != 0).repeat_interleave(16, 1), codes, 32)
    return codes, scales["q6k_d"], scales["q6k_sc"]
