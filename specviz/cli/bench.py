"""`python -m specviz bench`: the benchmark's command line (the measuring lives in specviz.bench)."""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..bench import BenchError, BenchPlan, Prompt, format_table, load_prompts, run_benchmark, write_results
from ..bench import llamacpp
from ..bench.methods import ALL_METHODS, METHODS, PEER_METHODS, default_methods
from ..bench.prompts import EXTRA_CATEGORY, default_prompts, select_categories
from ..runtime.decoding import COMPILE_CHOICES
from ..errors import ModelLoadError
from ..models.quant.weights import TARGET_WEIGHTS, candidate_weights
from ..limits import (ASSET_PROMPTS, BENCH_MAX_REPEATS, CLI_MAX_NEW_TOKENS, MAX_K, MAX_TEMPERATURE, REPO_ROOT,
                      SHARED_PROMPTS)
from ..engine.options import DecodeOptions
from ..engine.sampling import SamplingConfig
from .args import Parser, add_weight_options, bounded, compile_refusal, weight_options


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m specviz bench", error_prefix="specviz bench",
               description="Throughput of speculative decoding versus K, side by side with the target alone "
                           "and transformers' generate / assisted generation.")
    p.add_argument("--prompts", help=f"JSONL file of {{\"prompt\", \"category\"}} (default: {SHARED_PROMPTS} "
                                     f"when present, plus the {EXTRA_CATEGORY} prompts of "
                                     f"{ASSET_PROMPTS.relative_to(REPO_ROOT)} it lacks; else that file alone)")
    p.add_argument("--categories", nargs="+", metavar="CATEGORY",
                   help=f"only the prompts of these categories (e.g. --categories {EXTRA_CATEGORY}); "
                        "applied before --limit-prompts")
    p.add_argument("--k", nargs="+", type=bounded(int, 1, MAX_K, "K"), default=[1, 2, 3, 4, 6, 8],
                   help="draft lengths to sweep (default: 1 2 3 4 6 8)")
    p.add_argument("--lookup-k", type=bounded(int, 1, MAX_K, "--lookup-k"), default=None, metavar="N",
                   help="the most tokens a round of the hybrid methods proposes when it drafts by prompt lookup "
                        "(proposing costs nothing, only verify rows); their model rounds stay at K (default: K)")
    p.add_argument("--max-new-tokens", type=bounded(int, 1, CLI_MAX_NEW_TOKENS, "--max-new-tokens"), default=128)
    p.add_argument("--temperature", nargs="+", type=bounded(float, 0.0, MAX_TEMPERATURE, "--temperature"),
                   default=[0.0, 0.7], help="temperatures (0 = greedy; default: 0 0.7)")
    p.add_argument("--top-k", type=bounded(int, 0, 1_000_000, "--top-k"), default=0, help="0 = off")
    p.add_argument("--top-p", type=bounded(float, 1e-6, 1.0, "--top-p"), default=1.0, help="1 = off")
    p.add_argument("--repeats", type=bounded(int, 1, BENCH_MAX_REPEATS, "--repeats"), default=3)
    p.add_argument("--out", default="bench-results", help="output folder (default: bench-results)")
    p.add_argument("--draft", help="draft model (Hub id, folder or .gguf file); with --target")
    p.add_argument("--target", help="target model (Hub id, folder or .gguf file); with --draft")
    p.add_argument("--device", help="cpu, cuda, cuda:0 ... (default: automatic)")
    p.add_argument("--dtype", help="float32, bfloat16, float16 (default: automatic)")
    add_weight_options(p)
    p.add_argument("--baselines", nargs="+", default=["auto"], choices=("auto", "none") + TARGET_WEIGHTS[1:],
                   metavar="WEIGHTS",
                   help="other configurations of the same target, each run after the main run as a target-alone "
                        "baseline (one at a time); the fastest target alone of all configurations is every "
                        "speedup's reference. auto = every other configuration this machine runs (a CPU); "
                        "none = only the main one (default: auto)")
    p.add_argument("--baseline-methods", nargs="+", choices=METHODS, default=["target", "hf_generate"],
                   metavar="METHOD", help="what runs on those configurations (default: target hf_generate)")
    p.add_argument("--hf-assistant", default="as-loaded", choices=("as-loaded", "specviz"),
                   help="the draft transformers' assisted methods get: as transformers would load it, or "
                        "specviz's own (e.g. with int8 weights) (default: as-loaded)")
    p.add_argument("--limit-prompts", type=bounded(int, 1, 100_000, "--limit-prompts"),
                   help="use only the first N prompts")
    p.add_argument("--methods", nargs="+", choices=ALL_METHODS, default=None, metavar="METHOD",
                   help=f"subset of: {' '.join(ALL_METHODS)} (default: all that make sense on the device: "
                        "hf_static only on CUDA; the llama.cpp peers on a CPU when llama-cpp-python is installed)")
    p.add_argument("--gguf", metavar="FILE",
                   help="the target as a GGUF file, for the llama.cpp peers (default: the packaged target's own)")
    p.add_argument("--seed", type=bounded(int, 0, 2**31 - 1, "--seed"), default=0)
    p.add_argument("--threads", type=bounded(int, 0, 1024, "--threads"), default=0,
                   help="torch CPU threads (default 0: torch's choice); 1 is steadier on a shared machine")
    p.add_argument("--compile", choices=COMPILE_CHOICES, default="auto",
                   help="specviz's own loops (target, specviz*): static KV caches and CUDA-graph forwards, compiled "
                        "and captured before timing (on: torch.compile; graphs: plain CUDA graphs without it); "
                        "auto = on with CUDA (graphs on ZeroGPU), off on a CPU (default: auto)")
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up generation")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _parse(parser: argparse.ArgumentParser, argv: list[str]):
    """Arguments, prompts, samplings and output folder, all checked before any model loads.

    A bad one exits (SystemExit 2) after one line on stderr.
    """
    args = parser.parse_args(argv)
    try:
        if (args.draft is None) != (args.target is None):
            raise BenchError("give both --draft and --target, or neither for the packaged pair")
        if compile_refusal(args.compile, args.device):
            raise BenchError(compile_refusal(args.compile, args.device))
        prompts = load_prompts(args.prompts) if args.prompts else default_prompts(SHARED_PROMPTS, ASSET_PROMPTS)
        prompts = select_categories(prompts, args.categories)
        if args.limit_prompts:
            prompts = prompts[: args.limit_prompts]
        samplings = [SamplingConfig(t, args.top_k, args.top_p) for t in dict.fromkeys(args.temperature)]
        if args.gguf and not Path(args.gguf).is_file():
            raise BenchError(f"--gguf {args.gguf} is not a file")
        out_dir = Path(args.out)
        if out_dir.exists() and not out_dir.is_dir():
            raise BenchError(f"--out {out_dir} exists and is not a folder")
    except BenchError as e:
        parser.error(str(e))
    return args, prompts, samplings, out_dir


