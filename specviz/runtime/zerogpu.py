"""Hugging Face ZeroGPU: whether we run on it, and how much GPU time a request asks for.

ZeroGPU attaches a GPU to each call of a function decorated with
`spaces.GPU(duration=..., size=...)` and takes it back after. Since May 2026 it
is an RTX Pro 6000 Blackwell: `size="large"` (the default) is half a card,
48 GB, and `"xlarge"` the whole card, 96 GB, at twice the quota; the Space
picks one with SPECVIZ_ZEROGPU_SIZE, and the memory check uses that slice.
It does not support torch.compile, so replayed forwards use plain CUDA graphs
there (specviz.runtime.graphs), captured again inside every call (no GPU process
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

from ..limits import (ZEROGPU_CALL_OVERHEAD_S, ZEROGPU_DEFAULT_STEP_S, ZEROGPU_DRAFT_SHARE, ZEROGPU_MARGIN,
                      ZEROGPU_MAX_DURATION_S, ZEROGPU_MIN_DURATION_S, ZEROGPU_QUOTA_FACTOR)

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


# The GPU memory of each size `spaces.GPU(size=...)` may ask for, as ZeroGPU documents it since May 2026 (an RTX
# Pro 6000 Blackwell: half a card, the whole card). Decimal GB, a little under the card's 102 GB and its half: the
# memory check must never let through a pair the slice cannot hold.
ZEROGPU_SIZES = {"large": 48 * 10**9, "xlarge": 96 * 10**9}
ZEROGPU_DEFAULT_SIZE = "large"
ZEROGPU_SIZE_ENV = "SPECVIZ_ZEROGPU_SIZE"
# What the `spaces` package says the (not yet attached) device holds; it names a whole card or an old H200 slice,
# so it can only lower the figure, never raise it past the size asked for.
ZEROGPU_DEVICE_MEMORY_ENV = "ZEROGPU_CUDA_TOTAL_MEMORY"


def load_device() -> str | None:
    """Where the app loads its models: "cuda" on ZeroGPU (moved there at start-up, outside the decorated calls,
    as ZeroGPU documents: it places them when a call attaches the GPU), else None (the machine's best)."""
    return "cuda" if on_zero_gpu() else None


def gpu_size(env=None) -> str:
    """The slice each decorated call asks for: SPECVIZ_ZEROGPU_SIZE, "large" (default) or "xlarge"; another value
    is refused at start-up with a sentence (a typo must not silently ask for half the memory)."""
    raw = (os.environ if env is None else env).get(ZEROGPU_SIZE_ENV)
    if raw is None or not raw.strip():
        return ZEROGPU_DEFAULT_SIZE
    size = raw.strip().lower()
    if size not in ZEROGPU_SIZES:
        from ..strings import t   # the runtime stays below the words: loaded only to say this refusal

        raise ValueError(t("zerogpu.bad_size", name=ZEROGPU_SIZE_ENV, value=raw.strip()[:40],
                           choices=", ".join(ZEROGPU_SIZES)))
    return size


def slice_bytes(env=None) -> int:
    """The GPU memory one ZeroGPU call gets: the size the Space asks for (free memory cannot be asked at start-up,
    no GPU is attached yet), lowered to what the `spaces` package reports for the device when that is less."""
    env = os.environ if env is None else env
    size = ZEROGPU_SIZES[gpu_size(env)]
    try:
        device = int(env.get(ZEROGPU_DEVICE_MEMORY_ENV, ""))
    except ValueError:
        return size
    return min(size, device) if device > 0 else size


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


def quota_seconds(request: GpuRequest, step_s: float, size: str = ZEROGPU_DEFAULT_SIZE) -> int:
    """Seconds of a visitor's daily quota the call asks for: its duration as `spaces` schedules it (times the card's
    factor for `large`, twice for `xlarge`). A visitor needs that much left for the call to start, and it uses at
    most that much."""
    return round(duration(request, step_s) * ZEROGPU_QUOTA_FACTOR.get(size, ZEROGPU_QUOTA_FACTOR["xlarge"]))
