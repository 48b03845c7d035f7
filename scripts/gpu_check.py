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
             forward costs eager vs compiled vs plain CUDA graphs (c, verify cost),
             then tokens/s of the target alone (specviz eager/compiled/graphs,
             transformers generate eager/static) and of speculative decoding (specviz
             compiled and graphs with and without trace, eager, a dynamic draft tree of K
             nodes eager, transformers assisted
             generation at the same K), the trace overhead, and the seconds each path
             spends compiling/capturing before its first token (never in tokens/s).
             Speedups against the fastest target-alone method of the pair.
  zerogpu    as on a ZeroGPU Space: a fresh process per call (nothing persists
             between calls), the graphs (no torch.compile) captured inside it; per
             call the build, capture and decode seconds and tokens/s.
  aoti       optional: ZeroGPU's supported compiled route, ahead-of-time
             compilation through `spaces` (aoti_capture / aoti_compile / aoti_apply,
             torch >= 2.8), against plain CUDA graphs, on one fixed-shape forward
             of a target (--aoti-shape, 1.5B by default; 128 positions, no cache):
             export and compile seconds (paid once, at start-up), the load a fresh
             worker pays (the compiled package pickled to it, as ZeroGPU does), the
             graphs' capture (paid again by every fresh worker), each one's ms
             against eager, and the largest logit difference. Skipped in one line where
             `spaces` or CUDA is absent. Alone: --pairs none --skip lossless,greedy,zerogpu
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

from specviz import Reporting, SamplingConfig, autoregressive_generate, speculative_generate
from specviz.bench import shapes
from specviz.runtime.decoding import KVCache, Timer, forward_logits, resolve_forwards
from specviz.limits import REPO_ROOT
from specviz.models.prepare import prepare_models
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes

ap = argparse.ArgumentParser()
ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu-out"))
ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU (compile off), to test the script")
ap.add_argument("--k", type=int, default=4)
ap.add_argument("--tokens", type=int, default=64)
ap.add_argument("--budget", type=float, default=540.0, help="seconds; later sections are skipped past it")
ap.add_argument("--zerogpu-call", metavar="DRAFT,TARGET", help=argparse.SUPPRESS)   # one call, in its own process
ap.add_argument("--pairs", default="all", help="all, or a comma list of pair indices 0-3 (smoke tests run fewer)")
ap.add_argument("--skip", default="", help="comma list of sections to skip (lossless, greedy, zerogpu, aoti)")
ap.add_argument("--aoti-shape", default="qwen2.5-1.5b", help="the target whose decode step the aoti section compiles")
ap.add_argument("--aoti-on-cpu", action="store_true", help=argparse.SUPPRESS)   # try the AoTI half on a CPU by hand
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
DEV = torch.device("cpu" if args.smoke or not torch.cuda.is_available() else "cuda")
DTYPE = torch.float32 if DEV.type == "cpu" else torch.bfloat16
COMPILE = "off" if DEV.type == "cpu" else "on"
GRAPHS = "graphs"   # plain CUDA graphs, no torch.compile (on a CPU: the same fixed buffers, uncaptured)
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
    if args.zerogpu_call:   # a child process of the zerogpu section: only its call runs
        return fn
    if name in args.skip.split(","):
        RESULTS[name] = "skipped: --skip"
        return fn
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
        counts = sample_prefixes(target, draft, [1, 2], 2, 20_000, decode_options(k=3, sampling=cfg, static_cache=True))
        impossible, p = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
        out[f"static_T{temperature}"] = {"p_value": p, "impossible": len(impossible)}
        # a draft tree
        counts = sample_prefixes(target, draft, [1, 2], 2, 20_000, decode_options(sampling=cfg, tree="2x2"))
        impossible, p = chi_square_fit(counts, exact_prefixes(target, [1, 2], 2, cfg))
        out[f"tree_T{temperature}"] = {"p_value": p, "impossible": len(impossible)}
    same = same_graphs = 0
    for seed in range(20):
        run = lambda c: [t for r in speculative_generate(target, draft, [1, 2], k=3, seed=seed, compile=c,
                                                         sampling=SamplingConfig(1.0), max_new_tokens=16,
                                                         record=False) for t in r.emitted]
        same += run(COMPILE) == run("off")
        same_graphs += run(GRAPHS) == run("off")
    out["compiled_equals_eager_seeded_runs"] = f"{same}/20"
    out["graphs_equals_eager_seeded_runs"] = f"{same_graphs}/20"
    return out


