"""Time one draft step of the packaged pair: the full output layer against trimmed ones.

    .venv/bin/python scripts/time_draft_step.py --sizes 16384 32768 --repeats 15

One step = what ModelDrafter does per drafted token before sampling: a
one-token forward on a warm cache and the draft logits over the whole
vocabulary (for a trimmed head: the base model, the subset's rows, the scatter
into -inf). The variants run interleaved, back to the same cached prompt each
time, so drift on a shared machine hits them alike (as specviz.bench.costs
does); the medians and their ratios to the full head are printed, with the
target's one-token forward for the cost ratio c.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from specviz.runtime.decoding import crop_to, forward_logits
from specviz.engine.drafters import make_drafter

PROMPT = "Write a Python function that merges two sorted lists into one sorted list, with a docstring."


@torch.inference_mode()
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16384, 32768])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave the default)")
    ap.add_argument("--linear", default="auto", help="linear kernels: auto | default | onednn (specviz.models.quant.kernels)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from specviz.models.loading import WeightOptions, load_pair

    pair = load_pair(dtype=args.dtype, device="cpu", weights=WeightOptions(linear=args.linear))
    ids = torch.tensor([pair.encode_chat(PROMPT)])
    vocab = pair.draft.config.vocab_size
    variants = {"full": make_drafter("model", pair.draft, vocab)}
    for n in args.sizes:
        variants[f"N={n}"] = make_drafter("trimmed", pair.draft, vocab, trim_size=n, tokenizer=pair.tokenizer,
                                          eos_ids=pair.eos_token_ids)
    for d in variants.values():
        d.begin(ids)   # the prompt but its last token cached
    target_cache = None
    from transformers import DynamicCache

    target_cache = DynamicCache()
    forward_logits(pair.target, ids[:, :-1], target_cache, 1)
    n = ids.shape[1] - 1
    last = ids[:, -1:]

    def step(d) -> float:
        t0 = time.perf_counter()
        d._step_logits(last, last.device)
        dt = time.perf_counter() - t0
        crop_to(d.cache, n)
        return dt

    def target_step() -> float:
        t0 = time.perf_counter()
        forward_logits(pair.target, last, target_cache, 1)
        dt = time.perf_counter() - t0
        crop_to(target_cache, n)
        return dt

    samples = {name: [] for name in [*variants, "target"]}
    for d in variants.values():   # untimed: allocator and kernels warm
        step(d)
    target_step()
    for r in range(args.repeats):
        order = list(variants.items())
        order = order[r % len(order):] + order[:r % len(order)]   # rotate: no variant always first
        for name, d in order:
            samples[name].append(step(d))
        samples["target"].append(target_step())
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"draft step, median of {args.repeats} ({args.dtype}, {torch.get_num_threads()} threads, "
          f"linear path {pair.linear_path}, "
          f"prompt {n + 1} tokens):")
    for name, t in med.items():
        print(f"  {name:<8} {1000 * t:8.1f} ms   {t / med['full']:.3f}x full head"
              + ("" if name == "target" else f"   c = {t / med['target']:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
