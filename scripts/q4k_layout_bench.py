"""Issue 29, lever 1: the packaged target's Q4_K layers in the two 4-bit layouts of the q4a8 kernel, timed in one
process, interleaved: fp32 scales recovered from the weights ("q4", 0.75 B a weight) against the GGUF's own
6-bit scales ("q4k", 0.59 B). The largest Q4_K layer at 1, 4 and 8 rows, then (--forward) whole forwards.

    python scripts/q4k_layout_bench.py [--repeats 30] [--forward]

Medians in ms; the host's other load shows in the spread, so both layouts take turns call by call.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout's specviz

ROWS = (1, 4, 8)


def timed(calls: dict, xs: dict, repeats: int) -> dict:
    """{(name, rows): median ms}, the calls taking turns; the first round warms up."""
    seen = {(name, rows): [] for name in calls for rows in xs}
    with torch.inference_mode():
        for rep in range(repeats + 1):
            for (name, rows), out in seen.items():
                t0 = time.perf_counter()
                calls[name](xs[rows])
                if rep:
                    out.append((time.perf_counter() - t0) * 1e3)
    return {key: statistics.median(v) for key, v in seen.items()}


def report(title: str, med: dict) -> None:
    print(title)
    for rows in ROWS:
        old, new = med[("q4", rows)], med[("q4k", rows)]
        print(f"  {rows} rows: q4 {old:8.3f} ms   q4k {new:8.3f} ms   q4k/q4 {new / old:.3f}")


def layer_bench(model, repeats: int) -> None:
    from specviz.models.quant import q4a8, q4k, weights

    name = "model.layers.0.mlp.up_proj"
    weight = model.get_submodule(name).weight.detach().float()
    scales = q4k.load_scales(model, {name})[name]
    new = q4a8.Q4KA8Linear(weight, None, (q4k.exact_codes(weight, scales), *scales))
    old = q4a8.Q4A8Linear(weight, None, weights.int4_grid(weight))
    xs = {rows: torch.randn(rows, weight.shape[1]) for rows in ROWS}
    print(f"{name} {weight.shape[1]}x{weight.shape[0]}: q4 {old.packed.numel() / 2**20:.2f} MiB, "
          f"q4k {new.packed.numel() / 2**20:.2f} MiB")
    report("largest Q4_K layer", timed({"q4": old, "q4k": new}, xs, repeats))


def forward_bench(folder: str, repeats: int) -> None:
    from transformers import AutoModelForCausalLM

    from specviz.models.quant import weights

    models = {}
    for kind in ("q4", "q4k"):
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        if kind == "q4":   # today's layout: no scales found beside the model
            with mock.patch.object(weights, "load_scales", lambda *a, **k: {}):
                print("q4 ", weights.convert_target_weights(model, "q4a8"))
        else:
            print("q4k", weights.convert_target_weights(model, "q4a8"))
        models[kind] = model
    ids = {rows: torch.arange(100, 100 + rows)[None] for rows in ROWS}
    calls = {kind: (lambda x, m=m: m(x, use_cache=False)) for kind, m in models.items()}
    report("whole forward (no cache)", timed(calls, ids, max(3, repeats // 5)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--forward", action="store_true", help="also time whole forwards (loads the target twice)")
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    from specviz.models import packaged
    from specviz.models.quant import q4a8

    print(f"isa {q4a8.chosen_isa()}, {torch.get_num_threads()} threads")
    folder = str(packaged.convert_packaged(packaged.PACKAGED_TARGET, True, lambda f, m: None, 0, 1))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    layer_bench(model, args.repeats)
    del model
    if args.forward:
        forward_bench(folder, args.repeats)


if __name__ == "__main__":
    main()
