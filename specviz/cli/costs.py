"""`python -m specviz costs`: c, verify_cost and the theoretical speedup for known architectures, offline.

Builds random-weight models with the shapes of real ones (specviz.bench.shapes)
and times bare forwards with the benchmark's own `forward_costs`, so a pair we
cannot download (Qwen2.5 0.5B -> 7B, say) still gets its c and verify_cost on
this machine, and theory.expected_speedup turns an assumed alpha into a speedup.
With `--draft FILE.gguf --target FILE.gguf` it times a pair of GGUF files instead,
loaded as `load_pair` loads them for the app and the bench (their own weights, on
the kernels the load chooses), so the costs are those the decoder will meet.
"""
from __future__ import annotations

import argparse
import sys
import time

from ..limits import COSTS_MAX_LAYERS, COSTS_MAX_PROMPT_TOKENS, COSTS_MAX_REPEATS, MAX_K
from .args import Parser, bounded

GIB = 1024 ** 3


def build_parser() -> argparse.ArgumentParser:
    from ..bench.shapes import SHAPES

    p = Parser(prog="python -m specviz costs", error_prefix="specviz costs",
               description="Time one-token and (K+1)-token forwards of random-weight models with the shapes of "
                           "known architectures (nothing is downloaded) and print c, verify_cost and the "
                           "theoretical speedup per K.")
    names = list(SHAPES)
    p.add_argument("--draft-shape", choices=names, metavar="SHAPE", help=f"one of: {' '.join(names)}")
    p.add_argument("--target-shape", choices=names, metavar="SHAPE", help="as --draft-shape")
    p.add_argument("--draft", metavar="FILE.gguf", help="time this GGUF file as the draft (with --target; instead "
                                                        "of the shapes)")
    p.add_argument("--target", metavar="FILE.gguf", help="time this GGUF file as the target (with --draft)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda when available, else cpu)")
    p.add_argument("--dtype", default=None, choices=["fp32", "bf16", "fp16"],
                   help="default: bf16 on CUDA, bf16 on a CPU that computes it natively, else fp32")
    p.add_argument("--k", nargs="+", type=bounded(int, 1, MAX_K, "--k"), default=[1, 2, 4, 8],
                   help="draft lengths (default: 1 2 4 8)")
    p.add_argument("--alpha", type=bounded(float, 0.0, 1.0, "--alpha"), default=0.8,
                   help="assumed per-token acceptance probability for the theory (default 0.8)")
    p.add_argument("--compile", choices=["on", "off", "auto"], default="auto",
                   help="torch.compile the forwards: needs CUDA here (auto = on with CUDA, off on a CPU)")
    p.add_argument("--layers", type=bounded(int, 1, COSTS_MAX_LAYERS, "--layers"), default=None,
                   help="override both models' layer count (a quick look: costs scale about linearly in it)")
    p.add_argument("--prompt-tokens", type=bounded(int, 1, COSTS_MAX_PROMPT_TOKENS, "--prompt-tokens"), default=128,
                   help="context already in the cache when the forwards are timed (default 128)")
    p.add_argument("--repeats", type=bounded(int, 1, COSTS_MAX_REPEATS, "--repeats"), default=5,
                   help="timed repetitions per forward; the median is reported (default 5)")
    return p


def _device_and_dtype(parser, args):
    """The device and dtype asked for, checked; a bad one is a one-line error."""
    import torch

    from ..models.loading import default_device_and_dtype, parse_dtype

    default_dev, default_dt = default_device_and_dtype()
    try:
        device = torch.device(args.device) if args.device else default_dev
    except (RuntimeError, TypeError):
        parser.error(f"unknown --device {args.device!r}; use cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda requested but no CUDA GPU is available")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {device.type} is not supported here; use cpu or cuda")
    dtype = parse_dtype(args.dtype)
    if dtype is None:
        dtype = default_dt if device.type == default_dev.type else (
            torch.bfloat16 if device.type == "cuda" else torch.float32)
    return device, dtype


def _compile(models, mode: str, device) -> str:
    """torch.compile each model's forward where it can run; returns how the forwards run, for the header."""
    import torch

    if mode == "off" or (mode == "auto" and device.type != "cuda"):
        return "eager"
    if device.type != "cuda":
        print("specviz costs: compile needs CUDA here; running eager", file=sys.stderr)
        return "eager"
    for m in models:
        m.forward = torch.compile(m.forward, dynamic=True)
    return "torch.compile"


