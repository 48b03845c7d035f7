"""Forward costs of the packaged pair on each linear-kernel path, in one process (the figures behind
specviz/models/quant/kernels.py and the README's "CPU kernels"): python scripts/linear_paths.py [--repeats 5]

Loads the pair once on PyTorch's default path, keeps the dense layers, and swaps every linear
layer between the default kernels and oneDNN packed for 1, 2, 5 and 9 rows, timing bare cached
forwards (specviz.bench.costs.forward_costs) on each. A 2-core machine is noisy: run it alone.
"""
import argparse

import torch

from specviz.bench.costs import forward_costs
from specviz.models.quant.kernels import OneDNNLinear
from specviz.models.loading import WeightOptions, load_pair

parser = argparse.ArgumentParser()
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--rounds", type=int, default=1, help="passes over all the variants")
args = parser.parse_args()

# Both models dense: this script swaps the kernels.
pair = load_pair(weights=WeightOptions(linear="default", draft_weights="as-loaded"))
ids = pair.encode_chat("Write a Python function that checks whether a number is prime.")


def linears(model):
    return [(module, name, child) for module in model.modules() for name, child in module.named_children()
            if type(child) is torch.nn.Linear]


layers = {"target": linears(pair.target), "draft": linears(pair.draft)}
print(f"{pair.name}, {pair.dtype}, {torch.get_num_threads()} threads; times in ms, verify = K+1 tokens / 1 token")
for _ in range(args.rounds):
    for label, hint in [("default", None), ("oneDNN packed for 1 row", 1), ("oneDNN packed for 2 rows", 2),
                        ("oneDNN packed for 5 rows", 5), ("oneDNN packed for 9 rows", 9)]:
        for table in layers.values():
            for module, name, child in table:
                setattr(module, name, child if hint is None else OneDNNLinear(child, hint))
        fc = forward_costs(pair.target, pair.draft, ids, [1, 2, 4, 8], repeats=args.repeats)
        print(f"{label:26s} target 1 token {fc.target_1 * 1e3:4.0f}, draft 1 token {fc.draft_1 * 1e3:4.0f}, "
              f"c {fc.c:.3f}; verify " + ", ".join(f"K={k} {fc.target_k[k] * 1e3:.0f} ({fc.verify_cost(k):.2f}x)"
                                                  for k in (1, 2, 4, 8)), flush=True)
