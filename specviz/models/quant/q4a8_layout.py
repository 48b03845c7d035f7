"""The packed weight layouts csrc/q4a8.cpp reads, and the same math in PyTorch (the tests' reference).

Why a module of its own: the layouts (q4, q4k, q4h, q8: where each code, scale and minimum lies, in the order the
kernel reads them) and their reference math are data, testable without a compiler; q4a8.py builds the extension and
holds the layers that use them. TILE, GROUP and ROWS must match csrc/q4a8.h.
"""
from __future__ import annotations

import torch

from .q4k import SUPER   # 256 inputs per Q4_K super-block (one d and dmin per column)

TILE, GROUP, ROWS = 16, 32, 8    # must match csrc/q4a8.h
K4_BLOCK, K6_BLOCK = 2432, 3392   # bytes per (tile, super-block of 256 inputs) of q4k and q6k: csrc/q4a8.h's


# ------------------------------------------------------------------ packing (the layout the kernel reads in order)

def _padded(t: torch.Tensor, rows: int) -> torch.Tensor:
    """`t` with zero rows appended up to `rows` (an output tile of 16 columns is always whole)."""
    return t if t.shape[0] == rows else torch.cat([t, t.new_zeros(rows - t.shape[0], *t.shape[1:])])


def pack_q4(codes: torch.Tensor, scale: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
    """codes [N, K] in 0..15, scale and lo [N, K/32] -> uint8 [tiles, K/32, 384].

    Per 16 output columns and group of 32 inputs: 4 x 64 bytes of codes, then 16 fp32 scales, then
    16 fp32 minimums, in the order the kernel reads them. Byte col*4+i of 64-byte block p holds input
    8p+i of the group in its low nibble and input 8p+4+i in its high nibble.
    """
    n, k = codes.shape
    tiles, g = -(-n // TILE), k // GROUP
    c = _padded(codes.to(torch.uint8), tiles * TILE).reshape(tiles, TILE, g, 4, 2, 4).permute(0, 2, 3, 4, 1, 5)
    nibbles = (c[:, :, :, 0] | (c[:, :, :, 1] << 4)).reshape(tiles, g, TILE * GROUP // 2)

    def floats(t):
        t = _padded(t.float(), tiles * TILE).reshape(tiles, TILE, g).transpose(1, 2).contiguous()
        return t.view(torch.uint8).reshape(tiles, g, TILE * 4)

    return torch.cat([nibbles, floats(scale), floats(lo)], -1).contiguous()


def unpack_q4(packed: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pack_q4 undone: (codes [n, K] int32, scale, lo)."""
    tiles, g, _ = packed.shape
    nib = packed[..., :TILE * GROUP // 2].reshape(tiles, g, 4, TILE, 4)
    c = torch.stack([nib & 15, nib >> 4], 3)   # [tiles, g, p, h, col, i]
    codes = c.permute(0, 4, 1, 2, 3, 5).reshape(tiles * TILE, g * GROUP)[:n].to(torch.int32)

    def floats(lo_byte):
        t = packed[..., lo_byte:lo_byte + TILE * 4].contiguous().view(torch.float32)   # [tiles, g, 16]
        return t.transpose(1, 2).reshape(tiles * TILE, g)[:n]

    return codes, floats(TILE * GROUP // 2), floats(TILE * GROUP // 2 + TILE * 4)


def _tiled(t: torch.Tensor, tiles: int) -> torch.Tensor:
    """[N, B] -> [tiles, B, 16] (a tile's 16 columns side by side), zero columns appended."""
    return _padded(t, tiles * TILE).reshape(tiles, TILE, t.shape[1]).transpose(1, 2).contiguous()


def pack_q4k(codes: torch.Tensor, d, sc, dmin, m) -> torch.Tensor:
    """Q4_K's own scales: codes [N, K] 0..15, sc and m [N, K/32] 0..63, d and dmin [N, K/256] -> [tiles, K/256, 2432].

    Per 16 output columns and super-block of 256 inputs: 16 fp32 d, 16 fp32 -dmin, then per group
    of 32 the 256 code bytes of pack_q4 followed by 16 sub-scale bytes and 16 sub-minimum bytes.
    """
    n, k = codes.shape
    tiles, s = -(-n // TILE), k // SUPER
    groups = pack_q4(codes, sc.float(), m.float())[..., :TILE * GROUP // 2].reshape(tiles, s, 8, TILE * GROUP // 2)
    small = torch.cat([_tiled(sc.to(torch.uint8), tiles), _tiled(m.to(torch.uint8), tiles)], -1)   # [tiles, G, 32]
    body = torch.cat([groups, small.reshape(tiles, s, 8, 2 * TILE)], -1).reshape(tiles, s, -1)
    head = torch.cat([_tiled(d.float(), tiles), _tiled(-dmin.float(), tiles)], -1)   # [tiles, S, 32] fp32
    return torch.cat([head.view(torch.uint8), body], -1).contiguous()


def unpack_q4k(packed: torch.Tensor, n: int):
    """pack_q4k undone: (codes [n, K] int32, d, sc, dmin, m)."""
    tiles, s, _ = packed.shape
    head = packed[..., :2 * TILE * 4].contiguous().view(torch.float32)   # [tiles, S, 32]
    body = packed[..., 2 * TILE * 4:].reshape(tiles, s * 8, TILE * GROUP // 2 + 2 * TILE)
    as_q4 = torch.cat([body[..., :TILE * GROUP // 2], torch.zeros(tiles, s * 8, 2 * TILE * 4, dtype=torch.uint8)], -1)
    codes = unpack_q4(as_q4, n)[0]

    def columns(t):   # [tiles, B, 16] -> [n, B]
        return t.transpose(1, 2).reshape(tiles * TILE, -1)[:n]

    sc, m = (columns(body[..., TILE * GROUP // 2 + i * TILE:TILE * GROUP // 2 + (i + 1) * TILE]) for i in (0, 1))
    return codes, columns(head[..., :TILE]), sc, -columns(head[..., TILE:]), m


def pack_q4h(codes: torch.Tensor, scale: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
    """codes [N, K] in 0..15, fp16 scale and lo [N, K/32] -> uint8 [tiles, K/32, 320]: pack_q4 with 16 fp16 scales and
    16 fp16 minimums after each group's codes."""
    n, k = codes.shape
    tiles, g = -(-n // TILE), k // GROUP
    nibbles = pack_q4(codes, scale.float(), lo.float())[..., :TILE * GROUP // 2]

    def halves(t):
        return _tiled(t.to(torch.float16), tiles).view(torch.uint8)   # [tiles, G, 32]

    return torch.cat([nibbles, halves(scale), halves(lo)], -1).contiguous()


def unpack_q4h(packed: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pack_q4h undone: (codes [n, K] int32, scale fp16, lo fp16)."""
    tiles, g, _ = packed.shape
    codes_bytes = TILE * GROUP // 2
    as_q4 = torch.cat([packed[..., :codes_bytes], torch.zeros(tiles, g, 2 * TILE * 4, dtype=torch.uint8)], -1)

    def halves(at):   # [tiles, G, 16] fp16 -> [n, G]
        t = packed[..., at:at + 2 * TILE].contiguous().view(torch.float16)
        return t.transpose(1, 2).reshape(tiles * TILE, g)[:n]

    return unpack_q4(as_q4, n)[0], halves(codes_bytes), halves(codes_bytes + 2 * TILE)


def fp16_grid(weight: torch.Tensor, scale: torch.Tensor, lo: torch.Tensor):
    """A 4-bit grid (scale, minimum per 32, fp32) moved to fp16 values, each weight's code found again for them:
    (codes 0..15 int32, scale fp16, lo fp16). A group whose step rounds to zero keeps code 0 (its minimum)."""
    out, inp = weight.shape
    scale_h, lo_h = scale.to(torch.float16), lo.to(torch.float16)
    step = scale_h.float()[..., None]
    wg = weight.float().reshape(out, -1, GROUP)
    codes = torch.where(step > 0, torch.round((wg - lo_h.float()[..., None]) / step.clamp_min(1e-30)), 0.0)
    return codes.clamp(0, 15).to(torch.int32).reshape(out, inp), scale_h, lo_h


Q6_GROUP = TILE * GROUP // 2 + TILE * GROUP // 4 + 2 * TILE   # 416: low 4 bits, high 2 bits, 2 x 16 sub-scales


def pack_q6k(codes: torch.Tensor, d: torch.Tensor, sc: torch.Tensor) -> torch.Tensor:
    """Q6_K's own values: codes [N, K] 0..63 (the GGUF's q + 32), sc [N, K/16] int8, d [N, K/256] fp16 ->
    uint8 [tiles, K/256, 3392].

    Per 16 output columns and super-block of 256 inputs: 16 fp32 d, then per group of 32 inputs the codes' low 4
    bits as pack_q4 lays out codes (256 bytes), their high 2 bits (128 bytes: the 8 code vectors of 64 bytes the
    kernel forms, vector v's byte b holding column b // 4's input 4v + b % 4, have their high bits at bits 2(v % 4)
    of byte b of 64-byte block v // 4), then the 16 sub-scales of inputs 0-15 and the 16 of inputs 16-31.
    """
    n, k = codes.shape
    tiles, s, g = -(-n // TILE), k // SUPER, k // GROUP
    codes = codes.to(torch.uint8)
    zero = torch.zeros(n, g)
    low = pack_q4(codes & 15, zero, zero)[..., :TILE * GROUP // 2]                          # [tiles, G, 256]
    hv = (_padded(codes >> 4, tiles * TILE).reshape(tiles, TILE, g, 8, 4).permute(0, 2, 3, 1, 4)
          .reshape(tiles, g, 2, 4, TILE * 4))                                   # [tiles, G, block, v % 4, 64]
    high = (hv[:, :, :, 0] | (hv[:, :, :, 1] << 2) | (hv[:, :, :, 2] << 4) | (hv[:, :, :, 3] << 6))
    scales = _tiled(sc.to(torch.int8).view(torch.uint8), tiles).reshape(tiles, g, 2 * TILE)
    body = torch.cat([low, high.reshape(tiles, g, -1), scales], -1).reshape(tiles, s, -1)
    return torch.cat([_tiled(d.float(), tiles).view(torch.uint8), body], -1).contiguous()


def unpack_q6k(packed: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pack_q6k undone: (codes [n, K] int32 0..63, d fp32 [n, K/256], sc int8 [n, K/16])."""
    tiles, s, _ = packed.shape
    head = packed[..., :TILE * 4].contiguous().view(torch.float32)                            # [tiles, S, 16]
    body = packed[..., TILE * 4:].reshape(tiles, s * 8, Q6_GROUP)
    g, half = s * 8, TILE * GROUP // 2
    as_q4 = torch.cat([body[..., :half], torch.zeros(tiles, g, 2 * TILE * 4, dtype=torch.uint8)], -1)
    low = unpack_q4(as_q4, n)[0]
    high = body[..., half:half + TILE * GROUP // 4].reshape(tiles, g, 2, 1, TILE * 4)
    hv = (high >> torch.tensor([0, 2, 4, 6], dtype=torch.uint8).reshape(1, 1, 1, 4, 1)) & 3   # [tiles, G, 2, 4, 64]
    hv = hv.reshape(tiles, g, 8, TILE, 4).permute(0, 3, 1, 2, 4).reshape(tiles * TILE, g * GROUP)[:n]

    def columns(t):   # [tiles, B, 16] -> [n, B]
        return t.transpose(1, 2).reshape(tiles * TILE, -1)[:n]

    sc = columns(body[..., half + TILE * GROUP // 4:].reshape(tiles, g * 2, TILE).contiguous().view(torch.int8))
    return low | (hv.to(torch.int32) << 4), columns(head), sc


def pack_q8(wq: torch.Tensor) -> torch.Tensor:
    """int8 weights [N, K] (-127..127) -> uint8 [tiles, K/32, 512], stored +128 (unsigned for vpdpbusd).

    Per 16 output columns and group: 8 blocks of 64 bytes; byte col*4+i of block k is input 4k+i.
    """
    n, k = wq.shape
    tiles, g = -(-n // TILE), k // GROUP
    w = (_padded(wq.to(torch.int16), tiles * TILE) + 128).to(torch.uint8)
    return w.reshape(tiles, TILE, g, 8, 4).permute(0, 2, 3, 1, 4).reshape(tiles, g, TILE * GROUP).contiguous()


def unpack_q8(packed: torch.Tensor, n: int) -> torch.Tensor:
    tiles, g, _ = packed.shape
    w = packed.reshape(tiles, g, 8, TILE, 4).permute(0, 3, 1, 2, 4).reshape(tiles * TILE, g * GROUP)[:n]
    return (w.to(torch.int16) - 128).to(torch.int8)


# ------------------------------------------------------------------ the same math in PyTorch (the tests' reference)

def quantize_reference(x: torch.Tensor):
    """Per row and block of 32, as the kernel does: (q int8, d, m = d * sum(q), sum(q))."""
    m_rows, k = x.shape
    xb = x.float().reshape(m_rows, k // GROUP, GROUP)
    d = xb.abs().amax(-1) / 127
    inv = torch.where(d != 0, 1 / d, torch.zeros_like(d))
    q = torch.round(xb * inv[..., None]).clamp(-127, 127)
    s = q.sum(-1)
    return q.to(torch.int8).reshape(m_rows, k), d, d * s, s.to(torch.int32)


def _fma32(a, b, c):
    """fp32 fused multiply-add, through float64 (exact product; a rare double rounding aside)."""
    return (a.double() * b.double() + c.double()).float()


def q4_reference(x: torch.Tensor, codes, scale, lo) -> torch.Tensor:
    """The kernel's 4-bit product, step by step in PyTorch: blocks in order, fp32 between them."""
    q, d, m, _ = quantize_reference(x)
    n, k = codes.shape
    g = k // GROUP
    dots = torch.einsum("rgi,ngi->rng", q.double().reshape(-1, g, GROUP), codes.double().reshape(n, g, GROUP)).float()
    acc = torch.zeros(x.shape[0], n)
    for j in range(g):
        sd = scale[:, j][None, :] * d[:, j][:, None]
        acc = _fma32(dots[..., j], sd, acc)
        acc = _fma32(lo[:, j][None, :].expand_as(acc), m[:, j][:, None].expand_as(acc), acc)
    return acc


def q6k_reference(x: torch.Tensor, codes, d, sc) -> torch.Tensor:
    """The kernel's Q6_K product in PyTorch: per group, its two halves of 16 in order, each
    acc = fma(float(dot(codes, q) - 32 * sum(q)), (sc * d) * step, acc), fp32 between them."""
    q, step, _, _ = quantize_reference(x)
    n, k = codes.shape
    h = k // 16
    qh = q.double().reshape(-1, h, 16)
    dots = torch.einsum("rhi,nhi->rnh", qh, codes.double().reshape(n, h, 16)) - 32 * qh.sum(-1)[:, None, :]
    ds = sc.float() * d.float().repeat_interleave(SUPER // 16, 1)   # [n, K/16], exact
    acc = torch.zeros(x.shape[0], n)
    for j in range(h):
        acc = _fma32(dots[..., j].float(), ds[:, j][None, :] * step[:, j // 2][:, None], acc)
    return acc


def q8_reference(x: torch.Tensor, wq: torch.Tensor) -> torch.Tensor:
    """The kernel's int8 product before the per-column weight scale, in PyTorch."""
    q, d, _, _ = quantize_reference(x)
    n, k = wq.shape
    g = k // GROUP
    dots = torch.einsum("rgi,ngi->rng", q.double().reshape(-1, g, GROUP), wq.double().reshape(n, g, GROUP)).float()
    acc = torch.zeros(x.shape[0], n)
    for j in range(g):
        acc = _fma32(dots[..., j], d[:, j][:, None].expand_as(acc), acc)
    return acc
