"""How the target stores its weights: as loaded, bf16, int8 or 4-bit (weight-only, CPU).

Why this exists: on a CPU a one-token step reads every weight once, so the
target alone runs at the speed of its weight bytes. A speedup measured against
an fp32 target is a speedup against a slow baseline: the same weights in int8
or 4-bit make the target alone 2-3x faster with no draft at all (docs/measurements.md,
"Honest baselines"). So the target can run at the precision it ships in, and
every speedup is reported against the fastest of these configurations.

Losslessness is untouched: the speculative decoder and the target-alone
baseline run the same target object, so whatever function the quantized target
computes is the p both of them sample from. The fidelity of each precision to
the fp32 model is a separate question, measured in scripts/fidelity.py.

The 4-bit form is group-affine over 32 weights, the form of the GGUF's Q4_K
blocks (one scale and one minimum per 32 weights): where a weight already lies
on such a grid (the packaged target's Q4_K tensors, dequantized) the 4-bit
copy reproduces it up to the kernel's bf16 scales; a layer that is not on a
4-bit grid (the GGUF's Q6_K tensors) is stored as int8 instead of losing bits.
A model loaded from its GGUF (models.gguf_loader) goes further: its Q4_K and Q6_K
tensors keep the file's own codes and scales, in fewer bytes; this module stores
the rest of its layers, and every layer of a dense model.
"""
from __future__ import annotations

import functools
import statistics
import time

import torch

from ...runtime.state import known_runtime, runtime_of
from .kernels import Int8WeightLinear, OneDNNLinear, checked_choice, dense_weight, fast_linear
from .q4a8 import Q4A8Linear, Q4HA8Linear, Q4KA8Linear, Q8A8Linear, fp16_grid, unavailable, usable
from .q4k import exact_codes

# q4a8: the same 4-bit grid (and the 6-bit layers in their own Q6_K form) through specviz's own kernels with int8
# activations, where they build (specviz/models/quant/q4a8.py): a verify of up to 8 rows for about one row's cost.
TARGET_WEIGHTS = ("auto", "as-loaded", "bf16", "int8", "int4", "q4a8")
TARGET_ENV_VAR = "SPECVIZ_TARGET_WEIGHTS"   # force: as-loaded | bf16 | int8 | int4 | q4a8 (auto when unset)
STORED_KINDS = ("bf16", "int8", "int4", "q4a8")
GROUP = 32            # weights per 4-bit group: the GGUF's Q4_K sub-block
# A layer is "on a 4-bit grid" when no weight is further than this share of its group's step from
# it: the packaged target's dequantized Q4_K tensors (fp32) pass, its Q6_K ones are ~50 % off.
ON_GRID = 0.01


