"""Every configuration of the packaged target and draft on this machine: forward costs against the roofline.

For each way specviz can store the target's weights (as loaded, bf16, int8, int4), one process,
one after another (never two variants resident): bytes read per token, the memory roofline for
that many bytes at the read bandwidth measured in the same run, a bare one-token forward, and
the verify cost (a forward over K+1 new tokens over a one-token forward). Then the draft's
configurations (as loaded, int8, int4, int4 with the trimmed 32k head) against the fastest
target: c. Medians of bare cached forwards (specviz.bench.forward_costs). Run it alone:

    python scripts/target_configs.py [--ks 2 3 4 6] [--repeats 7]
"""
from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time

import torch

from specviz.bench.costs import forward_costs
from specviz.bench.roofline import bytes_per_token, read_bandwidth
from specviz.models.loading import WeightOptions, load_pair
from specviz.models.quant.weights import candidate_weights, convert_target_weights

PROMPT = "Write a Python function that checks whether a string is a palindrome, ignoring case and punctuation."


def time_draft_step(draft, ids: list[int], method: str, repeats: int) -> float:
    """One draft step as the decoder takes it: the drafter proposes one token (greedy), then rolls back."""
    from specviz.engine.drafters import make_drafter
    from specviz.engine.sampling import SamplingConfig

    tokens = torch.tensor([ids])
    drafter = make_drafter(method, draft, draft.config.vocab_size)
    drafter.begin(tokens)
    greedy, times = SamplingConfig(temperature=0), []
    with torch.inference_mode():
        for rep in range(repeats + 1):
            t0 = time.perf_counter()
            drafter.propose(tokens, 1, greedy, None)
            if rep:
                times.append(time.perf_counter() - t0)
            drafter.begin(tokens)   # the prompt read afresh: every rep drafts from the same cache
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", nargs="+", type=int, default=[2, 3, 4, 6])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    bandwidth = read_bandwidth()
    print(f"read bandwidth {bandwidth / 1e9:.1f} GB/s (streaming sum over 1 GiB, {torch.get_num_threads()} threads)")
    pair = load_pair(weights=WeightOptions(target_weights="int4", draft_weights="as-loaded"))
    ids = pair.encode_chat(PROMPT)
    print(f"| target weights | GB/token | roofline ms | one token ms | share of roofline | "
          + " | ".join(f"verify K={k}" for k in args.ks) + " |")
    fastest = (float("inf"), None)
    for kind in candidate_weights(pair.device, pair.dtype):
        model = pair.target if kind == "int4" else pair.target_variant(kind)
        fc = forward_costs(model, pair.draft, ids, args.ks, repeats=args.repeats)
        nbytes = bytes_per_token(model)
        floor = nbytes / bandwidth
        label = pair.weights_label(kind)
        print(f"| {label} | {nbytes / 1e9:.2f} | {floor * 1e3:.0f} | {fc.target_1 * 1e3:.0f} | "
              f"{floor / fc.target_1:.0%} | " + " | ".join(f"{fc.verify_cost(k):.2f}×" for k in args.ks) + " |",
              flush=True)
        if fc.target_1 < fastest[0]:
            fastest = (fc.target_1, label)
        if model is not pair.target:
            del model
            gc.collect()
    t1, label = fastest
    print(f"\ndraft step against the fastest target alone ({label}, {t1 * 1e3:.0f} ms):")
    print("| draft weights | head | draft step ms | c |")
    for kind in ("as-loaded", "int8", "int4"):
        draft = pair.draft if kind == "as-loaded" else copy.deepcopy(pair.draft)
        if kind != "as-loaded":
            convert_target_weights(draft, kind, strict_grid=False)
        for trimmed in ((False, True) if kind == "int4" else (False,)):
            step = time_draft_step(draft, ids, "trimmed" if trimmed else "model", args.repeats)
            print(f"| {pair.weights_label(kind) if kind == 'as-loaded' else kind} | "
                  f"{'32,768 tokens' if trimmed else 'full'} | {step * 1e3:.0f} | {step / t1:.3f} |", flush=True)
        del draft


if __name__ == "__main__":
    main()
