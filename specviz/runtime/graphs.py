"""CUDA graphs without torch.compile: each cached forward shape captured once on fixed buffers, then replayed.

Why: ZeroGPU (Hugging Face Spaces) does not support torch.compile, and on a GPU
eager one-token forwards are launch-bound (~96 % of the time measured on an
H200), so speculation needs replayed graphs to pay. A graph replays its kernels
on the addresses it was captured with, so every input lives in a buffer that
is overwritten before each replay:

- the token ids ([1, n]) and their positions ([n]), one pair per shape;
- the KV cache: the model's shared StaticCache (decoding._shared_static_cache;
  "buffers" uses a fresh one per cache, so batched and same-model caches work),
  whose layers write at their own device-side length (`cumulative_length`), so
  a rollback (`crop`) is an in-place subtraction the next replay reads;
- the output (logits or hidden states), copied out after each replay because
  the next replay of the shape overwrites it.

The same bookkeeping runs without capture ("buffers": eager forwards on the
fixed buffers), which is how the CPU tests exercise it. A capture that fails
leaves that model on the buffers path for the rest of the process; the reason
is kept (`failure`) so the run can say so in one sentence.
"""
from __future__ import annotations

import time
import weakref
from typing import Callable

import torch

from .state import known_runtime, runtime_of

BACKENDS = ("graphs", "buffers")   # captured on CUDA | the same buffers run eagerly (CPU, or a failed capture)
WARMUP_CALLS = 2                   # eager calls on a side stream before capture (cuBLAS handles, lazy cache init)


class ReplayedForward:
    """One forward shape of one model (n new tokens, `keep` outputs) on fixed buffers, captured or not."""

    def __init__(self, run: Callable, cache, shape: tuple[int, int], device):
        n = shape[1]
        self.run, self.cache, self.n = run, cache, n     # run(ids, positions) -> the output tensor
        self.ids = torch.zeros(shape, dtype=torch.long, device=device)
        self.steps = torch.arange(n, device=device)
        self.positions = torch.zeros(n, dtype=torch.long, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.out: torch.Tensor | None = None

    def load(self, ids: torch.Tensor, start: int) -> None:
        """Overwrite the buffers in place: the graph reads them at their captured addresses."""
        self.ids.copy_(ids)
        self.positions.copy_(self.steps).add_(start)

    def capture(self, pool) -> None:
        """Warm up on a side stream, then record one call; the cache's length is put back after each warm-up."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                self.run(self.ids, self.positions)
                self.cache.crop(-self.n)   # the warm-up wrote n positions: forget them (they are masked, then overwritten)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the app's other threads may touch CUDA while a worker thread captures
        with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
            self.out = self.run(self.ids, self.positions)   # recorded, not run: the cache's length is unchanged
        self.graph = graph

    def __call__(self) -> torch.Tensor:
        if self.graph is None:
            return self.run(self.ids, self.positions)
        self.graph.replay()
        return self.out.clone()   # the next replay of this shape overwrites `out`


class GraphSet:
    """A model's replayed forwards by ((batch, n), keep), for one static cache; captured on first use of each shape."""

    def __init__(self, model, cache, hidden: bool, capture: bool):
        # A weak proxy: the set lives in the model's Runtime, which must not keep the model alive (state.py).
        self.model, self.cache, self.hidden, self.capture = weakref.proxy(model), cache, hidden, capture
        self.forwards: dict[tuple, ReplayedForward] = {}
        self.pool = None                     # one memory pool for all of the model's graphs, made at first capture
        self.failure: str | None = None      # why capture failed, once it has
        self.capture_seconds = 0.0

    def _runner(self, keep: int) -> Callable:
        cache = self.cache
        if self.hidden:
            base = self.model.get_decoder()
            return lambda ids, pos: base(input_ids=ids, cache=cache, use_cache=True,
                                         cache_position=pos).last_hidden_state[:, -keep:]
        return lambda ids, pos: self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep,
                                           cache_position=pos).logits

    def forward(self, ids: torch.Tensor, start: int, keep: int) -> torch.Tensor:
        """The output for `ids` ([B, n]) fed at positions start..start+n-1 of the cache."""
        key = (tuple(ids.shape), keep)
        entry = self.forwards.get(key)
        if entry is None:
            entry = self.forwards[key] = ReplayedForward(self._runner(keep), self.cache, tuple(ids.shape), ids.device)
            entry.load(ids, start)
            if self.capture and self.failure is None:
                self._capture(entry)
        else:
            entry.load(ids, start)
        return entry()

    def _capture(self, entry: ReplayedForward) -> None:
        t0 = time.perf_counter()
        try:
            self.pool = self.pool or torch.cuda.graph_pool_handle()
            entry.capture(self.pool)
        except Exception as e:  # noqa: BLE001 - any capture failure: keep decoding eagerly, and say why
            entry.graph = entry.out = None
            self.failure = f"{type(e).__name__}: {str(e)[:160]}"
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        self.capture_seconds += time.perf_counter() - t0


def graph_set(model, cache, hidden: bool, capture: bool) -> GraphSet:
    """The model's GraphSet for this cache (a new cache, e.g. a grown one, drops the graphs of the old one)."""
    held_sets = runtime_of(model).graphs
    held = held_sets.get(hidden)
    if held is None or held.cache is not cache or held.capture != capture:
        held = held_sets[hidden] = GraphSet(model, cache, hidden, capture)
    return held


def failure_of(*models) -> str | None:
    """The first capture failure among the models' graph sets, if any (the run then decoded eagerly)."""
    for model in models:
        for held in known_runtime(model).graphs.values():
            if held.failure:
                return held.failure
    return None


def forget(model) -> None:
    """Drop a model's graphs and buffers (tests; a model about to be freed)."""
    known_runtime(model).graphs.clear()
