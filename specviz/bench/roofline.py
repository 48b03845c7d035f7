"""The memory roofline of one decode step: bytes of weights read per token over the bandwidth measured here.

A one-token forward reads every weight once, so no decoder of the target alone
can beat bytes_per_token / bandwidth. The benchmark measures the read bandwidth
in the same run (a streaming sum over 1 GiB, as ../shared/perf/bandwidth.py
does, and over 1 GiB in 2 MB pages where the weights use them) and reports,
for the fastest target alone, the share of that limit it reaches: how much
room a faster kernel could still find.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from ..models.quant import huge_pages


def read_bandwidth(gib: float = 1.0, repeats: int = 5) -> float:
    """Bytes per second of a read-only stream over `gib` GiB of fp32 (best of `repeats`), on the CPU; where the
    weights live in 2 MB pages (models.quant.huge_pages), the best of that stream in 4 KB and in 2 MB pages: a sum
    over 4 KB pages read 29.6 GB/s on the 2-core Zen 4 where the same sum over 2 MB pages read 35.6 and the target's
    products ~44, so a 4 KB-only probe made a roofline the target alone passed (105 % in one run)."""
    elements = int(gib * (1 << 30)) // 4
    best = float("inf")
    for pages in ("4 KB", "2 MB") if huge_pages.available() else ("4 KB",):   # one buffer at a time
        buf = torch.ones(elements) if pages == "4 KB" else huge_pages.empty((elements,), torch.float32).fill_(1.0)
        best = min(best, _best_sum_seconds(buf, repeats))
        del buf
    return elements * 4 / best


def _best_sum_seconds(buf: torch.Tensor, repeats: int) -> float:
    """Seconds of the fastest of `repeats` + 1 sums over `buf` (the first warms the pages; the best is kept)."""
    best = float("inf")
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        buf.sum()
        best = min(best, time.perf_counter() - t0)
    return best


class ReadProbe:
    """The read stream of `read_bandwidth` over one buffer allocated once, in the pages the weights use (2 MB where
    `huge_pages.available()`), so a bandwidth can be measured right beside each timed step: this memory's speed
    moves within minutes (a streaming sum over 1 GiB read 35 GB/s and 63 GB/s ten minutes apart on the 2-core Zen 4,
    and 35.7 / 67.6 GB/s before and after one script's timings), so a probe taken once makes the share of the roofline
    a matter of when it ran."""

    def __init__(self, gib: float = 0.5):
        elements = int(gib * (1 << 30)) // 4
        self.buf = huge_pages.empty((elements,), torch.float32).fill_(1.0)

    def __call__(self, repeats: int = 2) -> float:
        return self.buf.numel() * 4 / _best_sum_seconds(self.buf, repeats)


def paired_shares(step: Callable[[], float], weights_bytes: int, pairs: int = 9, probe: ReadProbe | None = None
                  ) -> dict:
    """Each of `pairs` timed steps (`step()` returns its seconds) between two probes of the read bandwidth; its
    roofline is `weights_bytes` over the faster of the two (the step's own moment, never a probe from minutes
    before). Returns the pairs and the median share, bandwidth and step time."""
    probe = probe or ReadProbe()
    rows = []
    before = probe()
    for _ in range(max(1, pairs)):
        seconds = step()
        after = probe()
        bandwidth = max(before, after)
        rows.append({"bandwidth": bandwidth, "seconds": seconds, "floor": weights_bytes / bandwidth,
                     "share": weights_bytes / bandwidth / seconds})
        before = after
    return {"pairs": rows, "share": statistics.median(r["share"] for r in rows),
            "bandwidth": statistics.median(r["bandwidth"] for r in rows),
            "seconds": statistics.median(r["seconds"] for r in rows)}


def bytes_per_token(model: torch.nn.Module) -> int:
    """Bytes one token's forward reads: every parameter and buffer, but of an embedding table only the
    row it looks up (unless the output layer multiplies by the same table, which then reads it whole)."""
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    read_whole = {id(t) for t in _tensors(output)} if output is not None else set()
    total, seen = 0, set()
    for module in model.modules():
        lookup = isinstance(module, torch.nn.Embedding) or hasattr(module, "num_embeddings")   # a GGUF-form table too
        for tensor in _tensors(module, recurse=False):
            if id(tensor) in seen or tensor.numel() == 0:
                continue
            seen.add(id(tensor))
            if lookup and id(tensor) not in read_whole:
                total += tensor[0].numel() * tensor.element_size()
            else:
                total += tensor.numel() * tensor.element_size()
    return total


def _tensors(module, recurse: bool = True):
    if module is None:
        return []
    return [t for t in list(module.parameters(recurse=recurse)) + list(module.buffers(recurse=recurse))
            if t is not None]


def roofline(bandwidth: float, weights_bytes: int, seconds_per_token: float) -> dict:
    """The floor for one token and the share of it a measured rate reaches."""
    floor = weights_bytes / bandwidth
    return {"bytes_per_token": weights_bytes, "floor_ms": floor * 1e3,
            "measured_ms": seconds_per_token * 1e3, "share_of_roofline": floor / seconds_per_token}