def main(argv: list[str] | None = None) -> int:
    """`python -m specviz costs ...`; returns the exit code (2 for bad arguments or too little memory)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        files = _files(parser, args)
        device, dtype = _device_and_dtype(parser, args)
        metas, need = (None, None) if files else _plan(parser, args, device, dtype)
    except SystemExit as e:   # a bad argument or too little memory (already reported in one line), or --help
        return int(e.code or 0)

    import torch

    from ..bench.costs import forward_costs, theory_speedup

    t0 = time.perf_counter()
    try:
        draft, target, what = _files_pair(args, device, dtype) if files else _shapes_pair(args, metas, device, dtype)
    except _Refused as e:   # a file refused in one sentence (unsupported, cut short, vocabularies differ, memory)
        print(f"specviz costs: error: {e}", file=sys.stderr)
        return 1
    how = _compile((draft, target), args.compile, device)
    vocab = min(draft.config.vocab_size, target.config.vocab_size)
    ids = torch.randint(0, vocab, (args.prompt_tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    ks = sorted(set(args.k))
    try:
        fc = forward_costs(target, draft, ids, ks, repeats=args.repeats)
    except Exception as e:   # a compiled forward that fails, say: one line, not a traceback
        print(f"specviz costs: error: timing the forwards failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    dt_name = str(dtype).removeprefix("torch.")
    print(f"{what}, {device} {dt_name}, {how}, {args.prompt_tokens}-token context"
          + (f", {args.layers} layers each" if args.layers else "")
          + (f", weights ~{need / GIB:.1f} GiB" if need else "")
          + f", built and timed in {time.perf_counter() - t0:.1f} s")
    print(f"one-token forward: target {fc.target_1 * 1000:.2f} ms, draft {fc.draft_1 * 1000:.2f} ms; "
          f"c = {fc.c:.3f}")
    print(f"{'K':>3}{'target K+1 (ms)':>17}{'verify_cost':>13}{f'theory (alpha {args.alpha:g})':>22}")
    for k in ks:
        vc = fc.verify_cost(k)
        print(f"{k:>3}{fc.target_k[k] * 1000:>17.2f}{vc:>13.3f}"
              f"{theory_speedup(args.alpha, k, fc.c, vc):>21.2f}x")
    return 0


class _Refused(Exception):
    """A pair of files the load refused, in its own sentence."""


def _files(parser, args) -> bool:
    """Whether GGUF files are timed (both given) rather than shapes (both given); anything else is refused."""
    files, shapes = (args.draft, args.target), (args.draft_shape, args.target_shape)
    if any(files) and any(shapes):
        parser.error("give either --draft/--target (GGUF files) or --draft-shape/--target-shape, not both")
    if any(files):
        if not all(files):
            parser.error("--draft and --target go together")
        if args.layers:
            parser.error("--layers changes built shapes only; a file's layers are its own")
        return True
    if not all(shapes):
        parser.error("give --draft-shape and --target-shape (or --draft and --target GGUF files)")
    return False


def _shapes_pair(args, metas, device, dtype):
    """Random-weight models of the two shapes, prepared to decode as load_pair prepares its models (the forwards
    timed are the decoder's): (draft, target, a line naming them)."""
    from ..bench.shapes import materialize
    from ..models.prepare import prepare_models

    draft, target = (prepare_models(materialize(m, device, dtype, seed=i)) for i, m in enumerate(metas))
    return draft, target, (f"draft {args.draft_shape} ({_params(metas[0])}) -> target {args.target_shape} "
                           f"({_params(metas[1])})")


def _files_pair(args, device, dtype):
    """The two GGUF files loaded as the app and the bench load them: (draft, target, a line naming them)."""
    from ..models.loading import ModelLoadError, load_pair

    try:
        pair = load_pair(draft=args.draft, target=args.target, device=device, dtype=dtype)
    except ModelLoadError as e:
        raise _Refused(str(e)) from None
    return pair.draft, pair.target, (f"draft {pair.draft_name} ({_params(pair.draft)}, {pair.draft_weights}) -> "
                                     f"target {pair.target_name} ({_params(pair.target)}, {pair.target_weights})")


def _plan(parser, args, device, dtype):
    """Both models on the meta device and the memory they need; refuses (exit 2) when the device has less."""
    from ..bench.shapes import SHAPES, bytes_needed, config_of, meta_model, parameter_count
    from ..models import devices   # read at call time: tests stand in for devices.available_memory

    positions = args.prompt_tokens + max(args.k) + 8
    metas = [meta_model(config_of(SHAPES[name], args.layers, max_positions=max(positions, 512)))
             for name in (args.draft_shape, args.target_shape)]
    need = sum(bytes_needed(parameter_count(m), dtype, m.config.vocab_size, max(args.k)) for m in metas)
    have = devices.available_memory(device)
    if have is not None and need > have:
        where = "the GPU has" if device.type == "cuda" else "this machine has"
        parser.error(f"{args.draft_shape} + {args.target_shape} in {str(dtype).removeprefix('torch.')} need about "
                     f"{need / GIB:.1f} GiB; {where} {have / GIB:.1f} GiB available "
                     f"(try --dtype bf16, smaller shapes or --layers)")
    return metas, need


def _params(model) -> str:
    from ..bench.shapes import parameter_count

    n = parameter_count(model)
    return f"{n / 1e9:.2f}B params" if n >= 1e9 else f"{n / 1e6:.0f}M params"
