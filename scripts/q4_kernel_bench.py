"""Microbench of the q4a8 kernels against PyTorch's weight-only products, on the target's layer shapes.

Why: the aim is a 4-bit product whose 1-8 rows cost about one row. This times, interleaved
and as medians, specviz's q4a8 (4-bit weights, int8 activations) and q8a8 (int8 weights), PyTorch's
`_weight_int4pack_mm_for_cpu` (bf16 activations, the int4 kind today) and `_weight_int8pack_mm`
(the int8 kind) on the packaged target's shapes (Qwen2.5-Coder-1.5B: 1536 -> 8960 gate/up,
8960 -> 1536 down, 1536 -> 1536 q/o, 1536 -> 256 k/v) at 1-8 rows, and prints each kernel's
cost relative to its own one row and to PyTorch's 4-bit kernel at the same rows. Random weights
on a 4-bit grid: timings do not depend on the values. Run on a quiet machine; on a shared one the
figures are indicative only.

    PYTHONPATH=. python scripts/q4_kernel_bench.py [--rows 1 2 4 5 7 8] [--repeats 30] [--isa avx2] [--cold 8]
                                                   [--read-ahead 1]

One row's read-ahead is the kernels' default here (from 2 rows) unless --read-ahead 1: a loaded model gets the one
measured faster on its own products (specviz/models/quant/read_ahead.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

SHAPES = ((1536, 8960), (8960, 1536), (1536, 1536), (1536, 256))   # (in, out)


def kernels(k_in: int, n_out: int, ext_ok: bool) -> dict:
    """name -> fn(x fp32 [M, K]) for one layer shape, every kernel on the same 4-bit grid."""
    from specviz.models.quant import q4a8

    torch.manual_seed(0)
    g = k_in // 32
    codes = torch.randint(0, 16, (n_out, k_in), dtype=torch.int32)
    scale = torch.rand(n_out, g) * 0.01 + 1e-3
    lo = -8 * scale
    out = {}
    if ext_ok:
        packed = q4a8.pack_q4(codes, scale, lo)
        out["q4a8"] = lambda x: q4a8.q4_matmul(x, packed, n_out)
        p8 = q4a8.pack_q8(torch.randint(-127, 128, (n_out, k_in), dtype=torch.int8))
        out["q8a8"] = lambda x: q4a8.q8_matmul(x, p8, n_out)
    int4 = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)
    sz = torch.stack([scale, lo + 8 * scale], -1).transpose(0, 1).contiguous().to(torch.bfloat16)
    out["torch_int4"] = lambda x: torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), int4, 32, sz).float()
    w8 = torch.randint(-127, 128, (n_out, k_in), dtype=torch.int8)
    s8 = torch.rand(n_out).to(torch.bfloat16)
    out["torch_int8"] = lambda x: torch._weight_int8pack_mm(x.to(torch.bfloat16), w8, s8).float()
    return out


def bench(rows: list[int], repeats: int, copies: int = 1) -> dict:
    """Medians in ms: {(shape, kernel, rows): ms}, every kernel and row count interleaved per repeat.

    `copies` > 1 gives each kernel that many copies of its weights, used in turn: with enough of them the
    weights are never in the last-level cache, as in a decode (a model's layers are read once a token). With
    one copy, the rows after the first run on weights the previous call left in L3 (flattering 2-8 rows)."""
    from specviz.models.quant import q4a8

    ext_ok = q4a8.unavailable() is None
    times = {}
    with torch.inference_mode():
        for k_in, n_out in SHAPES:
            sets = [kernels(k_in, n_out, ext_ok) for _ in range(copies)]
            xs = {m: torch.randn(m, k_in) for m in rows}
            seen = {(name, m): [] for name in sets[0] for m in rows}
            for rep in range(repeats + 2):
                for (name, m), got in seen.items():
                    for fns in sets:
                        t0 = time.perf_counter()
                        fns[name](xs[m])
                        if rep >= 2:   # two warm-up passes: caches, thread pool, first-call dispatch
                            got.append(time.perf_counter() - t0)
            for (name, m), got in seen.items():
                times[(f"{k_in}->{n_out}", name, m)] = statistics.median(got) * 1e3
    return times


def report(times: dict, rows: list[int]) -> None:
    names = sorted({n for _, n, _ in times})
    for shape in dict.fromkeys(s for s, _, _ in times):
        print(f"\n{shape}  (ms, median; x = / its own 1 row; vs int4 = / torch_int4 at the same rows)")
        print("kernel       " + "".join(f"{m:>8} row" for m in rows))
        for name in names:
            ms = [times[(shape, name, m)] for m in rows]
            print(f"{name:<12} " + "".join(f"{v:>12.3f}" for v in ms))
            print(f"{'  x 1 row':<12} " + "".join(f"{v / ms[0]:>12.2f}" for v in ms))
            if name != "torch_int4":
                print(f"{'  vs int4':<12} " + "".join(f"{v / times[(shape, 'torch_int4', m)]:>12.2f}"
                                                       for v, m in zip(ms, rows)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 5, 7, 8])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--isa", choices=("avx512vnni", "avx2", "scalar"), help="force the q4a8 instruction set")
    p.add_argument("--threads", type=int, help="torch.set_num_threads (default: PyTorch's)")
    p.add_argument("--read-ahead", type=int, choices=(1, 2), default=2,
                   help="read the weights ahead from 1 row or from 2 (the kernels' default; a load measures which)")
    p.add_argument("--cold", type=int, default=1, metavar="COPIES",
                   help="copies of each kernel's weights used in turn (8 or more: the weights come from memory, "
                        "not L3, as in a decode; default 1)")
    args = p.parse_args()
    if args.isa:
        os.environ["SPECVIZ_Q4_ISA"] = args.isa
    if args.threads:
        torch.set_num_threads(args.threads)
    from specviz.models.quant import q4a8

    why = q4a8.unavailable()
    if why is None:
        from specviz.models.quant import read_ahead

        read_ahead.set_rows(args.read_ahead)
    print(f"read-ahead from {args.read_ahead} row(s); torch {torch.__version__}, {torch.get_num_threads()} threads, q4a8: "
          + (f"unavailable ({why})" if why else f"isa {q4a8.chosen_isa()} of {', '.join(q4a8.supported_isas())}"))
    report(bench(args.rows, args.repeats, args.cold), args.rows)


if __name__ == "__main__":
    main()
