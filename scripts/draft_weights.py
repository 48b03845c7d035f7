"""The packaged draft with each way of storing its weights, in one process (the figures behind
kernels.Int8WeightLinear and the README's "Draft weights"): python scripts/draft_weights.py [--repeats 5]

Loads the pair dense, puts the target on oneDNN (as load_pair does on an fp32 CPU), and times bare
cached forwards (specviz.bench.costs.forward_costs) of the draft stored five ways: fp32 on PyTorch's
default kernels, fp32 on oneDNN packed weights, bf16, int8 weight-only, and PyTorch's dynamic int8
quantization (activations quantized too). Then how far each drifts
from the fp32 draft over a teacher-forced text: top-1 agreement and mean total variation of the
next-token distributions. A 2-core machine is noisy: run it alone.
"""
import argparse
import copy
from pathlib import Path

import torch

from specviz.bench.costs import forward_costs
from specviz.models.quant.kernels import use_linear_path
from specviz.limits import REPO_ROOT
from specviz.models.loading import WeightOptions, load_pair

parser = argparse.ArgumentParser()
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--rounds", type=int, default=2, help="passes over all the variants")
parser.add_argument("--text", type=Path, default=REPO_ROOT / "README.md",
                    help="the teacher-forced text (its first 6,000 characters, 600 tokens)")
args = parser.parse_args()

# Dense: the variants are made below.
pair = load_pair(weights=WeightOptions(linear="default", draft_weights="as-loaded"))
ids = pair.encode_chat("Write a Python function that checks whether a number is prime.")
drafts = {"fp32, default kernels": pair.draft,
          "fp32, oneDNN packed": use_linear_path(copy.deepcopy(pair.draft), "onednn"),
          "bf16": copy.deepcopy(pair.draft).to(torch.bfloat16),
          "int8 weight-only": use_linear_path(copy.deepcopy(pair.draft), "int8")}
try:   # the road not taken: activations quantized too (deprecated API, kept for the comparison)
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    drafts["int8 dynamic (activations too)"] = quantize_dynamic(
        copy.deepcopy(pair.draft), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
except (ImportError, RuntimeError) as e:
    print(f"no dynamic quantization here: {e}")
use_linear_path(pair.target, "onednn")
print(f"{pair.name}, {torch.get_num_threads()} threads; target on oneDNN; times in ms")
for _ in range(args.rounds):
    for label, draft in drafts.items():
        fc = forward_costs(pair.target, draft, ids, [4], repeats=args.repeats)
        print(f"{label:24s} draft 1 token {fc.draft_1 * 1e3:4.0f}, target 1 token {fc.target_1 * 1e3:4.0f}, "
              f"c {fc.c:.3f}", flush=True)

text = args.text.read_text()[:6000]
tokens = torch.tensor([pair.encode(text)[:600]])
with torch.inference_mode():
    reference = pair.draft(tokens).logits.float()
    for label, draft in list(drafts.items())[1:]:
        logits = draft(tokens).logits.float()
        agree = (logits.argmax(-1) == reference.argmax(-1)).float().mean().item()
        tv = 0.5 * (logits.softmax(-1) - reference.softmax(-1)).abs().sum(-1).mean().item()
        print(f"{label:24s} vs the fp32 draft over {tokens.shape[1]} tokens: top-1 agreement {agree:.3f}, "
              f"mean total variation {tv:.3f}", flush=True)
