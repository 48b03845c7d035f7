"""Tokens per target pass, draft tree vs chain at equal nodes per pass, greedy, on the packaged pair.

Tokens per pass is deterministic (greedy), so it can be measured on a shared machine; tokens/s cannot.
Usage: PYTHONPATH=. python scripts/tree_passes.py [--prompts FILE] [--n 4] [--budgets 4 6 8] [--tokens 64]
"""
import argparse
import json
import sys
import time
from pathlib import Path

from specviz import SamplingConfig, speculative_generate
from specviz.limits import default_prompts_file
from specviz.models.loading import load_pair

GREEDY = SamplingConfig(temperature=0)


def passes(pair, ids, tokens, **how) -> tuple[int, int]:
    rounds = list(speculative_generate(pair.target, pair.draft, ids, sampling=GREEDY, max_new_tokens=tokens,
                                       ignore_eos=True, record=False, **how))
    return sum(len(r.emitted) for r in rounds), len(rounds)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=Path, default=default_prompts_file())
    ap.add_argument("--n", type=int, default=4, help="prompts: the first of each category, then in order")
    ap.add_argument("--budgets", type=int, nargs="+", default=[4, 6, 8])
    ap.add_argument("--trees", nargs="*", default=[],
                    help="extra trees to try: widths (2x1x1), parent lists (-1,-1,0) or dynamic:N[:depth[:top_k]]")
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.prompts.read_text(encoding="utf-8").splitlines() if line.strip()]
    firsts = list({r["category"]: r for r in rows}.values())
    chosen = (firsts + [r for r in rows if r not in firsts])[:args.n]
    pair = load_pair(dtype="fp32", device="cpu")
    methods = []
    for n in args.budgets:
        methods += [(f"chain K={n}", dict(k=n)), (f"tree dynamic:{n}", dict(tree=f"dynamic:{n}"))]
    methods += [(f"tree {t}", dict(tree=t)) for t in args.trees]
    totals = {name: [0, 0] for name, _ in methods}
    for row in chosen:
        ids = pair.encode_chat(row["prompt"])
        for name, how in methods:
            t0 = time.perf_counter()
            tok, n_pass = passes(pair, ids, args.tokens, **how)
            totals[name][0] += tok
            totals[name][1] += n_pass
            print(f"{row['category']:14s} {name:40s} {tok / n_pass:5.2f} tokens/pass ({n_pass} passes, "
                  f"{time.perf_counter() - t0:.0f} s)", flush=True)
    print("\nall prompts:")
    for name, (tok, n_pass) in totals.items():
        print(f"  {name:40s} {tok / n_pass:5.2f} tokens/pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