def _default_loader(**kwargs):
    from ..models.loading import load_pair

    return load_pair(**kwargs)


def main(argv: Sequence[str] | None = None, *, pair_loader: Callable[..., Any] | None = None) -> int:
    """`python -m specviz bench ...`; returns the exit code (2 for bad arguments or files)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, prompts, samplings, out_dir = _parse(build_parser(), argv)
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)

    try:   # one line per hf_assisted call about generation_config otherwise
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass
    if args.threads:
        torch.set_num_threads(args.threads)
    load = pair_loader or _default_loader
    print(f"loading models{' ' + args.draft + ' -> ' + args.target if args.draft else ' (packaged pair)'} ...",
          file=sys.stderr)
    try:
        pair = load(draft=args.draft, target=args.target, device=args.device, dtype=args.dtype,
                    weights=weight_options(args))
    except (ValueError, RuntimeError, OSError) as e:
        print(f"specviz bench: error: cannot load the models: {e}", file=sys.stderr)
        return 1
    encoded = [pair.encode_chat(p.text) for p in prompts]
    device = pair.device
    on_cpu = torch.device(device).type == "cpu" if device is not None else True
    chosen = args.methods or default_methods(device) + (list(PEER_METHODS) if on_cpu else [])
    chosen, peer, peer_meta = _llamacpp_peer(pair, args, chosen)
    args.methods = [m for m in ALL_METHODS if m in chosen]   # in ALL_METHODS order, as recorded in meta
    hf_draft = None
    if args.hf_assistant == "as-loaded" and pair.draft_weights != "as-loaded" and {
            "hf_assisted", "hf_assisted_default"} & set(args.methods):
        print("loading the draft as loaded, for transformers' assisted generation ...", file=sys.stderr)
        hf_draft = pair.draft_as_loaded()
    plan = BenchPlan(prompts, encoded, list(dict.fromkeys(args.k)), samplings, args.methods, repeats=args.repeats,
                     warmup=not args.no_warmup, quiet=args.quiet, hf_draft=hf_draft,
                     variants=_variants(pair, args.baselines), variant_methods=args.baseline_methods, llamacpp=peer,
                     lookup_k=args.lookup_k)
    result = run_benchmark(pair.target, pair.draft, plan,
                           DecodeOptions(max_new_tokens=args.max_new_tokens, seed=args.seed, tokenizer=pair.tokenizer,
                                         compile=args.compile))
    result["meta"] = _meta(pair, args, argv, prompts)
    if peer_meta:
        result["meta"]["llamacpp"] = peer_meta
    json_path, html_path = write_results(result, out_dir)
    print(format_table(result))
    print(f"\nwrote {json_path} and {html_path}")
    return 0


def _llamacpp_peer(pair, args, chosen: list[str]) -> tuple[list[str], Any, dict | None]:
    """(the methods left to run, the llama.cpp peer or None, what to record about it in meta).

    Asked for (or by default on a CPU) but unable to run here, the llama.cpp
    methods are dropped with one line on stderr saying why and how to install them.
    """
    if not set(chosen) & set(PEER_METHODS):
        return chosen, None, None
    reason = llamacpp.missing_package()
    peer = None
    if reason is None:
        try:
            gguf = _target_gguf(pair, args.gguf)
        except (ModelLoadError, OSError) as e:
            gguf, reason = None, llamacpp.skipped(f"the target's GGUF file could not be assembled: {e}")
        if reason is None:
            peer, reason = llamacpp.peer_for(gguf, args.threads or torch.get_num_threads())
    if reason:
        print(f"specviz bench: {reason}", file=sys.stderr)
        return [m for m in chosen if m not in PEER_METHODS], None, {"skipped": reason}
    return chosen, peer, peer.describe()


def _target_gguf(pair, gguf: str | None) -> Path | None:
    """The target's GGUF file: --gguf, else the one the target was loaded from (the packaged target's is assembled
    once into the cache), else none."""
    if gguf:
        return Path(gguf)
    return getattr(pair.target_source, "path", None)   # a models.gguf_file.GGUFModelFile


def _variants(pair, baselines: list[str]) -> list[tuple[str, Callable[[], Any]]]:
    """(label, loader) for each other target configuration to run as a baseline (see --baselines)."""
    if "none" in baselines:
        return []
    if pair.target_source is None:   # built in memory: there is nothing to load the other configurations from
        print("specviz bench: this pair was not loaded from files; no other target configurations to compare",
              file=sys.stderr)
        return []
    main = pair.target_weights
    wanted = candidate_weights(pair.device, pair.dtype) if "auto" in baselines else baselines
    seen = {pair.weights_label(main)}
    out = []
    for w in dict.fromkeys(wanted):
        label = pair.weights_label(w)
        if label not in seen:
            seen.add(label)
            out.append((label, lambda w=w: pair.target_variant(w)))
    return out


def _q4a8_meta(pair) -> dict | None:
    """Which instruction set specviz's 4-bit kernels ran with (or why they could not), where they were offered."""
    if pair.device.type != "cpu" or pair.target_weights not in ("q4a8", "int4"):
        return None
    from ..models.quant import huge_pages, q4a8
    from ..models.quant.weights_cache import STORED

    why = q4a8.unavailable()
    stored = tuple(STORED.values())
    pages = {"available": huge_pages.available(),   # weights advised into 2 MB pages, and what the kernel gave
             "target_advised_mb": huge_pages.advised_bytes(pair.target, stored) >> 20,
             "draft_advised_mb": huge_pages.advised_bytes(pair.draft, stored) >> 20,
             "process_huge_mb": huge_pages.process_huge_bytes() >> 20}
    return {"unavailable": why} if why else {"isa": q4a8.chosen_isa(), "supported": q4a8.supported_isas(),
                                             "read_ahead": pair.read_ahead, "huge_pages": pages}


