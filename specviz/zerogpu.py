"""Hugging Face ZeroGPU: whether we run on it, and how much GPU time a request asks for.

ZeroGPU attaches a GPU slice (an H200 MIG slice of ~70 GB) to each call of a
function decorated with `spaces.GPU(duration=...)` and takes it back after;
it does not support torch.compile, so replayed forwards use plain CUDA graphs
there (specviz.graphs), captured again inside every call (no GPU process
persists between calls). The `spaces` package marks a ZeroGPU Space with
SPACES_ZERO_GPU=true (spaces/config.py) and is a no-op elsewhere.

The duration is a function of the request: a pessimistic count of target-step
units (each emitted token may cost one verify and K draft steps), times a
target step measured on earlier calls of the same pair (or a pessimistic
default), plus the per-call overhead, bounded by the limits in specviz.limits.
Nothing here imports gradio or spaces.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from .limits import (ZEROGPU_CALL_OVERHEAD_S, ZEROGPU_DEFAULT_STEP_S, ZEROGPU_DRAFT_SHARE, ZEROGPU_MARGIN,
                     ZEROGPU_MAX_DURATION_S, ZEROGPU_MIN_DURATION_S)

ZERO_GPU_ENV = "SPACES_ZERO_GPU"
ZEROGPU_MIN_S = ZEROGPU_MIN_DURATION_S


def on_zero_gpu(env=None) -> bool:
    """True on a ZeroGPU Space (the variable the `spaces` package itself reads)."""
    value = (os.environ if env is None else env).get(ZERO_GPU_ENV)
    return value is not None and value.strip().lower() in ("1", "t", "true")


def inductor_available() -> bool:
    """Whether torch.compile can build GPU kernels here (dynamo supported and Triton importable)."""
    try:
        import torch._dynamo as dynamo
        from torch.utils._triton import has_triton

        return bool(dynamo.is_dynamo_supported() and has_triton())
    except Exception:  # noqa: BLE001 - an old or stripped torch: no inductor
        return False


def inductor_wanted() -> bool:
    """`compile=auto` on CUDA: torch.compile on a dedicated GPU; plain CUDA graphs on ZeroGPU or without Triton."""
    return not on_zero_gpu() and inductor_available()


ZEROGPU_SLICE_BYTES = 74_625_056_768   # an H200 MIG 3g.71gb slice, as the `spaces` package reports it


def load_device() -> str | None:
    """Where the app loads its models: "cuda" on ZeroGPU (moved there at start-up, outside the decorated calls,
    as ZeroGPU documents: it places them when a call attaches the GPU), else None (the machine's best)."""
    return "cuda" if on_zero_gpu() else None


def slice_bytes() -> int:
    """The GPU memory one ZeroGPU call gets (free memory cannot be asked at start-up: no GPU is attached yet)."""
    try:
        return int(os.environ.get("ZEROGPU_CUDA_TOTAL_MEMORY", ZEROGPU_SLICE_BYTES))
    except ValueError:
        return ZEROGPU_SLICE_BYTES


@dataclass(frozen=True)
class GpuRequest:
    """What one decorated call will decode: `runs` speculative runs of `tokens` at the Ks in `ks`."""

    tokens: int
    ks: tuple[int, ...]
    baseline: bool = False      # the target alone as well (the comparison, or the sweep's reference)

    def units(self) -> float:
        """Target-step units, pessimistically: every round emits one token after K draft steps and a verify."""
        spec = sum(self.tokens * (1.0 + k * ZEROGPU_DRAFT_SHARE) for k in self.ks)
        return spec + (self.tokens if self.baseline else 0.0)


class StepClock:
    """Seconds per target-step unit measured on finished calls, by pair; the slowest recent one is used."""

    def __init__(self, keep: int = 5):
        self.keep, self._lock = keep, threading.Lock()
        self._seen: dict[object, list[float]] = {}

    def record(self, pair_key, request: GpuRequest, seconds: float) -> None:
        units = request.units()
        if units <= 0 or seconds <= 0:
            return
        step = max(0.0, seconds - ZEROGPU_CALL_OVERHEAD_S) / units
        with self._lock:
            self._seen.setdefault(pair_key, []).append(step)
            del self._seen[pair_key][:-self.keep]

    def step_seconds(self, pair_key) -> float:
        with self._lock:
            seen = self._seen.get(pair_key)
            return max(seen) if seen else ZEROGPU_DEFAULT_STEP_S


STEPS = StepClock()


def estimate_seconds(request: GpuRequest, step_s: float) -> float:
    """GPU seconds one call may need (unbounded): overhead plus the request's units at `step_s`, with a margin."""
    return ZEROGPU_CALL_OVERHEAD_S + ZEROGPU_MARGIN * request.units() * step_s


def duration(request: GpuRequest, step_s: float) -> int:
    """The `spaces.GPU` duration for the request, in whole seconds within the limits."""
    wanted = estimate_seconds(request, step_s)
    return int(min(ZEROGPU_MAX_DURATION_S, max(ZEROGPU_MIN_DURATION_S, wanted + 0.999)))


def exceeds(request: GpuRequest, step_s: float) -> bool:
    """Whether the request would need more than one call may ask for (it will be cut at the limit)."""
    return estimate_seconds(request, step_s) > ZEROGPU_MAX_DURATION_S