@section
def greedy():
    noisy_copy, tiny_model = tiny_models()

    target = tiny_model(11, vocab=64).to(DEV)
    draft = noisy_copy(tiny_model(11, vocab=64), 3, 0.5).to(DEV)
    same = runs = 0
    for prompt in ([3], [1, 2, 3], [5, 9, 1, 0, 7, 7, 2]):
        alone40 = decode_options(sampling=GREEDY, max_new_tokens=40)
        plain = [s.token_id for s in autoregressive_generate(target, prompt, alone40, compile="off")]
        plain_c = [s.token_id for s in autoregressive_generate(target, prompt, alone40, compile=COMPILE)]
        plain_g = [s.token_id for s in autoregressive_generate(target, prompt, alone40, compile=GRAPHS)]
        for k in (1, 4, 7):
            for mode in (COMPILE, GRAPHS):
                spec = [t for r in speculative_generate(target, draft, prompt, k=k, max_new_tokens=40, compile=mode)
                        for t in r.emitted]
                same += spec == plain == plain_c == plain_g
                runs += 1
        for tree in ("2x2x1", "dynamic:6"):   # draft trees: eager, dynamic caches, tree-masked verify
            spec = [t for r in speculative_generate(target, draft, prompt, tree=tree, max_new_tokens=40)
                    for t in r.emitted]
            same += spec == plain
            runs += 1
    return {"identical": f"{same}/{runs}"}


@section
def row_invariance():
    """Which operations compute a verify row differently from the one-token step on this device.

    A report, not a target: on CUDA the matrix products and attention kernels may block rows differently
    by row count; the harness names the first module (or function, seen in the next module's input) that
    diverges, eager, with the row-by-row attention and with plain SDPA, on a Qwen2.5 shape at a few layers."""
    from specviz.runtime.attention import ROWS, use_row_invariant_attention
    from specviz.runtime.invariance import chain_report, tree_report
    from specviz.engine.tree import TreeShape

    out = {}
    for name in ("qwen2.5-1.5b",):
        model = model_of(name, layers=2)
        ctx = torch.randint(0, 100, (300,)).tolist()
        for attention in (ROWS, "sdpa"):
            use_row_invariant_attention(model)
            if attention == "sdpa":
                for config in {id(c): c for c in (model.config, model.config.get_text_config())}.values():
                    config._attn_implementation = "sdpa"
            for k in (3, 7):
                out[f"{name} {attention} chain K={k}"] = chain_report(model, ctx, list(range(5, 5 + k))).line()
            shape = TreeShape.from_widths([2, 2, 1])
            out[f"{name} {attention} tree 2x2x1"] = tree_report(model, ctx, shape, list(range(7, 7 + shape.size))).line()
        del model
    return out


def forward_ms(model, n_prompt: int, positions: int, mode: str, repeats: int = 10) -> float:
    """Median ms of one cached forward over `positions` new tokens (static cache; `mode` off | on | graphs)."""
    clock = Timer(DEV)
    forwards = resolve_forwards(mode, DEV, static_cache=True)
    cache = KVCache(model, static=True, max_len=n_prompt + 64, compiled=forwards.compiled, backend=forwards.backend)
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
    return specviz_run(rounds_or_steps)[0]


def specviz_run(loop):
    """(emission events, the loop's RunReport) of one of specviz's decoding loops."""
    clock, reporting = Timer(DEV), Reporting(loop)
    return [(clock(), len(getattr(x, "emitted", [0]))) for x in reporting], reporting.report


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


