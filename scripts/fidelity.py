"""How far each stored precision of the target is from the fp32 model it came from.

The reference is the packaged target dequantized to fp32 (the GGUF file's own
values). For each configuration as this machine runs it (the pair's automatic
dtype for everything outside the linear layers; "as-loaded" is the whole model
in that dtype; bf16, int8, int4: see specviz.models.quant.weights) and
each prompt: the reference's greedy continuation of 64 tokens; teacher-forced
over it, the mean KL(p_fp32 || p_config) of the next-token distribution and the
share of positions where both argmaxes agree; free-running, the share of the
configuration's own 64 greedy tokens equal to the reference's, and the first
position where they part. Speculative decoding is exact to whichever
configuration runs; this says what each configuration costs in fidelity.

    python scripts/fidelity.py [--prompts FILE] [--limit 8] [--tokens 64] [--weights bf16 int8 int4]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import torch

from specviz import SamplingConfig, autoregressive_generate
from specviz.limits import ASSET_PROMPTS
from specviz.models.loading import WeightOptions, default_device_and_dtype, load_pair
from specviz.models.quant.weights import resolve_target_weights

GREEDY = SamplingConfig(temperature=0)


def greedy(model, ids: list[int], n: int) -> list[int]:
    return [s.token_id for s in autoregressive_generate(model, ids, sampling=GREEDY, max_new_tokens=n, ignore_eos=True)]


@torch.inference_mode()
def log_probs(model, ids: list[int], n: int) -> torch.Tensor:
    """Log-probabilities [n, V] of the next token at the last n positions (teacher forced), in fp32."""
    logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -n - 1:-1].float()
    return torch.log_softmax(logits, dim=-1)


def compare(model, cases: list[dict], n: int) -> dict:
    kl, top1, same, first = [], [], [], []
    for case in cases:
        lp = log_probs(model, case["prompt"] + case["ref"], n)
        ref_lp = case["ref_lp"]
        kl.append(float((ref_lp.exp() * (ref_lp - lp)).sum(-1).mean()))
        top1.append(float((lp.argmax(-1) == ref_lp.argmax(-1)).float().mean()))
        own = greedy(model, case["prompt"], n)
        same.append(sum(a == b for a, b in zip(own, case["ref"])) / n)
        first.append(next((i for i, (a, b) in enumerate(zip(own, case["ref"])) if a != b), n))
    return {"mean_kl": statistics.mean(kl), "top1_teacher_forced": statistics.mean(top1),
            "greedy_same_tokens": statistics.mean(same), "greedy_first_divergence_median": statistics.median(first)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", default=str(ASSET_PROMPTS))
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--weights", nargs="+", default=["as-loaded", "bf16", "int8", "int4"])
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    prompts = [json.loads(line)["prompt"] for line in open(args.prompts, encoding="utf-8") if line.strip()]
    prompts = prompts[: args.limit]
    t0 = time.perf_counter()
    pair = load_pair(dtype="fp32", device="cpu", weights=WeightOptions(target_weights="as-loaded",
                                                                      draft_weights="as-loaded", linear="default"))
    cases = []
    for text in prompts:
        ids = pair.encode_chat(text)
        ref = greedy(pair.target, ids, args.tokens)
        cases.append({"prompt": ids, "ref": ref, "ref_lp": log_probs(pair.target, ids + ref, args.tokens)})
    print(f"reference: fp32, {len(cases)} prompts x {args.tokens} greedy tokens ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    results = {}
    machine = dataclasses.replace(pair, dtype=default_device_and_dtype()[1])   # the dtype the app would pick
    kinds = [resolve_target_weights(k, machine.device, machine.dtype) for k in args.weights]
    for kind in dict.fromkeys(kinds):   # bf16 on a bf16 machine is the model as loaded: measured once
        model = machine.target_variant(kind)
        label = f"{kind} ({str(next(model.parameters()).dtype).removeprefix('torch.')} elsewhere)"
        results[label] = compare(model, cases, args.tokens)
        del model
        r = results[label]
        print(f"{label:>24}: mean KL {r['mean_kl']:.5f} nats, top-1 agreement (teacher forced) "
              f"{r['top1_teacher_forced']:.3f}, same greedy tokens {r['greedy_same_tokens']:.3f}, "
              f"first divergence (median) {r['greedy_first_divergence_median']}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"prompts": len(cases), "tokens": args.tokens, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