def _meta(pair, args, argv: list[str], prompts: list[Prompt]) -> dict:
    """What was run, where and when: enough to reproduce or question a number in the report."""
    device = pair.device
    meta = {
        "pair": pair.name, "device": str(device), "dtype": str(pair.dtype),
        "command": "python -m specviz bench " + " ".join(argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "python": platform.python_version(), "torch": torch.__version__},
        "prompts": [asdict(p) for p in prompts],
        "max_new_tokens": args.max_new_tokens, "repeats": args.repeats, "ks": list(dict.fromkeys(args.k)),
        "lookup_k": args.lookup_k,
        "methods": args.methods, "compile": args.compile,
        "linear_path": pair.linear_path, "linear_probe": pair.linear_probe, "draft_weights": pair.draft_weights,
        "target_weights": pair.weights_label(), "target_layers": pair.target_layers, "target_probe": pair.target_probe,
        "q4a8_kernels": _q4a8_meta(pair),
        "hf_assistant": ("the draft as loaded (the pair's dtype, the target's kernels)"
                         if args.hf_assistant == "as-loaded" else "specviz's draft"),
    }
    try:
        import transformers
        meta["machine"]["transformers"] = transformers.__version__
    except Exception:  # pragma: no cover
        pass
    if torch.cuda.is_available() and device is not None and torch.device(device).type == "cuda":
        meta["machine"]["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return meta