def _linear_parts(linear: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The dense fp32 weight and bias of a linear layer on any kernel path."""
    weight = dense_weight(linear).detach().float()
    bias = linear.dense_bias if isinstance(linear, OneDNNLinear) else getattr(linear, "bias", None)
    return weight, None if bias is None else bias.detach().float().clone()


class Bf16WeightLinear(torch.nn.Module):
    """`nn.Linear` with bf16 weights inside a wider model: bf16 product, output in the caller's dtype."""

    def __init__(self, linear: torch.nn.Module):
        super().__init__()
        weight, bias = _linear_parts(linear)
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.register_buffer("bf16_weight", weight.to(torch.bfloat16).contiguous())
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.linear(x.to(torch.bfloat16), self.bf16_weight).to(x.dtype)
        return y if self.bias is None else y + self.bias.to(x.dtype)

    def dense_weight(self) -> torch.Tensor:
        return self.bf16_weight.float()

    @property
    def weight(self) -> torch.Tensor:
        return self.dense_weight()


def _on_grid(wg: torch.Tensor, lo: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """Per group: every weight within 1e-3 of a step from lo + k * step, k in 0..15."""
    k = torch.round((wg - lo[..., None]) / step[..., None])
    return (k <= 15) & ((k * step[..., None] + lo[..., None] - wg).abs() <= 1e-3 * step[..., None])


def _grid_rows(wg: torch.Tensor, exact: bool):
    """int4_grid for a block of rows [r, groups, group]: (scale, minimum) per group."""
    lo, hi = wg.amin(-1), wg.amax(-1)
    span = hi - lo
    scale = (span / 15).clamp_min(1e-12)
    bad = ~_on_grid(wg, lo, scale).all(-1) if exact else None
    if exact and bad.any():   # a group without both end codes: its step is a gap between its values
        sub, sub_lo, sub_span = wg[bad], lo[bad], span[bad]
        gaps = sub.sort(-1).values.diff(dim=-1)
        gaps = torch.where(gaps > sub_span[..., None] * 1e-4, gaps, torch.full_like(gaps, float("inf"))).amin(-1)
        found = scale[bad]
        for divisor in (3, 2, 1):   # the largest step that puts every weight on the grid wins
            step = gaps / divisor
            ok = torch.isfinite(step) & (sub_span <= 15.001 * step) & _on_grid(sub, sub_lo, step).all(-1)
            found = torch.where(ok, step, found)
        scale[bad] = found
    return scale, lo


def int4_grid(weight: torch.Tensor, group: int = GROUP, rows: int = 256, exact: bool = True):
    """Group-affine 4-bit codes of `weight` [out, in]: (codes 0..15 int32, scale, minimum), both [out, in/group].

    w ~ minimum + code * scale. A dequantized Q4_K group (w = d*sc*q - dmin*m, q in 0..15) is
    reproduced exactly: (max - min) / 15 when it uses both end codes, else the smallest gap
    between its values (or a half or a third of it), checked against every weight. Groups on
    no such grid (6-bit tensors, ordinary weights) keep (max - min) / 15. Blocks of `rows` rows
    keep the temporaries in cache. `exact=False` skips the search: (max - min) / 15 everywhere
    (a draft, which only proposes, needs no exact grid and loads faster).
    """
    out, inp = weight.shape
    wg = weight.reshape(out, inp // group, group)
    scale = torch.empty(out, inp // group)
    lo = torch.empty(out, inp // group)
    codes = torch.empty(out, inp // group, group, dtype=torch.int32)
    for r in range(0, out, rows):
        block = wg[r:r + rows]
        scale[r:r + rows], lo[r:r + rows] = _grid_rows(block, exact)
        codes[r:r + rows] = torch.round((block - lo[r:r + rows, :, None]) / scale[r:r + rows, :, None]).clamp(0, 15)
    return codes.reshape(out, inp), scale, lo


def int4_usable(linear: torch.nn.Module, group: int = GROUP) -> bool:
    """The CPU 4-bit kernel takes layers whose input width is a multiple of the group."""
    weight = dense_weight(linear)
    return (hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and weight.shape[1] % group == 0
            and weight.shape[0] % 16 == 0)


class Int4WeightLinear(torch.nn.Module):
    """`nn.Linear` with 4-bit group-affine weights (32 per group), bf16 activations in the product.

    The kernel is PyTorch's weight-only 4-bit CPU product (`_weight_int4pack_mm_for_cpu`, the
    form gpt-fast's int4 mode uses): w = (code - 8) * scale + zero with bf16 scale and zero.
    Its fp32-scale variant would reproduce a Q4_K weight exactly but ran ~30x slower here.
    """

    row_invariant = True   # as Int8WeightLinear: checked by the row-invariance harness (specviz.runtime.invariance)

    def __init__(self, linear: torch.nn.Module, group: int = GROUP, grid=None, exact: bool = True):
        super().__init__()
        weight, bias = _linear_parts(linear)
        self.in_features, self.out_features, self.group = weight.shape[1], weight.shape[0], group
        codes, scale, lo = grid if grid is not None else int4_grid(weight, group, exact=exact)
        zero = lo + 8 * scale
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.contiguous(), 1))
        sz = torch.stack([scale, zero], -1).transpose(0, 1).contiguous()   # [in/group, out, 2]
        self.register_buffer("scales_and_zeros", sz.to(torch.bfloat16))
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed, self.group, self.scales_and_zeros)
        y = y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias.to(x.dtype)

    def dense_weight(self) -> torch.Tensor:
        """The weights the kernel multiplies by (identity through the kernel itself)."""
        eye = torch.eye(self.in_features, dtype=torch.bfloat16)
        return torch.ops.aten._weight_int4pack_mm_for_cpu(eye, self.packed, self.group,
                                                          self.scales_and_zeros).float().T.contiguous()

    @property
    def weight(self) -> torch.Tensor:
        return self.dense_weight()


def grid_error(weight: torch.Tensor, grid, group: int = GROUP) -> float:
    """The largest distance of a weight from its 4-bit grid point, in steps of its group."""
    codes, scale, lo = grid
    out, inp = weight.shape
    back = codes.reshape(out, inp // group, group).float() * scale[..., None] + lo[..., None]
    return float(((back - weight.reshape(out, inp // group, group)).abs().amax(-1) / scale).max())


def on_int4_grid(linear: torch.nn.Module, group: int = GROUP) -> bool:
    """Whether the layer's weights already lie on a 4-bit group grid (a dequantized Q4_K tensor).

    Every group must be reproduced within ON_GRID of its step; one 6-bit group is enough to say no.
    """
    weight, _ = _linear_parts(linear)
    return grid_error(weight, int4_grid(weight, group), group) <= ON_GRID


def converted_linear(linear: torch.nn.Module, kind: str, strict_grid: bool, q4k=None) -> tuple[torch.nn.Module, str]:
    """`linear` stored as `kind`, and the name its layer count goes by; `q4k`: the GGUF's Q4_K scales of this layer
    (d, sc, dmin, m: the load's weight probe, models.gguf_pair), used by q4a8 where they give its weights bit for
    bit."""
    if kind == "bf16":
        return Bf16WeightLinear(linear), "bf16"
    if kind == "q4a8":
        return _converted_q4a8(linear, strict_grid, q4k)
    if kind == "int8" or not int4_usable(linear):
        return Int8WeightLinear(linear), "int8"
    weight, _ = _linear_parts(linear)
    if not strict_grid:
        return Int4WeightLinear(linear, grid=int4_grid(weight, exact=False)), "int4"
    if grid_error(weight[:64], int4_grid(weight[:64])) > ON_GRID:
        return Int8WeightLinear(linear), "int8"   # a first look is enough to tell a 6-bit tensor
    grid = int4_grid(weight)
    if grid_error(weight, grid) <= ON_GRID:
        return Int4WeightLinear(linear, grid=grid), "int4"
    return Int8WeightLinear(linear), "int8"   # 6-bit and wider tensors keep their bits


def _converted_q4a8(linear: torch.nn.Module, strict_grid: bool, q4k=None) -> tuple[torch.nn.Module, str]:
    """A GGUF Q4_K layer with its own scales as Q4KA8Linear ("q4k", 0.59 B a weight); another on the 4-bit grid as
    Q4A8Linear ("q4a8", fp32 scales: 0.75 B); another (a 6-bit tensor) as Q8A8Linear ("q8a8", 1 B).
    `strict_grid=False` (a draft): every layer not Q4_K requantized to 4 bits with fp16 scales (Q4HA8Linear, "q4h":
    0.625 B). Widths the kernels do not take stay on PyTorch's int8. (A target's Q6_K layers keep their own form
    where the GGUF loader places them from the file's blocks.)"""
    weight, bias = _linear_parts(linear)
    if not usable(weight.shape[1]):
        return Int8WeightLinear(linear), "int8"
    codes = None if q4k is None else exact_codes(weight, q4k)
    if codes is not None:   # the GGUF's own values, the dense weight bit for bit
        return Q4KA8Linear(weight, bias, (codes, *q4k)), "q4k"
    if not strict_grid:   # a grid of our own (a draft): its scales in fp16, 0.625 B a weight against 0.75
        return Q4HA8Linear(weight, bias, fp16_grid(weight, *int4_grid(weight, exact=False)[1:])), "q4h"
    if grid_error(weight[:64], int4_grid(weight[:64])) <= ON_GRID:
        grid = int4_grid(weight)
        if grid_error(weight, grid) <= ON_GRID:
            return Q4A8Linear(weight, bias, grid), "q4a8"
    return Q8A8Linear(weight, bias), "q8a8"


LINEAR_TYPES = (torch.nn.Linear, OneDNNLinear)


def convert_target_weights(model: torch.nn.Module, kind: str, strict_grid: bool = True) -> dict[str, int]:
    """Store every linear layer of `model` as `kind` (bf16 | int8 | int4 | q4a8), in place; returns layer counts.

    int4 and q4a8: layers on a 4-bit group grid become 4-bit, the others int8 (`strict_grid=False`:
    every layer the kernel takes becomes 4-bit, requantized if need be). A dense model carries no GGUF scales, so
    none of its layers is "q4k" (a model loaded from its GGUF keeps them: models.gguf_loader). Records the kind on
    the model.
    """
    if kind not in STORED_KINDS:
        raise ValueError(f"unknown target weights {kind!r}")
    counts: dict[str, int] = {}
    for _, module in list(model.named_modules()):
        for name, child in list(module.named_children()):
            if type(child) in LINEAR_TYPES:
                new, got = converted_linear(child, kind, strict_grid)
                setattr(module, name, new)
                counts[got] = counts.get(got, 0) + 1
    record_target_weights(model, kind)
    return counts


def record_target_weights(model, kind: str) -> None:
    """Say in the model's Runtime how its weights are stored; the kernels are the storage's own."""
    runtime = runtime_of(model)
    runtime.target_weights = runtime.linear_path = kind
    runtime.store_linear = functools.partial(stored_linear, path=kind)


def target_weights(model) -> str:
    """How the model's weights are stored: "as-loaded", "bf16", "int8", "int4" or "q4a8"."""
    return known_runtime(model).target_weights


def weights_usable(kind: str, device, dtype) -> bool:
    """Whether `kind` runs (and means something) for a model on `device` in `dtype`."""
    if kind == "as-loaded":
        return True
    if torch.device(device).type != "cpu":
        return False
    if kind == "bf16":
        return dtype == torch.float32
    if kind == "int8":
        return hasattr(torch, "_weight_int8pack_mm")
    if kind == "q4a8":   # builds the kernels on first use (about a minute, then cached)

        return unavailable() is None
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu")


def q4a8_fallback(choice: str) -> str:
    """`choice`, or "int4" for a q4a8 that cannot run here (no compiler, a failed build, not x86-64)."""
    return "int4" if choice == "q4a8" and not weights_usable("q4a8", "cpu", torch.float32) else choice


def resolve_target_weights(choice: str, device, dtype) -> str:
    """A concrete choice for `choice`; "auto" stays "auto" where it must be measured (a CPU)."""
    choice = checked_choice(choice, TARGET_WEIGHTS, "target weights", TARGET_ENV_VAR)
    if choice == "bf16" and dtype == torch.bfloat16:
        return "as-loaded"
    if choice == "q4a8" and torch.device(device).type == "cpu":
        return choice   # checked at load: where the kernels do not build, PyTorch's int4 runs (q4a8_fallback)
    if choice not in ("auto", "as-loaded") and not weights_usable(choice, device, dtype):
        raise ValueError(f"{choice} target weights run on a CPU only" + (
            " (bf16: with an fp32 pair)" if choice == "bf16" else ""))
    if choice == "auto" and torch.device(device).type != "cpu":
        return "as-loaded"
    return choice


def candidate_weights(device, dtype) -> list[str]:
    """Every target configuration that can run here, the as-loaded one first."""
    return ["as-loaded"] + [k for k in STORED_KINDS if weights_usable(k, device, dtype)]


PROBE_ROWS = (1, 4)   # a token of the target alone, and a verify (K = 3)


def probe_target_weights(model, kinds: list[str], repeats: int = 7) -> dict:
    """Time the model's largest linear layer at 1 and 4 rows in each of `kinds` (medians, interleaved).

    One row is a token of the target alone, four a verify: auto picks the configuration whose sum
    is smallest, so the target alone stays fast (speculation is measured against its hardest
    baseline) and a kind whose verify costs two passes (PyTorch's int4 at 5+ rows) does not win on
    one row alone. Converting one layer and timing it takes well under a second.
    "ms": the 1-row times, "ms_verify": the 4-row ones.
    """
    linears = [(n, m) for n, m in model.named_modules()
               if type(m) in LINEAR_TYPES and m is not model.get_output_embeddings()]
    if not linears:
        return {"choice": "as-loaded", "reason": "no linear layers"}
    _, layer = max(linears, key=lambda nm: dense_weight(nm[1]).numel())
    return probe_layer(layer, kinds, repeats=repeats)


def probe_layer(layer: torch.nn.Module, kinds: list[str], repeats: int = 7, strict_grid: bool = False,
                made: dict | None = None) -> dict:
    """`probe_target_weights` on one linear layer, each kind stored as `converted_linear(..., strict_grid)` stores it
    unless `made` holds it already (a GGUF's layer placed from its blocks, as the load will place it)."""
    variants = {"as-loaded": layer}
    for kind in kinds:
        if kind != "as-loaded":
            variants[kind] = (made or {}).get(kind) or converted_linear(layer, kind, strict_grid)[0]
    width = dense_weight(layer).shape[1]
    xs = {rows: torch.randn(1, rows, width, dtype=dense_weight(layer).dtype) for rows in PROBE_ROWS}
    times: dict[tuple[str, int], list[float]] = {(k, r): [] for k in variants for r in PROBE_ROWS}
    with torch.inference_mode():
        for rep in range(repeats + 1):
            for (kind, rows), seen in times.items():
                t0 = time.perf_counter()
                variants[kind](xs[rows])
                if rep:   # the first pass warms caches and kernels
                    seen.append(time.perf_counter() - t0)
    med = {key: statistics.median(v) for key, v in times.items()}
    score = {k: sum(med[(k, r)] for r in PROBE_ROWS) for k in variants}
    return {"choice": min(score, key=score.get), "layer": "x".join(map(str, dense_weight(layer).shape[::-1])),
            "ms": {k: round(med[(k, 1)] * 1e3, 3) for k in variants},
            "ms_verify": {k: round(med[(k, PROBE_ROWS[-1])] * 1e3, 3) for k in variants}}


def stored_linear(linear: torch.nn.Module, path: str) -> torch.nn.Module:
    """`linear` stored like the rest of a model whose linear path is `path` (a new layer, e.g. a trimmed head)."""
    if path == "int4":
        return Int4WeightLinear(linear, exact=False) if int4_usable(linear) else Int8WeightLinear(linear)
    if path == "q4a8":
        return _converted_q4a8(linear, strict_grid=False)[0]
    if path == "bf16":
        return Bf16WeightLinear(linear)
    return fast_linear(linear, path)


def weights_name(kind: str, dtype: torch.dtype) -> str:
    """A configuration as people name it: "int4", "int8", "bf16", or the dtype for weights kept as loaded."""
    if kind != "as-loaded":
        return kind
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, str(dtype))


def weights_label(model) -> str:
    """`weights_name` of a loaded model (its stored kind, else the dtype of its parameters)."""
    kind = target_weights(model)
    try:
        dtype = next(model.parameters()).dtype
    except (AttributeError, StopIteration):   # not a torch module (a test double)
        return kind
    return weights_name(kind, dtype)