def forward_figures(target, draft, k: int, n_prompt: int) -> dict:
    """Bare forward costs per mode (eager, torch.compile on CUDA, plain graphs): c, verify cost, the theory at 0.8."""
    from specviz import theory

    out = {"forward_ms": {}, "c": {}, "verify_cost": {}, "theory_speedup_alpha_0_8": {}}
    for mode in ("off", COMPILE, GRAPHS) if COMPILE == "on" else ("off", GRAPHS):
        t = {p: forward_ms(target, n_prompt, p, mode) for p in (1, k + 1)}
        d = forward_ms(draft, n_prompt, 1, mode)
        out["forward_ms"][mode] = {"target_1": t[1], f"target_{k + 1}": t[k + 1], "draft_1": d}
        out["c"][mode], out["verify_cost"][mode] = d / t[1], t[k + 1] / t[1]
        out["theory_speedup_alpha_0_8"][mode] = theory.expected_speedup(0.8, k, d / t[1], t[k + 1] / t[1])
    return out


def pair_figures(draft_shape: str, target_shape: str):
    target = prepare_models(model_of(target_shape))   # as load_pair prepares its models (the decoder changes none)
    draft = prepare_models(model_of(draft_shape))   # its own object even for alpha = 1: each model holds one static cache and graph set
    k, n_new, prompt = args.k, 24 if args.smoke else args.tokens, list(range(10, 110))
    out = forward_figures(target, draft, k, len(prompt))
    ids = torch.tensor([prompt], device=DEV)
    hf_kw = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=0)
    warmups: dict[str, float] = {}

    def hf(**kw):
        return lambda: hf_events(target, ids, dict(hf_kw, **kw))

    def alone(mode, name):
        def run():
            events, report = specviz_run(autoregressive_generate(target, prompt, sampling=GREEDY, max_new_tokens=n_new,
                                                                 compile=mode, ignore_eos=True))
            warmups.setdefault(name, report.seconds("warmup_seconds"))   # the first call compiles/captures
            return events
        return run

    def spec(mode, name, record=True):
        def run():
            events, report = specviz_run(speculative_generate(target, draft, prompt, k=k, max_new_tokens=n_new,
                                                              compile=mode, ignore_eos=True, record=record))
            warmups.setdefault(name, report.seconds("warmup_seconds"))
            if report.graphs_fallback:
                out["graphs_fallback"] = report.graphs_fallback
            return events
        return run

    methods = {
        "target_eager": alone("off", "target_eager"),
        "target_compiled": alone(COMPILE, "target_compiled"),
        "target_graphs": alone(GRAPHS, "target_graphs"),
        "hf_generate": hf(),
        "hf_generate_static": hf(cache_implementation="static"),
        "specviz_eager": spec("off", "specviz_eager"),
        "specviz_compiled": spec(COMPILE, "specviz_compiled"),
        "specviz_compiled_notrace": spec(COMPILE, "specviz_compiled_notrace", record=False),
        "specviz_graphs": spec(GRAPHS, "specviz_graphs"),
        "specviz_graphs_notrace": spec(GRAPHS, "specviz_graphs_notrace", record=False),
        # A draft tree of K nodes (EAGLE-2's dynamic tree), eager: trees run on dynamic caches.
        "specviz_tree_eager": lambda: specviz_events(speculative_generate(
            target, draft, prompt, tree=f"dynamic:{k}", max_new_tokens=n_new, ignore_eos=True, record=False)),
        "hf_assisted": hf(assistant_model=draft, num_assistant_tokens=k, num_assistant_tokens_schedule="constant",
                          assistant_confidence_threshold=0.0),
    }
    tps = median_rates(methods)
    alone_tps = {m: tps[m] for m in ("target_eager", "target_compiled", "target_graphs", "hf_generate",
                                     "hf_generate_static")}
    fastest = max(alone_tps, key=lambda m: alone_tps[m] if alone_tps[m] == alone_tps[m] else -1)
    out.update(tokens_per_s=tps, fastest_target_alone=fastest, warmup_seconds_first_call=warmups,
               speedup_vs_fastest_target_alone={m: tps[m] / tps[fastest] for m in tps},
               specviz_compiled_alone_vs_hf_static=tps["target_compiled"] / tps["hf_generate_static"],
               specviz_graphs_alone_vs_hf_static=tps["target_graphs"] / tps["hf_generate_static"],
               specviz_vs_hf_assisted=tps["specviz_compiled_notrace"] / tps["hf_assisted"],
               specviz_graphs_vs_hf_assisted=tps["specviz_graphs_notrace"] / tps["hf_assisted"],
               trace_overhead=1 - tps["specviz_compiled"] / tps["specviz_compiled_notrace"],
               trace_overhead_graphs=1 - tps["specviz_graphs"] / tps["specviz_graphs_notrace"])
    methods.clear()   # the closures hold the models: let them go before the next pair is built
    return out


