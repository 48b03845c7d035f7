"""Which CPU kernels run the linear layers: PyTorch's default (MKL) or oneDNN on packed weights.

Why this exists: speculative decoding pays only if one target forward over K+1
new tokens costs about one forward over 1. On a CPU without AVX-512 (a 2-core
AMD EPYC with AVX2, fp32) the default path breaks that: the packaged target's
forward over 5 new tokens (a K = 4 verify) took 3.1x a one-token forward,
because every multi-row product repacks the weight. oneDNN on weights packed
once at load time took the same verify to 1.22x, and made the one-token
forward itself faster (369 vs 554 ms). Figures and commands: docs/measurements.md, "CPU kernels".

The choice is per model and made once, at load time: every decoder that runs
the model (specviz's, the target-alone baseline, transformers' generate in the
bench) then uses the same kernels, so comparisons stay fair.
"""
from __future__ import annotations

import functools
import os
import statistics
import time

import torch

from ...runtime.state import known_runtime, runtime_of

LINEAR_PATHS = ("auto", "default", "onednn")
# How the draft's weights are stored. The draft only has to propose: whatever it computes is
# the q the rule divides by, so a cheaper draft changes speed, never the output distribution.
DRAFT_WEIGHTS = ("auto", "as-loaded", "int8", "int4", "q4a8")   # q4a8: specviz's own 4-bit kernels (weights.py)
DRAFT_ENV_VAR = "SPECVIZ_DRAFT_WEIGHTS"   # force: as-loaded | int8 | int4 | q4a8 (auto when unset)
# The row count oneDNN packs weights for. Measured on the packaged pair (AVX2, fp32, 2 threads):
# packed for 2 rows, a target forward over 1 / 2 / 5 / 9 new tokens took 369 / 395 / 449 / 493 ms,
# against 361 ms for 1 token packed for 1 row (whose 5-token verify took 603 ms) and 554 / 1545 /
# 1720 / 1920 ms on the default path. 2 serves the one-token steps and the verifies alike.
ROWS_HINT = 2
ENV_VAR = "SPECVIZ_CPU_LINEAR"   # force a path: default | onednn (auto when unset)


class OneDNNLinear(torch.nn.Module):
    """`nn.Linear` through oneDNN on a weight packed once for `rows_hint` rows (fp32, CPU).

    Packing is the point: an unpacked weight is repacked on every multi-row call,
    which is what made a 5-row product cost ~3.7x a 1-row one. The packed layout
    depends on the row count it is packed for; other counts still run, a little
    slower. Inputs and outputs stay ordinary dense tensors, so the rest of the
    model never sees a oneDNN tensor. The dense weight is dropped (it lives on
    only where something else shares it, e.g. a tied embedding).
    """

    def __init__(self, linear: torch.nn.Linear, rows_hint: int = ROWS_HINT):
        super().__init__()
        self.in_features, self.out_features, self.rows_hint = linear.in_features, linear.out_features, rows_hint
        self.packed_weight = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), rows_hint)
        self.dense_bias = None if linear.bias is None else linear.bias.detach().clone()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.dense_bias, "none", [], "")

    def dense_weight(self) -> torch.Tensor:
        return self.packed_weight.to_dense()

    @property
    def weight(self) -> torch.Tensor:
        # transformers reads `lm_head.weight.dtype/.device` in places; a dense copy is made only then.
        return self.dense_weight()

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"kernel=oneDNN packed for {self.rows_hint} row(s)")


