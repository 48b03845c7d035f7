"""`python -m specviz agreement`: does greedy speculative output equal the target alone, on every prompt?

The promise is bit-identity: every row of a verify is computed exactly as the one-token step
computes it (specviz.runtime.attention, specviz.runtime.invariance), wherever the target's products are
row-invariant (its int4 and int8 weights on a CPU: what `auto` picks there). This command runs
every drafter the app offers on every prompt and says, per prompt and method, "identical" or
where the outputs part; it prints the configuration it ran and whether identity is guaranteed
on it (and if not, why). Exit code 1 when a configuration that guarantees identity differs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..bench.prompts import BenchError, load_prompts
from ..engine.drafters import DRAFTERS
from ..engine.options import HYBRID_DRAFTERS
from ..limits import APP_MAX_TREE_NODES, ASSET_PROMPTS, CLI_MAX_NEW_TOKENS, MAX_K, SHARED_PROMPTS
from ..engine.sampling import SamplingConfig
from ..trace.records import first_difference
from .args import Parser, add_weight_options, bounded, weight_options

METHODS = DRAFTERS + ("tree",)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m specviz agreement", error_prefix="specviz agreement",
                    description="Whether greedy speculative output equals the target alone, per prompt and drafter.")
    parser.add_argument("--prompts", type=Path, nargs="+", default=None,
                        help="JSONL files of {\"prompt\", \"category\"} (default: assets/prompts.jsonl and the "
                             "shared bench prompts where present)")
    parser.add_argument("--k", type=bounded(int, 1, MAX_K, "--k"), nargs="+", default=[2, 3, 4, 5, 6],
                        help="draft lengths of the draft model's chain (default: 2 3 4 5 6)")
    parser.add_argument("--drafter", choices=METHODS, nargs="+", default=["model", "hybrid", "trimmed", "tree"],
                        help="drafters to run: model (a chain at each --k), ngram, hybrid, trimmed, hybrid_trimmed "
                             "(at --other-k), tree (a dynamic tree of --tree-nodes nodes); default: model hybrid "
                             "trimmed tree")
    parser.add_argument("--other-k", type=bounded(int, 1, MAX_K, "--other-k"), default=3,
                        help="K of the ngram, hybrid, trimmed and hybrid_trimmed drafters (default 3)")
    parser.add_argument("--lookup-k", type=bounded(int, 1, MAX_K, "--lookup-k"), default=None, metavar="N",
                        help="the hybrids' lookup rounds propose up to N tokens (default: --other-k)")
    parser.add_argument("--tree-nodes", type=bounded(int, 1, APP_MAX_TREE_NODES, "--tree-nodes"), default=4,
                        help="node budget of the dynamic tree (default 4)")
    parser.add_argument("--max-new-tokens", type=bounded(int, 1, CLI_MAX_NEW_TOKENS, "--max-new-tokens"),
                        default=64)
    parser.add_argument("--stop-at-eos", action="store_true",
                        help="stop at the end of text (default: count new tokens past it, as the bench does)")
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--draft", default=None, help="draft model: Hub id, folder or .gguf file (with --target; "
                                                      "default: the packaged pair)")
    parser.add_argument("--target", default=None, help="target model: Hub id, folder or .gguf file (with --draft)")
    add_weight_options(parser)
    parser.add_argument("--limit-prompts", type=bounded(int, 1, 100_000, "--limit-prompts"), default=None)
    return parser


def methods(args) -> list[tuple[str, dict]]:
    """(label, speculative_generate keywords) of every method the arguments ask for."""
    out = []
    for drafter in args.drafter:
        if drafter == "model":
            out += [(f"chain K={k}", {"k": k}) for k in args.k]
        elif drafter == "tree":
            out.append((f"tree dynamic:{args.tree_nodes}", {"tree": f"dynamic:{args.tree_nodes}"}))
        elif drafter in HYBRID_DRAFTERS and args.lookup_k is not None:
            out.append((f"{drafter} K={args.other_k} lookup {args.lookup_k}",
                        {"k": args.other_k, "drafter": drafter, "lookup_k": args.lookup_k}))
        else:
            out.append((f"{drafter} K={args.other_k}", {"k": args.other_k, "drafter": drafter}))
    return out


def prompt_files(args) -> list[Path]:
    if args.prompts:
        return args.prompts
    return [ASSET_PROMPTS] + ([SHARED_PROMPTS] if SHARED_PROMPTS.is_file() else [])


def main(argv: list[str] | None = None) -> int:
    """`python -m specviz agreement ...`; returns the exit code (2 for bad arguments or files)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        try:
            prompts = [p for f in prompt_files(args) for p in load_prompts(f)][: args.limit_prompts]
        except BenchError as e:
            parser.error(str(e))
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)

    from ..engine.baseline import autoregressive_generate
    from ..viz.html import LIMIT_SENTENCES
    from ..runtime.invariance import identity_limit
    from ..models.loading import ModelLoadError, load_pair
    from ..generate import speculative_generate
    from ..strings import t

    if (args.draft is None) != (args.target is None):
        print("specviz agreement: error: give both --draft and --target, or neither for the packaged pair",
              file=sys.stderr)
        return 2
    try:
        pair = load_pair(draft=args.draft, target=args.target, dtype=args.dtype, weights=weight_options(args))
    except ModelLoadError as e:
        print(f"specviz agreement: error: {e}", file=sys.stderr)
        return 1
    greedy, ignore_eos = SamplingConfig(temperature=0), not args.stop_at_eos
    limit = identity_limit(pair.target)
    print(f"{pair.name}; target weights {pair.weights_label()}, activations {str(pair.dtype).removeprefix('torch.')}, "
          f"attention {pair.target.config._attn_implementation}; greedy, {args.max_new_tokens} new tokens"
          f"{' past the end of text' if ignore_eos else ''}; {len(prompts)} prompts")
    print("identity: " + ("guaranteed (every verify row is computed as the one-token step computes it)"
                          if limit is None else "not guaranteed: " + t(LIMIT_SENTENCES[limit],
                                                                        weights=pair.weights_label())))
    runs = methods(args)
    same = {label: 0 for label, _ in runs}
    for i, prompt in enumerate(prompts):
        ids = pair.encode_chat(prompt.text)
        common = dict(sampling=greedy, max_new_tokens=args.max_new_tokens, eos_token_id=pair.eos_token_ids,
                      ignore_eos=ignore_eos)
        plain = [s.token_id for s in autoregressive_generate(pair.target, ids, **common)]
        cells = []
        for label, options in runs:
            draft = None if options.get("drafter") == "ngram" else pair.draft
            spec = [tok for r in speculative_generate(pair.target, draft, ids, record=False, tokenizer=pair.tokenizer,
                                                      **common, **options) for tok in r.emitted]
            at = first_difference(spec, plain)
            same[label] += at is None
            cells.append(f"{label}: " + ("identical" if at is None else f"differs from token {at + 1}"))
        print(f"prompt {i + 1:>2} ({prompt.category}): " + "; ".join(cells), flush=True)
    for label, n in same.items():
        print(f"{label}: identical on {n}/{len(prompts)} prompts")
    total = sum(same.values())
    print(f"identical: {total}/{len(prompts) * len(runs)}")
    return 1 if limit is None and total < len(prompts) * len(runs) else 0