def median_rates(methods: dict) -> dict:
    """Tokens/s per method: one warm-up call each (compile, capture, allocator), then two interleaved repeats."""
    for run in methods.values():
        _safe(lambda: rate(run()))
    rates = {name: [] for name in methods}
    for _ in range(2):            # interleaved repeats: drift hits every method alike
        for name, run in methods.items():
            rates[name].append(_safe(lambda: rate(run())))
    return {name: statistics.median(v) for name, v in rates.items()}


def zerogpu_call(draft_shape: str, target_shape: str) -> dict:
    """One ZeroGPU-like call in this (fresh) process: build the pair, capture the graphs, decode; seconds of each."""
    t0 = time.perf_counter()
    target, draft = prepare_models(model_of(target_shape)), prepare_models(model_of(draft_shape))
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    built = time.perf_counter() - t0
    n_new, prompt = 24 if args.smoke else args.tokens, list(range(10, 110))
    t1 = time.perf_counter()
    events, report = specviz_run(speculative_generate(target, draft, prompt, k=args.k, max_new_tokens=n_new,
                                                      compile=GRAPHS, ignore_eos=True, record=False))
    return {"build_s": built, "capture_s": report.warmup_seconds, "prefill_s": report.prefill_seconds,
            "call_s": time.perf_counter() - t1, "tokens_per_s": rate(events),
            "graphs_fallback": report.graphs_fallback}


def _safe(fn):
    try:
        return fn()
    except Exception as e:
        print(f"   method failed: {e!r}"[:300], flush=True)
        return float("nan")


PAIRS = [("qwen2.5-0.5b", "qwen2.5-1.5b"), ("qwen2.5-0.5b", "qwen2.5-7b"), ("qwen2.5-0.5b", "qwen2.5-14b"),
         ("qwen2.5-1.5b", "qwen2.5-1.5b")]


def zerogpu():
    """Two calls, each a fresh process as ZeroGPU gives (0.5B -> 7B): what every call pays before its tokens."""
    calls = []
    for _ in range(2):
        cmd = [sys.executable, __file__, "--zerogpu-call", "qwen2.5-0.5b,qwen2.5-7b", "--k", str(args.k),
               "--tokens", str(args.tokens), "--out", args.out] + (["--smoke"] if args.smoke else [])
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        call = json.loads(lines[-1]) if lines else {"error": done.stderr[-800:]}
        call["process_s"] = time.perf_counter() - t0   # interpreter, imports, build, capture and decode
        calls.append(call)
    return {"calls": calls}


if args.zerogpu_call:
    print(json.dumps(zerogpu_call(*args.zerogpu_call.split(",")), default=str), flush=True)
    sys.exit(0)

for index, (draft_shape, target_shape) in enumerate(PAIRS):
    if args.pairs != "all" and str(index) not in args.pairs.split(","):
        continue
    name = f"{draft_shape}->{target_shape}"

    def run_pair(d=draft_shape, t=target_shape):
        return pair_figures(d, t)

    run_pair.__name__ = name
    section(run_pair)
    if DEV.type == "cuda":
        torch.cuda.empty_cache()