class Int8WeightLinear(torch.nn.Module):
    """`nn.Linear` with int8 weights (one scale per output row), bf16 activations in the product.

    Why: a one-token draft step reads every weight once, so on a CPU it is bound by
    memory traffic; int8 weights read a quarter of fp32's bytes. Measured on the packaged
    draft (AVX2, 2 threads; docs/measurements.md, "Draft weights"): one-token step 83-122 ms against
    191-233 ms in fp32 (bf16 weights: 106-117 ms), c 0.37 -> 0.18. The kernel is PyTorch's weight-only int8 product
    (`torch._weight_int8pack_mm`, the one gpt-fast's int8 mode uses); it wants bf16 inputs,
    so the input is rounded to bf16 and the result returned in the caller's dtype.
    Only for a draft: the target's weights are never touched.
    """

    # Each output row is the same sequence of operations whatever the number of rows (checked by
    # the row-invariance harness, specviz.runtime.invariance): a verify row equals the one-token step's.
    row_invariant = True

    def __init__(self, linear: torch.nn.Module):
        super().__init__()
        weight = dense_weight(linear).detach().float()
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        # The kernel takes bf16 scales: round them first and quantize on that grid. /126 leaves room
        # for bf16's rounding (<0.4 %), so the largest weight of a row still fits in 127 steps.
        scales = (weight.abs().amax(1).clamp_min(1e-12) / 126.0).to(torch.bfloat16)
        grid = torch.round(weight / scales.float()[:, None]).clamp(-127, 127)
        self.register_buffer("int8_weight", grid.to(torch.int8).contiguous())
        self.register_buffer("scales", scales)
        bias = getattr(linear, "bias", None) if not isinstance(linear, OneDNNLinear) else linear.dense_bias
        self.register_buffer("bias", None if bias is None else bias.detach().float().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16)
        y = torch._weight_int8pack_mm(flat, self.int8_weight, self.scales).to(x.dtype)
        y = y.reshape(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias.to(x.dtype)

    def dense_weight(self) -> torch.Tensor:
        return self.int8_weight.float() * self.scales.float()[:, None]

    @property
    def weight(self) -> torch.Tensor:
        # transformers reads `lm_head.weight.dtype/.device` in places; a dense copy is made only then.
        return self.dense_weight()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, weights=int8 per row"


def dense_weight(linear: torch.nn.Module) -> torch.Tensor:
    """The dense [out, in] weight of a linear layer on any path."""
    dense = getattr(linear, "dense_weight", None)
    return dense() if callable(dense) else linear.weight


def int8_usable(device, dtype) -> bool:
    """The weight-only int8 product runs on a CPU, for fp32 and bf16 pairs alike.

    bf16 pairs too: on an AVX-512/AMX Xeon the packaged draft's one-token step took 42 ms in
    int8 against 75 ms in bf16 (c 0.45 -> 0.24; docs/measurements.md, "Honest baselines").
    """
    return (torch.device(device).type == "cpu" and dtype in (torch.float32, torch.bfloat16)
            and hasattr(torch, "_weight_int8pack_mm"))


def checked_choice(choice: str, allowed: tuple, what: str, env_var: str) -> str:
    """`choice` checked against `allowed`; "auto" is replaced by the env var's value when it is set."""
    if choice not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {choice!r}")
    if choice == "auto":
        choice = os.environ.get(env_var, "").strip().lower() or "auto"
        if choice not in allowed:
            raise ValueError(f"{env_var} must be one of {', '.join(a for a in allowed if a != 'auto')}; "
                             f"got {choice!r}")
    return choice


def resolve_draft_weights(choice: str, device, dtype) -> str:
    """"as-loaded", "int8" or "int4" for `choice` = auto | as-loaded | int8 | int4 (the env var overrides auto)."""
    choice = checked_choice(choice, DRAFT_WEIGHTS, "draft weights", DRAFT_ENV_VAR)
    if choice == "auto":   # 4-bit where the kernel exists: the packaged draft's step 33 ms against 46 in int8
        if not int8_usable(device, dtype):
            return "as-loaded"
        return "int4" if hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") else "int8"
    if choice in ("int8", "int4", "q4a8") and not int8_usable(device, dtype):
        raise ValueError(f"{choice} draft weights run on a CPU with an fp32 or bf16 pair only")
    return choice


def onednn_usable(device, dtype) -> bool:
    """oneDNN's linear runs fp32 on a CPU build of PyTorch that ships it."""
    return (torch.device(device).type == "cpu" and dtype == torch.float32
            and torch.backends.mkldnn.is_available())


def resolve_linear_path(path: str, device, dtype, probe_model=None) -> str:
    """"default" or "onednn" for `path` = auto | default | onednn (the env var overrides auto).

    auto considers oneDNN wherever it can run (fp32 on a CPU; where bf16 runs the
    default path is kept) and, given `probe_model`, keeps it only if it measures
    faster on that model's largest linear layer (`probe_linear_paths`): what is
    fastest depends on the processor, the thread count and what else runs.
    """
    path = checked_choice(path, LINEAR_PATHS, "linear path", ENV_VAR)
    if path == "auto":
        if not onednn_usable(device, dtype):
            return "default"
        return probe_linear_paths(probe_model)["choice"] if probe_model is not None else "onednn"
    if path == "onednn" and not onednn_usable(device, dtype):
        raise ValueError("the oneDNN linear path runs fp32 on a CPU only")
    return path


def use_linear_path(model: torch.nn.Module, path: str, rows_hint: int = ROWS_HINT) -> torch.nn.Module:
    """Put every `nn.Linear` of `model` on `path` ("default" leaves it as loaded); records the path.

    `rows_hint`: the row count oneDNN packs the weights for (see OneDNNLinear).
    "int8" (Int8WeightLinear) is for draft models only.
    """
    if path in ("onednn", "int8"):
        for module in list(model.modules()):
            for name, child in list(module.named_children()):
                if type(child) is torch.nn.Linear:
                    setattr(module, name, fast_linear(child, path, rows_hint))
    elif path != "default":
        raise ValueError(f"unknown linear path {path!r}")
    runtime = runtime_of(model)
    runtime.linear_path = path
    runtime.store_linear = functools.partial(fast_linear, path=path)   # a new layer: the default rows hint
    return model


PROBE_ROWS = (1, 5)     # a one-token decode step and a K = 4 verify


def probe_linear_paths(model, repeats: int = 7) -> dict:
    """Time the model's largest linear layer on both paths at 1 and 5 rows (medians, interleaved).

    oneDNN is chosen when its 1-row plus 5-row time is at most 0.9 of the
    default's: a clear win, not noise. Well under a second for a 1.5B model.
    """
    linears = [m for m in model.modules() if type(m) is torch.nn.Linear and m is not model.get_output_embeddings()]
    if not linears:
        return {"choice": "default", "reason": "no linear layers"}
    layer = max(linears, key=lambda m: m.weight.numel())
    paths = {"default": layer, "onednn": OneDNNLinear(layer)}
    times: dict[tuple[str, int], list[float]] = {(p, r): [] for p in paths for r in PROBE_ROWS}
    with torch.inference_mode():
        xs = {r: torch.randn(1, r, layer.in_features, dtype=layer.weight.dtype) for r in PROBE_ROWS}
        for rep in range(repeats + 1):
            for (p, r), seen in times.items():
                t0 = time.perf_counter()
                paths[p](xs[r])
                if rep:   # the first pass warms caches and kernels
                    seen.append(time.perf_counter() - t0)
    med = {key: statistics.median(v) for key, v in times.items()}
    score = {p: sum(med[(p, r)] for r in PROBE_ROWS) for p in paths}
    return {"choice": "onednn" if score["onednn"] <= 0.9 * score["default"] else "default",
            "layer": f"{layer.in_features}x{layer.out_features}",
            "ms": {f"{p}_{r}": round(med[(p, r)] * 1e3, 2) for p in paths for r in PROBE_ROWS}}


def linear_path(model) -> str:
    """How the model's linear layers run: "default", "onednn" or "int8"."""
    return known_runtime(model).linear_path


def output_weight(model) -> torch.Tensor:
    """The dense [V, H] weight of the model's output layer, whatever kernel path runs it."""
    return dense_weight(model.get_output_embeddings())


def fast_linear(linear: torch.nn.Linear, path: str = "default", rows_hint: int = ROWS_HINT) -> torch.nn.Module:
    """`linear` on `path` (pass the owning model's `linear_path(model)`)."""
    if path == "int8":
        return Int8WeightLinear(linear)
    return OneDNNLinear(linear, rows_hint) if path == "onednn" else linear
