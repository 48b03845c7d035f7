"""`python -m specviz agreement`: how often greedy speculative output equals the target alone.

In fp32 they must be identical. In bf16 (the CPU default here) one target
forward over K+1 positions and a one-token forward can round differently and
flip a near-tie; this command measures how often that happens, per prompt.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..bench.prompts import BenchError, load_prompts
from ..drafters import DRAFTERS
from ..limits import CLI_MAX_NEW_TOKENS, MAX_K, default_prompts_file
from ..sampling import SamplingConfig
from ..trace import first_difference
from .args import Parser, bounded


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m specviz agreement", error_prefix="specviz agreement",
                    description="How often greedy speculative output equals the target alone, per prompt.")
    parser.add_argument("--prompts", type=Path, default=None,
                        help="JSONL file of {\"prompt\", \"category\"} (default: the benchmark's prompts)")
    parser.add_argument("--k", type=bounded(int, 1, MAX_K, "--k"), nargs="+", default=[4])
    parser.add_argument("--max-new-tokens", type=bounded(int, 1, CLI_MAX_NEW_TOKENS, "--max-new-tokens"),
                        default=64)
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--drafter", choices=DRAFTERS, default="model",
                        help="model (default), ngram (prompt lookup, no draft model) or hybrid")
    parser.add_argument("--limit-prompts", type=bounded(int, 1, 100_000, "--limit-prompts"), default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python -m specviz agreement ...`; returns the exit code (2 for bad arguments or files)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        try:
            prompts = load_prompts(args.prompts or default_prompts_file())[: args.limit_prompts]
        except BenchError as e:
            parser.error(str(e))
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)

    from ..baseline import autoregressive_generate
    from ..models import load_pair
    from ..speculative import speculative_generate

    pair = load_pair(dtype=args.dtype)
    greedy = SamplingConfig(temperature=0)
    same = total = 0
    print(f"{pair.name}, {pair.dtype}, greedy, {args.max_new_tokens} new tokens, drafter {args.drafter}")
    draft = None if args.drafter == "ngram" else pair.draft
    for i, prompt in enumerate(prompts):
        ids = pair.encode_chat(prompt.text)
        plain = [s.token_id for s in autoregressive_generate(pair.target, ids, sampling=greedy,
                                                             max_new_tokens=args.max_new_tokens,
                                                             eos_token_id=pair.eos_token_ids)]
        for k in args.k:
            spec = [t for r in speculative_generate(pair.target, draft, ids, k=k, sampling=greedy,
                                                    max_new_tokens=args.max_new_tokens, record=False,
                                                    eos_token_id=pair.eos_token_ids, drafter=args.drafter)
                    for t in r.emitted]
            at = first_difference(spec, plain)
            same += at is None
            total += 1
            print(f"prompt {i:>2} ({prompt.category}) K={k}: "
                  + ("identical" if at is None else f"differs from token {at + 1}"), flush=True)
    print(f"identical: {same}/{total}")
    return 0
