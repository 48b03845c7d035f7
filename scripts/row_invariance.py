"""Row invariance of the target's verify on a real pair, and what the row-by-row attention costs.

For each prompt: the row-invariance harness (specviz.runtime.invariance) on a chain verify of K drafts
(the draft's own greedy proposals, as a round would read them) and on a draft tree, with the
target's attention as the decoder runs it ("sdpa_rows") and, for contrast, plain SDPA over all
rows at once ("sdpa"): the first operation that diverges, or "bit-identical". Then the verify
forward's time at 1 and K+1 rows under both attentions, interleaved (medians).

    python scripts/row_invariance.py [--prompts N] [--k 3 7] [--target-weights auto] [--repeats 7] [--timing-only]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz.runtime.attention import ROWS  # noqa: E402
from specviz.bench.prompts import load_prompts  # noqa: E402
from specviz.runtime.decoding import forward_logits, prefill  # noqa: E402
from specviz.runtime.invariance import chain_report, tree_report  # noqa: E402
from specviz.limits import ASSET_PROMPTS  # noqa: E402
from specviz.models.loading import WeightOptions, load_pair  # noqa: E402
from specviz.engine.tree import TreeShape  # noqa: E402


def set_attention(model, name: str) -> None:
    for config in {id(c): c for c in (model.config, model.config.get_text_config())}.values():
        config._attn_implementation = name


@torch.inference_mode()
def draft_proposals(draft, ids: list[int], k: int) -> list[int]:
    cache = prefill(draft, torch.tensor(ids)[None])
    out, last = [], ids[-1]
    for _ in range(k):
        last = int(forward_logits(draft, torch.tensor([last]), cache, 1)[-1].argmax())
        out.append(last)
    return out


@torch.inference_mode()
def verify_ms(target, ids: list[int], rows: int, repeats: int) -> dict[str, float]:
    """Median ms of a verify forward of `rows` positions after the prompt, per attention, interleaved."""
    times: dict[str, list[float]] = {"sdpa": [], ROWS: []}
    feed = torch.tensor((ids * 2)[len(ids) - 1:len(ids) - 1 + rows])
    for rep in range(repeats + 1):
        for name in times:
            set_attention(target, name)
            cache = prefill(target, torch.tensor(ids)[None])
            t0 = time.perf_counter()
            forward_logits(target, feed, cache, rows)
            if rep:
                times[name].append(time.perf_counter() - t0)
    set_attention(target, ROWS)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=4, help="how many bench prompts (default 4)")
    ap.add_argument("--k", type=int, nargs="+", default=[3, 7], help="chain lengths (default 3 7)")
    ap.add_argument("--tree", default="2x2x1", help="tree shape for the tree verify (default 2x2x1)")
    ap.add_argument("--target-weights", default="auto")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats per configuration (default 5)")
    ap.add_argument("--timing-only", action="store_true", help="skip the harness, time the verify forwards only")
    args = ap.parse_args()

    pair = load_pair(weights=WeightOptions(target_weights=args.target_weights))
    print(f"pair: {pair.name}; target weights {pair.weights_label()}; dtype {pair.dtype}; "
          f"torch {torch.__version__}; threads {torch.get_num_threads()}")
    shape = TreeShape.parse(args.tree)
    prompts = load_prompts(ASSET_PROMPTS)[:args.prompts]
    failures = 0
    for prompt in [] if args.timing_only else prompts:
        ids = pair.encode_chat(prompt.text)
        for attention in ("sdpa", ROWS):
            set_attention(pair.target, attention)
            for k in args.k:
                report = chain_report(pair.target, ids, draft_proposals(pair.draft, ids, k))
                failures += attention == ROWS and not report.identical
                print(f"[{prompt.category:>9}] {attention:>9} chain K={k}: {report.line()}")
            nodes = draft_proposals(pair.draft, ids, shape.size)   # any tokens will do for the arithmetic
            report = tree_report(pair.target, ids, shape, nodes)
            failures += attention == ROWS and not report.identical
            print(f"[{prompt.category:>9}] {attention:>9} tree {args.tree}: {report.line()}")
    ids = pair.encode_chat(prompts[0].text)
    print("\nverify forward, ms (median of", args.repeats, "interleaved), prompt of", len(ids), "tokens:")
    one = verify_ms(pair.target, ids, 1, args.repeats)
    for k in args.k:
        many = verify_ms(pair.target, ids, k + 1, args.repeats)
        print(f"  {k + 1} rows: plain sdpa {many['sdpa']:.1f} ms ({many['sdpa'] / one['sdpa']:.2f}x one row), "
              f"row by row {many[ROWS]:.1f} ms ({many[ROWS] / one[ROWS]:.2f}x one row); "
              f"row by row / plain = {many[ROWS] / many['sdpa']:.3f}")
    print(f"  1 row: plain {one['sdpa']:.1f} ms, row by row {one[ROWS]:.1f} ms (the same call)")
    print("row-invariant attention:", "bit-identical everywhere" if not failures else f"{failures} reports differ")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
