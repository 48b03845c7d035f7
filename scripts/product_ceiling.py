"""How close the q4a8 products of the packaged target come to this CPU's int8 arithmetic limit, at 1-8 rows.

Why: a verify of K+1 rows costs about one token only while the products stay memory-bound. This
measures, in one run:
  1. the int8 multiply-add rate one core sustains with the instruction the kernels use (AVX-512 VNNI
     `vpdpbusd zmm`: 64 multiply-adds; AVX2 `vpmaddubsw ymm`: 32, each then needing a `vpmaddwd`, so half of it
     is AVX2's real limit), from a tiny C loop of independent instructions (needs a C compiler; skipped without
     one) - the limit no product can pass;
  2. the target's products as a decode runs them (every layer's joined projections in order, the weights
     from memory), per layer kind at each row count, in ms and as a multiple of one row;
  3. the same kernels on one layer's first 256 tiles used over and over (the weights in L3), per thread:
     the multiply-adds a core achieves when memory is no limit, as a share of (1).
At one row the products should run at the memory's speed; where 8 rows cost far more than one, (3) says whether
the tiles are near the arithmetic limit (then only fewer instructions a multiply-add help) or not.

    PYTHONPATH=. python scripts/product_ceiling.py [--rows 1 2 4 8] [--repeats 9]

Run with nothing else on the machine; on a shared VM the figures move with the neighbours (docs/measurements.md).
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import torch

_PEAK_C = r"""
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec a; clock_gettime(CLOCK_MONOTONIC, &a); return a.tv_sec + a.tv_nsec * 1e-9; }
#define TWELVE(I, R) I(R, 0) I(R, 1) I(R, 2) I(R, 3) I(R, 4) I(R, 5) I(R, 6) I(R, 7) I(R, 8) I(R, 9) I(R, 10) I(R, 11)
#define VNNI(R, n) "vpdpbusd %%" #R "30, %%" #R "31, %%" #R #n "\n"
#define MADD(R, n) "vpmaddubsw %%" #R "14, %%" #R "15, %%" #R #n "\n"
int main(void) {
  const long m = 100000000L;
  double t = now();
  for (long i = 0; i < m; ++i) __asm__ volatile(INSTR ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                                               "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
  printf("%.6f\n", m * 12 / (now() - t));
  return 0;
}
"""


def instruction_rate(isa: str) -> tuple[str, float] | None:
    """(instruction, multiply-adds a second on one core), or None without a C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return None
    if isa == "avx512vnni":
        name, macs, instr, flags = "vpdpbusd zmm", 64, "TWELVE(VNNI, zmm)", ["-mavx512f", "-mavx512vnni"]
    else:
        name, macs, instr, flags = "vpmaddubsw ymm", 32, "TWELVE(MADD, ymm)", ["-mavx2"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "peak.c"), os.path.join(tmp, "peak")
        with open(src, "w") as f:
            f.write(f"#define INSTR {instr}\n" + _PEAK_C)
        subprocess.run([cc, "-O2", *flags, "-o", exe, src], check=True, capture_output=True)
        rates = [float(subprocess.run([exe], check=True, capture_output=True, text=True).stdout) for _ in range(3)]
    return name, max(rates) * macs


def model_parts(model):
    """[(tag, kind name, part, input width)] of every layer's joined projections, in a decode's order."""
    from specviz.models import lean_forward
    from specviz.models.quant import q4a8

    names = {v: k for k, v in q4a8.KINDS.items()}
    lean = lean_forward.lean_for(model)
    if lean is None:
        raise SystemExit("the target has no lean stack here (q4a8 kernels unavailable?)")
    cfg = model.config
    widths = {"qkv": cfg.hidden_size, "o": cfg.num_attention_heads * lean.head_dim, "gate_up": cfg.hidden_size,
              "down": cfg.intermediate_size}
    out = []
    for layer in lean.layers:
        for tag in ("qkv", "o", "gate_up", "down"):
            for part in getattr(layer, tag).parts:
                out.append((tag, names[part[4]], part, widths[tag]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    if not all(1 <= r <= 8 for r in args.rows) or 1 not in args.rows:
        raise SystemExit("--rows: 1 to 8, one of them 1")

    from specviz.models.loading import load_pair
    from specviz.models.quant import q4a8

    ext = q4a8.extension()
    if ext is None:
        raise SystemExit(f"q4a8 kernels unavailable: {q4a8.unavailable()}")
    isa_name = q4a8.chosen_isa()
    peak = instruction_rate(isa_name) if isa_name != "scalar" else None
    threads = torch.get_num_threads()
    print(f"kernels: {isa_name}, {threads} threads")
    if peak:
        print(f"1. one core's limit: {peak[0]} at {peak[1] / 1e9:.1f} G multiply-adds/s"
              + (" (each needs a vpmaddwd too: half of it is AVX2's limit)" if isa_name == "avx2" else ""))

    model = load_pair().target
    parts = model_parts(model)
    rows = sorted(set(args.rows))
    xs = {n: [torch.randn(n, w).to(model.dtype) for *_, w in parts] for n in rows}
    times = {n: collections.defaultdict(list) for n in rows}
    macs = collections.Counter()
    for tag, kind, (packed, width, *_), w in parts:
        macs[(tag, kind)] += width * w
    with torch.inference_mode():
        for _ in range(args.repeats):
            for n in rows:
                spent = collections.Counter()
                for (tag, kind, (packed, width, scales, bias, k), _), x in zip(parts, xs[n]):
                    t = time.perf_counter()
                    ext.linear(x, packed, width, scales, bias, k)
                    spent[(tag, kind)] += time.perf_counter() - t
                for key, s in spent.items():
                    times[n][key].append(s)
    print("2. the target's products as a decode runs them (weights from memory; ms, x its own one row)")
    print(f"   {'layers':14s} " + "".join(f"{f'{n} row' + ('s' if n > 1 else ''):>16s}" for n in rows))
    total = {n: 0.0 for n in rows}
    for key in sorted(times[1]):
        one = statistics.median(times[1][key])
        cells = []
        for n in rows:
            ms = statistics.median(times[n][key])
            total[n] += ms
            cells.append(f"{ms * 1e3:8.2f} {ms / one:5.2f}x")
        print(f"   {key[0] + ' ' + key[1]:14s} " + "".join(f"{c:>16s}" for c in cells))
    print(f"   {'all':14s} " + "".join(f"{f'{total[n] * 1e3:8.2f} {total[n] / total[1]:5.2f}x':>16s}" for n in rows))
    if peak:
        for n in rows:
            rate = sum(macs.values()) * n / total[n] / threads
            print(f"   {n} row{'s' if n > 1 else ' '}: {rate / 1e9:6.1f} G multiply-adds/s a thread = "
                  f"{rate / peak[1]:4.0%} of (1)")
    print("3. one layer's first 256 tiles, used over and over (weights in L3)")
    tag, kind, (packed, width, scales, bias, k), w = max(
        (p for p in parts if p[0] == "gate_up"), key=lambda p: p[2][0].shape[0])
    hot = packed[:256].contiguous()
    for count in sorted({1, threads}):
        torch.set_num_threads(count)
        cells = []
        for n in rows:
            x = torch.randn(n, w).to(model.dtype)
            best = float("inf")
            with torch.inference_mode():
                for _ in range(5):
                    t = time.perf_counter()
                    for _ in range(50):
                        ext.linear(x, hot, 256 * q4a8.TILE, None if scales is None else scales[:256 * q4a8.TILE],
                                   None if bias is None else bias[:256 * q4a8.TILE], k)
                    best = min(best, (time.perf_counter() - t) / 50)
            rate = n * w * 256 * q4a8.TILE / best / count
            cells.append(f"{n}r {best * 1e6:5.0f} us" + (f" {rate / peak[1]:4.0%}" if peak else ""))
        print(f"   {tag} {kind}, {count} thread{'s' if count > 1 else ' '}: " + " | ".join(cells)
              + ("  (share of (1) a thread)" if peak else ""))
    torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
