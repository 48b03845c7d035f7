"""Bare forward costs, the inputs of the theory: c and verify_cost.

c = one draft forward (1 new token, warm cache) / one target forward (1 new
token); verify_cost = one target forward over K+1 new tokens / one target
forward over 1. Both are timed on bare forwards, interleaved so drift hits all
alike, medians of a few repetitions. theory_speedup = theory.expected_speedup(
alpha_verified, K, c, verify_cost); measured over theoretical speedup then
differs only by decoder overhead and correlated acceptances.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable

import torch

from .. import theory
from ..runtime.decoding import (PrefillStopped, Timer, as_id_tensor, crop_to, forward_logits, input_device, prefill,
                                resolve_forwards, warm_up)


@dataclass
class ForwardCosts:
    target_1: float                       # seconds of one target forward over 1 new token
    draft_1: float                        # seconds of one draft forward over 1 new token
    target_k: dict[int, float]            # K -> seconds of one target forward over K+1 new tokens

    @property
    def c(self) -> float:
        return self.draft_1 / self.target_1

    def verify_cost(self, k: int) -> float:
        return self.target_k[k] / self.target_1

    def to_dict(self) -> dict:
        return {"target_1": self.target_1, "draft_1": self.draft_1,
                "target_k": {str(k): v for k, v in self.target_k.items()}, "c": self.c}


@torch.inference_mode()
def forward_costs(target, draft, input_ids, ks: Iterable[int], repeats: int = 3, compile: str = "off",
                  stop=None) -> ForwardCosts:
    """Median wall time of bare cached forwards, interleaved so drift hits all alike.

    `compile` (off | on | graphs | auto, as in `speculative_generate`) times the
    replayed path: static caches and CUDA-graph forwards, captured before any timing;
    `stop()` ends that capture between calls, the prompt's prefill between chunks and the timing between timed
    forwards (`decoding.PrefillStopped`), as it ends a run's: a Stop waits for one forward, never a whole repeat.
    """
    ks = sorted(set(int(k) for k in ks))
    # The forwards decoding runs are timed as the models were prepared at load (runtime.setup.prepare: the
    # row-invariant attention and, on a CPU, the lean layer stack); transformers' SDPA path of an unprepared model
    # timed a one-token target step of the packaged pair at 43 ms on a Zen 4 against 36 ms as decoding runs it.
    device = input_device(target)
    clock = Timer(device)
    ids = as_id_tensor(input_ids, device)
    n = len(ids)
    forwards = resolve_forwards(compile, device)
    static, compiled = forwards.static, forwards.compiled
    max_len = n + max(ks, default=0) + 2
    if compiled:
        warm_up(target, [1] + [k + 1 for k in ks], max_len, verify=True, backend=forwards.backend, stop=stop)
        warm_up(draft, [1], max_len, verify=False, backend=forwards.backend, stop=stop)
    caches = {}
    for name, model in (("target", target), ("draft", draft)):   # the whole prompt cached
        caches[name] = prefill(model, ids[None], static, max_len, compiled, forwards.backend, stop=stop)
        forward_logits(model, ids[-1:], caches[name], 1)
    extra = ids[-1:].repeat(max(ks, default=0) + 1)

    def timed(model, cache, length) -> float:
        if stop is not None and stop():
            raise PrefillStopped()
        t0 = clock()
        forward_logits(model, extra[:length], cache, length)
        dt = clock() - t0
        crop_to(cache, n)   # back to the prompt, so every timed forward sees the same context
        return dt

    samples: dict[Any, list[float]] = {"t1": [], "d1": [], **{k: [] for k in ks}}
    timed(target, caches["target"], 1)   # one untimed pass each: allocator and kernels warm
    timed(draft, caches["draft"], 1)
    for _ in range(max(1, repeats)):
        samples["t1"].append(timed(target, caches["target"], 1))
        samples["d1"].append(timed(draft, caches["draft"], 1))
        for k in ks:
            samples[k].append(timed(target, caches["target"], k + 1))
    med = {key: statistics.median(v) for key, v in samples.items()}
    return ForwardCosts(target_1=med["t1"], draft_1=med["d1"], target_k={k: med[k] for k in ks})


@torch.inference_mode()
def one_token_timer(model, input_ids):
    """A callable that times one bare cached forward of `model` over one new token after `input_ids` (prefilled once,
    cropped back after each call so every call sees the same context), as decoding runs it; returns seconds."""
    device = input_device(model)
    clock = Timer(device)
    ids = as_id_tensor(input_ids, device)
    n = len(ids)
    cache = prefill(model, ids[None], False, n + 2)
    forward_logits(model, ids[-1:], cache, 1)
    crop_to(cache, n)

    @torch.inference_mode()
    def timed() -> float:
        t0 = clock()
        forward_logits(model, ids[-1:], cache, 1)
        dt = clock() - t0
        crop_to(cache, n)
        return dt
    return timed


def theory_speedup(alpha: float, k: int, c: float, verify_cost: float) -> float:
    """theory.expected_speedup, or NaN where a measurement is missing or alpha is not a probability."""
    if not (isinstance(alpha, float) or isinstance(alpha, int)) or math.isnan(alpha) or not 0 <= alpha <= 1:
        return float("nan")
    if math.isnan(c) or math.isnan(verify_cost):
        return float("nan")
    return theory.expected_speedup(float(alpha), int(k), float(c), float(verify_cost))


def tree_speedup_bound(tau: float, reads: float, c: float, verify_cost: float) -> float:
    """A draft tree's best speedup over the target alone: a round emits `tau` tokens (measured) for `reads` draft
    forwards at c each and one verify; NaN where a number is missing. An upper bound: the decoder's own overhead
    only adds to a round's cost."""
    cost = reads * c + verify_cost
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (tau, reads, c, verify_cost)) or cost <= 0:
        return float("nan")
    return tau / cost