section(zerogpu)


def aoti_unavailable() -> str | None:
    """Why the aoti section cannot run here (one line), or None."""
    if DEV.type != "cuda" and not args.aoti_on_cpu:
        return "no CUDA device (ahead-of-time compilation and CUDA graphs are both GPU routes)"
    if importlib.util.find_spec("spaces") is None:
        return "the `spaces` package is not installed (pip install spaces)"
    from packaging import version

    if version.parse(version.parse(torch.__version__).base_version) < version.parse("2.8"):
        return f"torch {torch.__version__}: spaces' ahead-of-time compilation needs 2.8 or later"
    return None


class Window(torch.nn.Module):
    """A fixed-shape forward without a cache (W positions in, logits out). Not the cached decode step specviz runs:
    transformers' exportable static-cache wrapper exported, but inductor's ahead-of-time compile refused it here
    (torch 2.13 CPU, transformers 5.24: "mutating a non-functional tensor" on the cache's length), so this compares
    the two mechanisms' costs on a forward both can take."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def _median_ms(fn, repeats: int = 20) -> float:
    clock, times = Timer(DEV), []
    for _ in range(repeats):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times) * 1e3


def _graphed(fn):
    """fn captured in a CUDA graph (warm-up on a side stream first, as torch documents); (graph, its output)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    torch.cuda.synchronize()
    return graph, out


def aoti():
    """AoTI (compiled once, loaded by each fresh worker) against CUDA graphs (captured by each fresh worker)."""
    why = aoti_unavailable()
    if why:
        return f"skipped: {why}"
    import pickle

    import spaces

    window = Window(model_of(args.aoti_shape)).eval()
    ids = torch.randint(0, 100, (1, 32 if args.smoke else 128), device=DEV)
    out = {"shape": args.aoti_shape, "positions": ids.shape[1], "torch": torch.__version__}
    with torch.inference_mode():
        eager = window(ids).float()
        out["eager_ms"] = _median_ms(lambda: window(ids))
        if DEV.type == "cuda":   # plain CUDA graphs: captured in this process, lost with it
            t0 = time.perf_counter()
            graph, graphed = _graphed(lambda: window(ids))
            out["graphs_capture_s"] = time.perf_counter() - t0
            out["graphs_ms"] = _median_ms(graph.replay)
            out["graphs_max_logit_diff"] = float((graphed.float() - eager).abs().max())
    # ahead-of-time: the call captured, exported and compiled once; then what a fresh worker does with the package
    t0 = time.perf_counter()
    with spaces.aoti_capture(window) as call:
        window(ids)
    exported = torch.export.export(window, args=call.args, kwargs=call.kwargs)
    out["aoti_export_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled = spaces.aoti_compile(exported)
    out["aoti_compile_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fresh = pickle.loads(pickle.dumps(compiled))   # how ZeroGPU hands it to a worker: weights through shared memory
    with torch.inference_mode():
        first = fresh(ids)
        if DEV.type == "cuda":
            torch.cuda.synchronize()
        out["aoti_fresh_worker_load_s"] = time.perf_counter() - t0
        out["aoti_ms"] = _median_ms(lambda: fresh(ids))
        out["aoti_max_logit_diff"] = float((first.float() - eager).abs().max())
        spaces.aoti_apply(compiled, window)        # the module now calls the compiled forward, its weights drained
        out["aoti_apply_max_logit_diff"] = float((window(ids).float() - eager).abs().max())
    out["aoti_speedup_vs_eager"] = out["eager_ms"] / out["aoti_ms"]
    if "graphs_ms" in out:
        out["graphs_speedup_vs_eager"] = out["eager_ms"] / out["graphs_ms"]
    return out


section(aoti)
print(f"done in {time.time() - T0:.0f} s; results in {Path(args.out, 'gpu.json')}", flush=True)
