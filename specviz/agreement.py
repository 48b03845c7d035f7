"""`python -m specviz agreement`: how often greedy speculative output equals the target alone.

In fp32 they must be identical. In bf16 (the CPU default here) one target
forward over K+1 positions and a one-token forward can round differently and
flip a near-tie; this command measures how often that happens, per prompt.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .sampling import SamplingConfig
from .trace import first_difference


def default_prompts() -> Path:
    shared = Path(__file__).resolve().parent.parent.parent / "shared" / "prompts" / "bench.jsonl"
    return shared if shared.exists() else Path(__file__).resolve().parent.parent / "assets" / "prompts.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz agreement")
    parser.add_argument("--prompts", type=Path, default=default_prompts())
    parser.add_argument("--k", type=int, nargs="+", default=[4])
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--limit-prompts", type=int, default=None)
    args = parser.parse_args(argv)
    if not args.prompts.exists():
        parser.error(f"no such prompts file: {args.prompts}")
    if not all(1 <= k <= 32 for k in args.k) or not 1 <= args.max_new_tokens <= 4096:
        parser.error("--k must be in [1, 32] and --max-new-tokens in [1, 4096]")

    from .baseline import autoregressive_generate
    from .models import load_pair
    from .speculative import speculative_generate

    pair = load_pair(dtype=args.dtype)
    rows = [json.loads(line) for line in args.prompts.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit_prompts]
    greedy = SamplingConfig(temperature=0)
    same = total = 0
    print(f"{pair.name}, {pair.dtype}, greedy, {args.max_new_tokens} new tokens")
    for i, row in enumerate(rows):
        ids = pair.encode_chat(row["prompt"])
        plain = [s.token_id for s in autoregressive_generate(pair.target, ids, sampling=greedy,
                                                             max_new_tokens=args.max_new_tokens,
                                                             eos_token_id=pair.eos_token_ids)]
        for k in args.k:
            spec = [t for r in speculative_generate(pair.target, pair.draft, ids, k=k, sampling=greedy,
                                                    max_new_tokens=args.max_new_tokens, record=False,
                                                    eos_token_id=pair.eos_token_ids) for t in r.emitted]
            at = first_difference(spec, plain)
            same += at is None
            total += 1
            print(f"prompt {i:>2} ({row.get('category', '?')}) K={k}: "
                  + ("identical" if at is None else f"differs from token {at + 1}"), flush=True)
    print(f"identical: {same}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
