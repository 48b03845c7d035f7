"""A GGUF's Q4_K scales in their own form, kept beside the dense copy of the model (issue 29, lever 1).

Why this exists: the q4a8 kernel runs near the memory roofline, so bytes are time, and its first 4-bit layout
spends a third of them on fp32 scales and minimums recovered from the dequantized weights. A Q4_K tensor
stores them smaller: per super-block of 256 weights an fp16 d and dmin, per group of 32 a 6-bit sub-scale sc
and sub-minimum m; w = d*sc*q - dmin*m. Those values cannot be recovered with certainty from the fp32 weights
(a group with one distinct code says nothing of its step), so they are read from the GGUF itself while it is
at hand: `extract_scales` (called when the packaged pair is prepared, specviz.models.packaged) writes them,
about 2.6 % of the GGUF, to `q4k-scales.safetensors` in the model's folder; `load_scales` reads them back at
conversion; `exact_codes` finds each weight's code and proves the result bit for bit: gguf's own dequantizer
(the one transformers uses) computes (d*sc)*q - dmin*m in fp32, every product exact, one rounding at the
subtraction, the very operations `q4k_grid` and the layer's dense weight perform. A layer without scales, or
whose weights do not come out bit for bit, keeps the first layout (specviz.models.quant.weights).

Imports nothing of specviz: packaged.py (which prepares) and q4a8.py (which packs) both use it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

SIDECAR = "q4k-scales.safetensors"
SIDECAR6 = "q6k-scales.safetensors"   # the Q6_K tensors' (a file of its own: older versions read SIDECAR as Q4_K only)
SUPER = 256          # weights per Q4_K super-block
BLOCK_BYTES = 144    # fp16 d, fp16 dmin, 12 bytes of packed 6-bit sc and m, 128 bytes of codes
Q6_BLOCK_BYTES = 210  # Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 sub-scales (per 16), fp16 d
Q6K_PARTS = ("q6k_d", "q6k_sc")


def q4k_grid(d, sc, dmin, m) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (column, group of 32): (scale, minimum) = (sc * d, m * (-dmin)), each product exact in fp32."""
    per_group = sc.shape[1] // d.shape[1]
    return (sc.float() * d.float().repeat_interleave(per_group, 1),
            m.float() * (-dmin.float()).repeat_interleave(per_group, 1))


def _reader(path: Path):
    """gguf's GGUFReader, reading its header from a plain view of the mapped file: numpy's memmap subclass costs
    ~10 µs a slice, 13 s for the target's 300 k tokenizer strings; 4 s this way (the same bytes, the same parse)."""
    from gguf import GGUFReader

    class Reader(GGUFReader):
        def _build_fields(self, offs, count):
            self.data = self.data.view(np.ndarray)
            return super()._build_fields(offs, count)

    return Reader(str(path))


def _name_map(config: dict):
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

    arch = next((k for k, v in MODEL_ARCH_NAMES.items() if v == config.get("model_type")), None)
    return None if arch is None else get_tensor_name_map(arch, int(config.get("num_hidden_layers", 0)))


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


def extract_scales(gguf_path: Path, folder: Path, weight_names: list[str]) -> tuple[int, int]:
    """Write the scales of every Q4_K and Q6_K tensor among `weight_names` (the dense copy's, e.g.
    "model.layers.0.mlp.up_proj.weight") to folder/SIDECAR; returns how many of each. The folder's config.json
    names the architecture (gguf's own map turns a name into the GGUF's). Neither kind: no file."""
    from gguf import GGMLQuantizationType

    names = _name_map(json.loads((folder / "config.json").read_text()))
    reader = _reader(gguf_path)
    kinds = {GGMLQuantizationType.Q4_K: (block_scales, SIDECAR),
             GGMLQuantizationType.Q6_K: (q6k_block_scales, SIDECAR6)}
    found_tensors = {t.name: t for t in reader.tensors if t.tensor_type in kinds}
    files: dict[str, dict] = {SIDECAR: {}, SIDECAR6: {}}
    counts = {SIDECAR: 0, SIDECAR6: 0}
    for name in weight_names:
        stem = name.removesuffix(".weight")
        found = names.get_name(stem) if names is not None and name.endswith(".weight") else None
        tensor = found_tensors.get(f"{found}.weight")
        if tensor is None:
            continue
        scales_of, file = kinds[tensor.tensor_type]
        counts[file] += 1
        for key, value in scales_of(tensor.data, int(tensor.data.shape[0])).items():
            files[file][f"{stem}.{key}"] = value
    for file, tensors in files.items():
        if tensors:
            partial = folder / f"{file}.{os.getpid()}.partial"
            save_file(tensors, str(partial), metadata={"source": Path(gguf_path).name})
            os.replace(partial, folder / file)
    return counts[SIDECAR], counts[SIDECAR6]


def weight_names(path: Path) -> list[str]:
    """The tensor names of a safetensors file (its header only)."""
    with safe_open(str(path), framework="pt") as f:
        return list(f.keys())


def load_scales(model, only: set[str] | None = None, parts: tuple[str, ...] = ("d", "sc", "dmin", "m")
                ) -> dict[str, tuple[torch.Tensor, ...]]:
    """{linear layer name: (d, sc, dmin, m)} of its Q4_K tensors from the model's folder, or {} where it has none;
    `parts=Q6K_PARTS`: {name: (d, sc)} of its Q6_K tensors."""
    folder = Path(str(getattr(getattr(model, "config", None), "_name_or_path", "") or ""))
    path = folder / (SIDECAR6 if parts == Q6K_PARTS else SIDECAR)
    if not path.is_file():
        return {}
    found = {}
    with safe_open(str(path), framework="pt") as f:
        stems = {key.rpartition(".")[0] for key in f.keys()}
        for stem in stems if only is None else stems & only:
            found[stem] = tuple(f.get_tensor(f"{stem}.{part}") for part in parts)
    return found



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
