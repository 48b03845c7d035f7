"""The GPU check: one prepared command for a lent accelerator (no model hub, no gradio needed).

    python scripts/gpu_check.py                 # on the GPU machine
    python scripts/gpu_check.py --smoke         # a tiny version on a CPU, to try the script first

Random-weight models with the real Qwen2.5 shapes (specviz.bench.shapes), bf16 on
CUDA. Sections stream to stdout and to $OUT/gpu.json (or --out) as they finish,
each guarded so one failure does not hide the rest:
  lossless   tiny models on the device: 20,000 batched samples through the decoder's
             round (static cache) fit the exact distribution; the compiled decode
             loop (CUDA graphs) gives the same tokens as the eager one for fixed seeds
  greedy     compiled speculative greedy == compiled and eager target alone
  pairs      0.5B->1.5B, 0.5B->7B, 0.5B->14B and 1.5B->1.5B (draft = target, alpha = 1):
             forward costs eager vs compiled (c, verify cost), then tokens/s of the
             target alone (specviz eager/compiled, transformers generate eager/static)
             and of speculative decoding (specviz compiled with and without trace,
             eager, a dynamic draft tree of K nodes eager, transformers assisted
             generation at the same K), and the trace overhead. Speedups against the fastest target-alone method of the pair.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time
import traceback
from pathlib import Path

import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.bench import shapes
from specviz.decoding import KVCache, Timer, forward_logits
from specviz.limits import REPO_ROOT
from specviz.lossless import chi_square_fit, exact_prefixes, sample_prefixes

ap = argparse.ArgumentParser()
ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu-out"))
ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU (compile off), to test the script")
ap.add_argument("--k", type=int, default=4)
ap.add_argument("--tokens", type=int, default=64)
ap.add_argument("--budget", type=float, default=540.0, help="seconds; later sections are skipped past it")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
DEV = torch.device("cpu" if args.smoke or not torch.cuda.is_available() else "cuda")
DTYPE = torch.float32 if DEV.type == "cpu" else torch.bfloat16
COMPILE = "off" if DEV.type == "cpu" else "on"
T0, RESULTS = time.time(), {"device": str(DEV), "torch": torch.__version__}
GREEDY = SamplingConfig()


def tiny_models():
    """The test suite's tiny models (tests/tiny.py), loaded from the file: tests/ is not a package."""
    spec = importlib.util.spec_from_file_location("tiny", REPO_ROOT / "tests" / "tiny.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.noisy_copy, module.tiny_model


def section(fn):
    name = fn.__name__
    if time.time() - T0 > args.budget:
        RESULTS[name] = "skipped: budget"
    else:
        print(f"## {name} (t = {time.time() - T0:.0f} s)", flush=True)
        try:
            RESULTS[name] = fn()
        except Exception as e:   # keep going: the other sections still say something
            RESULTS[name] = {"error": repr(e)[:400], "trace": traceback.format_exc()[-1500:]}
        print(json.dumps(RESULTS[name], indent=1, default=str)[:4000], flush=True)
    Path(args.out, "gpu.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    return fn


def model_of(shape_name: str, layers: int | None = None):
    shape = shapes.SHAPES[shape_name]
    if args.smoke:   # same family, tiny widths: the script's logic, not its numbers
        shape = shapes.Shape(shape.family, 64, 2, 4, 2, 128, 512, shape.tie_embeddings)
    config = shapes.config_of(shape, layers)
    return shapes.materialize(shapes.meta_model(config), DEV, DTYPE, seed=len(shape_name))


@section
def lossless():
    noisy_copy, tiny_model = tiny_models()

    target = tiny_model(51, vocab=8, scale=0.6).to(DEV)
    draft = noisy_copy(tiny_model(51, vocab=8, scale=0.6), 7, 0.8).to(DEV)
    out = {}
    for temperature in (1.0, 0.7):
        cfg = SamplingConfig(temperature)
        counts = sample_prefixes(target, draft, [1, 2], 2, 20_000, 3, cfg, static_cache=True)
        impossible, p = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
        out[f"static_T{temperature}"] = {"p_value": p, "impossible": len(impossible)}
        counts = sample_prefixes(target, draft, [1, 2], 2, 20_000, 3, cfg, tree="2x2")   # a draft tree (issue 21)
        impossible, p = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
        out[f"tree_T{temperature}"] = {"p_value": p, "impossible": len(impossible)}
    same = 0
    for seed in range(20):
        run = lambda c: [t for r in speculative_generate(target, draft, [1, 2], k=3, seed=seed, compile=c,
                                                         sampling=SamplingConfig(1.0), max_new_tokens=16,
                                                         record=False) for t in r.emitted]
        same += run(COMPILE) == run("off")
    out["compiled_equals_eager_seeded_runs"] = f"{same}/20"
    return out


@section
def greedy():
    noisy_copy, tiny_model = tiny_models()

    target = tiny_model(11, vocab=64).to(DEV)
    draft = noisy_copy(tiny_model(11, vocab=64), 3, 0.5).to(DEV)
    same = runs = 0
    for prompt in ([3], [1, 2, 3], [5, 9, 1, 0, 7, 7, 2]):
        plain = [s.token_id for s in autoregressive_generate(target, prompt, GREEDY, 40, compile="off")]
        plain_c = [s.token_id for s in autoregressive_generate(target, prompt, GREEDY, 40, compile=COMPILE)]
        for k in (1, 4, 7):
            spec = [t for r in speculative_generate(target, draft, prompt, k=k, max_new_tokens=40, compile=COMPILE)
                    for t in r.emitted]
            same += spec == plain == plain_c
            runs += 1
        for tree in ("2x2x1", "dynamic:6"):   # draft trees: eager, dynamic caches, tree-masked verify
            spec = [t for r in speculative_generate(target, draft, prompt, tree=tree, max_new_tokens=40)
                    for t in r.emitted]
            same += spec == plain
            runs += 1
    return {"identical": f"{same}/{runs}"}


def forward_ms(model, n_prompt: int, positions: int, compiled: bool, repeats: int = 10) -> float:
    """Median ms of one cached forward over `positions` new tokens (static cache; graphs if compiled)."""
    clock = Timer(DEV)
    cache = KVCache(model, static=True, max_len=n_prompt + 64, compiled=compiled)
    ids = torch.randint(0, 100, (1, n_prompt + positions), device=DEV)
    forward_logits(model, ids[:, :n_prompt], cache, 1, eager=True)
    times = []
    for i in range(repeats + 3):   # compile, capture, replay: the first three are warm-up
        t = clock()
        forward_logits(model, ids[:, n_prompt:], cache, positions)
        times.append(clock() - t)
        cache.crop(-positions)
    return statistics.median(times[3:]) * 1e3


def rate(events) -> float:
    """Decode throughput as in the bench: tokens after the first emission / time since it."""
    if len(events) < 2:
        return float("nan")
    return sum(n for _, n in events[1:]) / (events[-1][0] - events[0][0])


def specviz_events(rounds_or_steps):
    clock = Timer(DEV)
    return [(clock(), len(getattr(x, "emitted", [0]))) for x in rounds_or_steps]


def hf_events(target, ids, kw):
    """transformers' generate, its emissions stamped by a streamer (the first put is the prompt)."""
    from transformers.generation.streamers import BaseStreamer

    clock, events = Timer(DEV), []

    class Stamp(BaseStreamer):
        def __init__(self):
            self.prompt_seen = False

        def put(self, value):
            if self.prompt_seen:
                events.append((clock(), int(value.numel())))
            self.prompt_seen = True

        def end(self):
            pass

    target.generate(ids, streamer=Stamp(), **kw)
    return events


def pair_figures(draft_shape: str, target_shape: str):
    from specviz import theory

    target = model_of(target_shape)
    draft = target if draft_shape == target_shape else model_of(draft_shape)
    k, n_new, prompt = args.k, 24 if args.smoke else args.tokens, list(range(10, 110))
    eager = {p: forward_ms(target, len(prompt), p, False) for p in (1, k + 1)}
    graph = {p: forward_ms(target, len(prompt), p, COMPILE == "on") for p in (1, k + 1)}
    d_eager, d_graph = forward_ms(draft, len(prompt), 1, False), forward_ms(draft, len(prompt), 1, COMPILE == "on")
    out = {"forward_ms": {"target_1_eager": eager[1], "target_1_compiled": graph[1],
                          f"target_{k + 1}_eager": eager[k + 1], f"target_{k + 1}_compiled": graph[k + 1],
                          "draft_1_eager": d_eager, "draft_1_compiled": d_graph},
           "c_eager": d_eager / eager[1], "c_compiled": d_graph / graph[1],
           "verify_cost_compiled": graph[k + 1] / graph[1]}
    ids = torch.tensor([prompt], device=DEV)
    hf_kw = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=0)

    def hf(**kw):
        return lambda: hf_events(target, ids, dict(hf_kw, **kw))

    def spec(compile, record=True):
        return lambda: specviz_events(speculative_generate(target, draft, prompt, k=k, max_new_tokens=n_new,
                                                           compile=compile, ignore_eos=True, record=record))

    methods = {
        "target_eager": lambda: specviz_events(autoregressive_generate(target, prompt, GREEDY, n_new,
                                                                       compile="off", ignore_eos=True)),
        "target_compiled": lambda: specviz_events(autoregressive_generate(target, prompt, GREEDY, n_new,
                                                                          compile=COMPILE, ignore_eos=True)),
        "hf_generate": hf(),
        "hf_generate_static": hf(cache_implementation="static"),
        "specviz_eager": spec("off"),
        "specviz_compiled": spec(COMPILE),
        "specviz_compiled_notrace": spec(COMPILE, record=False),
        # A draft tree of K nodes (EAGLE-2's dynamic tree), eager: trees run on dynamic caches.
        "specviz_tree_eager": lambda: specviz_events(speculative_generate(
            target, draft, prompt, tree=f"dynamic:{k}", max_new_tokens=n_new, ignore_eos=True, record=False)),
        "hf_assisted": hf(assistant_model=draft, num_assistant_tokens=k, num_assistant_tokens_schedule="constant",
                          assistant_confidence_threshold=0.0),
    }
    for run in methods.values():   # warm-up: compile, capture, allocator
        _safe(lambda: rate(run()))
    rates = {name: [] for name in methods}
    for _ in range(2):            # interleaved repeats: drift hits every method alike
        for name, run in methods.items():
            rates[name].append(_safe(lambda: rate(run())))
    tps = {name: statistics.median(v) for name, v in rates.items()}
    alone = {m: tps[m] for m in ("target_eager", "target_compiled", "hf_generate", "hf_generate_static")}
    fastest = max(alone, key=lambda m: alone[m] if alone[m] == alone[m] else -1)
    out.update(tokens_per_s=tps, fastest_target_alone=fastest,
               speedup_vs_fastest_target_alone={m: tps[m] / tps[fastest] for m in tps},
               specviz_compiled_alone_vs_hf_static=tps["target_compiled"] / tps["hf_generate_static"],
               specviz_vs_hf_assisted=tps["specviz_compiled_notrace"] / tps["hf_assisted"],
               trace_overhead=1 - tps["specviz_compiled"] / tps["specviz_compiled_notrace"],
               theory_speedup_alpha_0_8=theory.expected_speedup(0.8, k, out["c_compiled"],
                                                                out["verify_cost_compiled"]))
    methods.clear()   # the closures hold the models: let them go before the next pair is built
    return out


def _safe(fn):
    try:
        return fn()
    except Exception as e:
        print(f"   method failed: {e!r}"[:300], flush=True)
        return float("nan")


for draft_shape, target_shape in [("qwen2.5-0.5b", "qwen2.5-1.5b"), ("qwen2.5-0.5b", "qwen2.5-7b"),
                                  ("qwen2.5-0.5b", "qwen2.5-14b"), ("qwen2.5-1.5b", "qwen2.5-1.5b")]:
    name = f"{draft_shape}->{target_shape}"

    def run_pair(d=draft_shape, t=target_shape):
        return pair_figures(d, t)

    run_pair.__name__ = name
    section(run_pair)
    if DEV.type == "cuda":
        torch.cuda.empty_cache()

print(f"done in {time.time() - T0:.0f} s; results in {Path(args.out, 'gpu.json')}", flush=True)
