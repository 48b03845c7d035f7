"""Whether specviz's 4-bit products read the weights ahead at one row too: measured at load, per machine.

Why this exists: a one-token step of the packaged target is its 197 products in the model's order, ~1 GB
of weights that no cache holds, so the step is bound by how fast those bytes arrive. The kernels prefetch the
weights 4 KB ahead of the block being multiplied from two rows up (csrc/q4a8.cpp, prefetch_rows). At one row the
two CPU kinds measured want opposite settings: on a 2-core Zen 4 VM the hardware prefetcher keeps up alone and the
extra loads slowed one row, while on a 2-core Zen 3 VM the target's products in model order took 0.85 of their
time with them (the draft's 0.93). So it is chosen as `auto` chooses the weights: by timing, at load, the loaded
target's own products in the model's order, one row, both ways, taking turns. A read-ahead changes when bytes
arrive, never what is computed: every output is bit for bit the same either way (tests/test_models_quant_read_ahead.py).
"""
from __future__ import annotations

import os
import statistics
import time

import torch

from . import q4a8

ENV_VAR = "SPECVIZ_Q4_READ_AHEAD"   # force: 1 (one row reads ahead too) | 2 (from two rows); measured when unset
SETTINGS = (1, 2)
DEFAULT = 2            # the kernels' own default (what they did before this was measured)
MARGIN = 0.97          # one row reads ahead only where that measured at least 3 % faster: a tie keeps the default


def current() -> int | None:
    """The rows from which the products read ahead now (None where the kernels are unavailable)."""
    ext = q4a8.extension() if q4a8.built() else None
    return None if ext is None or not hasattr(ext, "prefetch_rows") else int(ext.prefetch_rows())


def set_rows(rows: int) -> None:
    """Read ahead from `rows` rows (1 or 2); changes no result, only the time."""
    if rows not in SETTINGS:
        raise ValueError(f"read-ahead from 1 or 2 rows; got {rows!r}")
    q4a8.extension().set_prefetch_rows(int(rows))


def forced() -> int | None:
    """The setting SPECVIZ_Q4_READ_AHEAD forces, or None where it is unset (a bad value is refused)."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return None
    if text not in ("1", "2"):
        raise ValueError(f"{ENV_VAR} must be 1 or 2; got {text!r}")
    return int(text)


def decide(ratio: float) -> int:
    """The setting for a measured time ratio (one row with read-ahead / without): read ahead only where clearly faster."""
    return 1 if ratio < MARGIN else DEFAULT


def products(model) -> list[torch.nn.Module]:
    """The model's q4a8 layers in the model's order (the order a one-token step runs them)."""
    kinds = (q4a8.Q4A8Linear, q4a8.Q8A8Linear)
    return [m for m in model.modules() if isinstance(m, kinds)]


def choose(model, passes: int = 5) -> dict | None:
    """Time `model`'s products at one row with and without read-ahead, keep the faster, and say what was seen.

    Each pass runs every product once, one row, in the model's order (its weights stream from memory as in a
    decode step). The two settings run back to back, in turns (1 then 2, then 2 then 1, ...), after one warm pass
    each, and the decision is on the median of each pair's ratio: a drift of the machine's speed (this VM's step
    time moved 1.5x within minutes) falls on both halves of a pair. Right after a load the first passes also fault
    the weights in. ~12 passes of a one-token step's products: about a second for the packaged 1.5B target.
    Returns None where the model has no q4a8 layers or the kernels are unavailable; else {"choice", "forced", "ms",
    "ratio", "layers"}.
    """
    layers = products(model)
    if not layers or q4a8.unavailable() is not None:
        return None
    pinned = forced()
    if pinned is not None:
        set_rows(pinned)
        return {"choice": pinned, "forced": True}
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    xs = [torch.randn(1, 1, layer.in_features, dtype=dtype) for layer in layers]

    def timed(rows: int) -> float:
        set_rows(rows)
        t0 = time.perf_counter()
        for layer, x in zip(layers, xs):
            layer(x)
        return time.perf_counter() - t0

    seen: dict[int, list[float]] = {rows: [] for rows in SETTINGS}
    try:
        with torch.inference_mode():
            for rows in SETTINGS:   # warm: the code paths, and the weights' pages after a load
                timed(rows)
            for rep in range(passes):
                for rows in (SETTINGS if rep % 2 == 0 else SETTINGS[::-1]):
                    seen[rows].append(timed(rows))
    finally:
        set_rows(DEFAULT)
    ratio = statistics.median(a / b for a, b in zip(seen[1], seen[2]))
    choice = decide(ratio)
    set_rows(choice)
    return {"choice": choice, "forced": False, "ratio": round(ratio, 3), "layers": len(layers),
            "ms": {str(rows): round(statistics.median(times) * 1e3, 2) for rows, times in seen.items()}}
