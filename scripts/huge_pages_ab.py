"""Weights in 4 KB pages against the same weights in 2 MB pages, in one process, taking turns.

Why: a VM's speed drifts by tens of per cent over minutes, so two processes (SPECVIZ_HUGE_PAGES=0 and not) cannot
tell a few per cent apart. This loads the packaged pair with ordinary pages, then holds every weight storage of
2 MB or more twice (the load's copy and one in memory advised into 2 MB pages, specviz.models.quant.huge_pages) and
switches the very tensors the kernels read between the two with `set_`, pass by pass. It checks that the logits
agree bit for bit both ways, and times the target's products in decode order (every layer's joined products, then
the output layer) and whole lean-stack forwards at 1, 2, 4 and 8 rows.

    PYTHONPATH=. python scripts/huge_pages_ab.py [--passes 40]

Prints, per row count, the 2 MB pages' median time over the 4 KB pages' and the median of the paired ratios with
their quartiles (docs/measurements.md, "Weights in 2 MB pages").
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

import torch

ROWS = (1, 2, 4, 8)
PROMPT = "Write a Python function that merges two sorted lists into one sorted list, with a docstring and tests."


def two_copies(min_bytes: int) -> dict[str, list]:
    """Every live CPU tensor on a storage of `min_bytes`+, with how to point it at either copy of its bytes."""
    from specviz.models.quant import huge_pages

    gc.collect()
    by_storage: dict[int, tuple] = {}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.device.type == "cpu" and obj.untyped_storage().nbytes() >= min_bytes:
            entry = by_storage.setdefault(obj.untyped_storage().data_ptr(), (obj.untyped_storage(), []))
            entry[1].append(obj)
    modes: dict[str, list] = {"4k": [], "2m": [], "keep": []}
    for storage, tensors in by_storage.values():
        raw, start = huge_pages.huge_storage(storage.nbytes())
        raw[start:start + storage.nbytes()].copy_(torch.empty(0, dtype=torch.uint8).set_(storage))
        modes["keep"].append(raw)
        for t in tensors:
            size = t.element_size()
            modes["4k"].append((t, storage, t.storage_offset()))
            modes["2m"].append((t, raw.untyped_storage(), (start + t.storage_offset() * size) // size))
    return modes


def switch(modes: dict, mode: str) -> None:
    for t, storage, offset in modes[mode]:
        with torch.inference_mode() if t.is_inference() else torch.no_grad():
            t.set_(torch.empty(0, dtype=t.dtype).set_(storage).untyped_storage(), offset, t.size(), t.stride())


def report(label: str, times: dict) -> None:
    for rows in ROWS:
        a, b = times[("4k", rows)], times[("2m", rows)]
        paired = sorted(y / x for x, y in zip(a, b))
        q = len(paired) // 4
        print(f"{label} {rows} row(s): 4 KB {statistics.median(a):.1f} ms, 2 MB {statistics.median(b):.1f} ms, "
              f"ratio of medians {statistics.median(b) / statistics.median(a):.3f}, paired ratios "
              f"{statistics.median(paired):.3f} (quartiles {paired[q]:.3f}-{paired[-q - 1]:.3f})", flush=True)


@torch.inference_mode()
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=40, help="passes per row count, each timing both ways")
    args = ap.parse_args(argv)
    from specviz.models import lean_forward
    from specviz.models.loading import load_pair
    from specviz.models.quant import huge_pages, q4a8
    from specviz.runtime.attention import use_row_invariant_attention
    from specviz.runtime.decoding import KVCache, crop_to, forward_logits

    if not huge_pages.available() or q4a8.unavailable():
        print("needs Linux transparent huge pages and specviz's q4a8 kernels")
        return 1
    os.environ[huge_pages.ENV_VAR] = "0"   # the load keeps 4 KB pages: this script makes the 2 MB copies itself
    pair = load_pair(device="cpu")
    target = pair.target
    use_row_invariant_attention(target)   # the decoder's path: the lean stack
    lean = lean_forward.lean_for(target)
    ids = torch.tensor(pair.encode_chat(PROMPT))
    cache = KVCache(target)
    forward_logits(target, ids, cache, 1)   # builds the joined products too (in 4 KB pages, as the load's)
    del os.environ[huge_pages.ENV_VAR]
    length = ids.shape[0]

    def forward(rows: int) -> torch.Tensor:
        out = forward_logits(target, ids[-rows:], cache, rows)
        crop_to(cache.cache, length)
        cache.length = length
        return out

    modes = two_copies(huge_pages.PAGE)
    print(f"{len(modes['keep'])} storages held twice; process in 2 MB pages: {huge_pages.process_huge_bytes() >> 20} MB")
    logits = {}
    for mode in ("4k", "2m"):
        switch(modes, mode)
        logits[mode] = [forward(rows) for rows in ROWS]
    print("logits identical both ways:", all(torch.equal(a, b) for a, b in zip(logits["4k"], logits["2m"])))

    ext = q4a8.extension()
    hidden = target.config.hidden_size
    parts = [(part, width) for layer in lean.layers
             for joined, width in ((layer.qkv, hidden), (layer.o, hidden), (layer.gate_up, hidden),
                                   (layer.down, target.config.intermediate_size))
             for part in joined.parts]
    inputs = {rows: [torch.randn(rows, width).to(target.dtype) for _, width in parts] for rows in ROWS}
    products, forwards = {}, {}
    for n in range(args.passes):
        for rows in ROWS:
            for mode in ("4k", "2m") if n % 2 == 0 else ("2m", "4k"):
                switch(modes, mode)
                t0 = time.perf_counter()
                for ((packed, width, scales, bias, kind), _), x in zip(parts, inputs[rows]):
                    ext.linear(x, packed, width, scales, bias, kind)
                target.lm_head(inputs[rows][0][:, :hidden])
                t1 = time.perf_counter()
                forward(rows)
                products.setdefault((mode, rows), []).append((t1 - t0) * 1e3)
                forwards.setdefault((mode, rows), []).append((time.perf_counter() - t1) * 1e3)
    report("products", products)
    report("forward ", forwards)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
