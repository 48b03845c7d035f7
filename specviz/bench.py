"""Benchmarks: throughput versus K, and the side-by-side comparison of decoders.

One measuring layer serves both the app's Throughput-vs-K chart (`sweep_k`) and
the command line (`python -m specviz bench`, `main`): `run_method` times one
generation by one method, `forward_costs` times bare forwards for the theory.

Conventions (the same for every method, so tokens/s compare like with like):
- EOS is ignored: every method produces exactly `max_new_tokens` new tokens
  (transformers' `generate` gets `min_new_tokens = max_new_tokens`).
- Throughput is decode throughput: tokens emitted *after the first emission*
  divided by the wall time from the first emission to the last. The first
  emission is where the prompt's prefill ends for every method (for assisted
  generation the target's prefill happens in the first verify), so prefill
  never enters tokens/s; it is reported separately (`first_emit_seconds`), and
  the end-to-end rate is in `e2e_tokens_per_s`.
- c = one draft forward (1 new token, warm cache) / one target forward (1 new
  token); verify_cost = one target forward over K+1 new tokens / one target
  forward over 1. Both are timed on bare forwards, interleaved, medians of a
  few repetitions (`forward_costs`); theory_speedup = theory.expected_speedup(
  alpha_verified, K, c, verify_cost). Measured over theoretical speedup then
  differs only by decoder overhead and correlated acceptances.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch

from . import theory
from .baseline import autoregressive_generate
from .cli import bounded
from .sampling import MAX_TEMPERATURE, SamplingConfig
from .speculative import MAX_K, Timer, as_id_tensor, input_device, speculative_generate
from .trace import metrics

METHODS = ("target", "hf_generate", "hf_assisted", "specviz", "specviz_notrace", "specviz_adaptive")
K_METHODS = ("hf_assisted", "specviz", "specviz_notrace", "specviz_adaptive")
# specviz_adaptive: K is a maximum; a round stops drafting once the draft's confidence
# falls below this (no trace recorded, so compare it with specviz_notrace).
ADAPTIVE_THRESHOLD = 0.6
MAX_NEW_TOKENS = 4096
MAX_REPEATS = 20
REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_PROMPTS = REPO_ROOT.parent / "shared" / "prompts" / "bench.jsonl"
ASSET_PROMPTS = REPO_ROOT / "assets" / "prompts.jsonl"

Progress = Callable[[float, str], None]


# ---------------------------------------------------------------- one measured generation
@dataclass
class Run:
    """One generation by one method: what it emitted and how long it took."""

    method: str
    k: int | None
    output_ids: list[int]
    seconds: float                  # wall time from the first emission to the last
    first_emit_seconds: float       # call start -> first emission (prefill and first step)
    first_tokens: int               # tokens in the first emission
    total_seconds: float            # whole call, prefill included
    acceptance_rate: float = float("nan")
    alpha: float = float("nan")     # alpha_verified: accepted / (accepted + rejections)
    tau: float = float("nan")       # tokens per round (1 for plain decoding)
    per_position: list[float] = field(default_factory=list)
    rounds: int = 0

    @property
    def new_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def tokens_per_s(self) -> float:
        n = self.new_tokens - self.first_tokens
        if n > 0 and self.seconds > 0:
            return n / self.seconds
        # Everything came in the first emission: fall back to the whole call.
        return self.new_tokens / self.total_seconds if self.total_seconds > 0 else float("nan")

    @property
    def e2e_tokens_per_s(self) -> float:
        return self.new_tokens / self.total_seconds if self.total_seconds > 0 else float("nan")


class _Stamps:
    """A `generate` streamer that only timestamps emissions (no decoding, no host copies of its own)."""

    def __init__(self, clock):
        self.clock = clock
        self.prompt_seen = False
        self.chunks: list[tuple[float, int]] = []

    def put(self, value):
        if not self.prompt_seen:          # generate first pushes the prompt
            self.prompt_seen = True
            return
        self.chunks.append((self.clock(), int(value.numel())))

    def end(self):
        pass


def _hf_sampling_kwargs(sampling: SamplingConfig) -> dict:
    # Explicit values for everything generate would otherwise take from the model's
    # generation_config (Qwen ships top_k=20, top_p=0.8, repetition_penalty=1.1).
    if sampling.greedy:
        return dict(do_sample=False, temperature=None, top_k=None, top_p=None, repetition_penalty=None)
    return dict(do_sample=True, temperature=float(sampling.temperature), top_k=int(sampling.top_k),
                top_p=float(sampling.top_p), repetition_penalty=None)


def _set_assistant(draft, k: int) -> dict:
    """Constant K, no confidence early-exit: transformers reads these from the assistant's config."""
    gc = draft.generation_config
    saved = {name: getattr(gc, name, None) for name in
             ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")}
    gc.num_assistant_tokens = int(k)
    gc.num_assistant_tokens_schedule = "constant"
    gc.assistant_confidence_threshold = 0.0
    return saved


@torch.inference_mode()
def _run_hf(target, draft, ids: torch.Tensor, k: int | None, sampling: SamplingConfig,
            max_new_tokens: int, seed: int) -> Run:
    device = input_device(target)
    clock = Timer(device)
    stamps = _Stamps(clock)
    x = ids[None].to(device)
    gen_kwargs = dict(max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                      attention_mask=torch.ones_like(x), streamer=stamps,
                      pad_token_id=_pad_id(target), **_hf_sampling_kwargs(sampling))
    saved = None
    if draft is not None:
        saved = _set_assistant(draft, k)
        gen_kwargs.update(assistant_model=draft, num_assistant_tokens=int(k),
                          num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
    try:
        torch.manual_seed(seed)
        t0 = clock()
        out = target.generate(x, **gen_kwargs)
        t1 = clock()
    finally:
        if saved is not None:
            for name, value in saved.items():
                setattr(draft.generation_config, name, value)
    new = out[0, x.shape[1]:].tolist()
    chunks = stamps.chunks or [(t1, len(new))]
    t_first, n_first = chunks[0]
    run = Run(method="hf_assisted" if draft is not None else "hf_generate", k=k, output_ids=new,
              seconds=t1 - t_first, first_emit_seconds=t_first - t0, first_tokens=n_first,
              total_seconds=t1 - t0, rounds=len(chunks))
    if draft is not None and chunks:
        # Each streamer push after the first verify is one round: accepted drafts + 1.
        run.tau = len(new) / len(chunks)
        run.acceptance_rate = min(1.0, max(0.0, (len(new) - len(chunks)) / (len(chunks) * k)))
    return run


def _pad_id(model) -> int:
    gc = model.generation_config
    for v in (gc.pad_token_id, gc.eos_token_id):
        if isinstance(v, int):
            return v
        if isinstance(v, (list, tuple)) and v:
            return int(v[0])
    return 0


def run_method(method: str, target, draft, input_ids, k: int | None, sampling: SamplingConfig,
               max_new_tokens: int, *, seed: int = 0, tokenizer=None) -> Run:
    """Generate `max_new_tokens` (EOS ignored) with one method and time it."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    device = input_device(target)
    ids = as_id_tensor(input_ids, device)
    clock = Timer(device)
    if method == "target":
        t0 = clock()
        steps = list(autoregressive_generate(target, ids, sampling, max_new_tokens, seed, ignore_eos=True))
        t1 = clock()
        first = steps[0].seconds if steps else 0.0
        stats_first = t1 - t0 - sum(s.seconds for s in steps) + first   # prefill + first step
        return Run(method, None, [s.token_id for s in steps], seconds=sum(s.seconds for s in steps[1:]),
                   first_emit_seconds=stats_first, first_tokens=1 if steps else 0, total_seconds=t1 - t0,
                   tau=1.0, rounds=len(steps))
    if method == "hf_generate":
        return _run_hf(target, None, ids, None, sampling, max_new_tokens, seed)
    if method == "hf_assisted":
        return _run_hf(target, draft, ids, int(k), sampling, max_new_tokens, seed)
    record = method == "specviz"
    t0 = clock()
    rounds = list(speculative_generate(target, draft, ids, k=int(k), sampling=sampling,
                                       max_new_tokens=max_new_tokens, seed=seed,
                                       tokenizer=tokenizer if record else None,
                                       ignore_eos=True, record=record,
                                       adaptive_threshold=ADAPTIVE_THRESHOLD if method == "specviz_adaptive" else None))
    t1 = clock()
    m = metrics(rounds)
    out = [t for r in rounds for t in r.emitted]
    in_rounds = sum(r.seconds for r in rounds)
    return Run(method, int(k), out, seconds=in_rounds - (rounds[0].seconds if rounds else 0.0),
               first_emit_seconds=(t1 - t0) - in_rounds + (rounds[0].seconds if rounds else 0.0),
               first_tokens=len(rounds[0].emitted) if rounds else 0, total_seconds=t1 - t0,
               acceptance_rate=m["acceptance_rate"], alpha=m["alpha_verified"], tau=m["tau"],
               per_position=m["per_position"], rounds=len(rounds))


# ---------------------------------------------------------------- bare forward costs
@dataclass
class ForwardCosts:
    target_1: float                       # seconds of one target forward over 1 new token
    draft_1: float                        # seconds of one draft forward over 1 new token
    target_k: dict[int, float]            # K -> seconds of one target forward over K+1 new tokens

    @property
    def c(self) -> float:
        return self.draft_1 / self.target_1

    def verify_cost(self, k: int) -> float:
        return self.target_k[k] / self.target_1

    def to_dict(self) -> dict:
        return {"target_1": self.target_1, "draft_1": self.draft_1,
                "target_k": {str(k): v for k, v in self.target_k.items()}, "c": self.c}


@torch.inference_mode()
def forward_costs(target, draft, input_ids, ks: Iterable[int], repeats: int = 3) -> ForwardCosts:
    """Median wall time of bare cached forwards, interleaved so drift hits all alike."""
    from transformers import DynamicCache

    ks = sorted(set(int(k) for k in ks))
    device = input_device(target)
    clock = Timer(device)
    ids = as_id_tensor(input_ids, device)
    caches = {}
    for name, model in (("target", target), ("draft", draft)):
        cache = DynamicCache()
        model(input_ids=ids[None].to(input_device(model)), cache=cache, use_cache=True, logits_to_keep=1)
        caches[name] = cache
    n = len(ids)
    extra = ids[-1:].repeat(max(ks, default=0) + 1)

    def timed(model, cache, length) -> float:
        x = extra[:length][None].to(input_device(model))
        t0 = clock()
        model(input_ids=x, cache=cache, use_cache=True, logits_to_keep=length)
        dt = clock() - t0
        cache.crop(-(cache.get_seq_length() - n))
        return dt

    samples: dict[Any, list[float]] = {"t1": [], "d1": [], **{k: [] for k in ks}}
    timed(target, caches["target"], 1)   # one untimed pass each: allocator and kernels warm
    timed(draft, caches["draft"], 1)
    for _ in range(max(1, repeats)):
        samples["t1"].append(timed(target, caches["target"], 1))
        samples["d1"].append(timed(draft, caches["draft"], 1))
        for k in ks:
            samples[k].append(timed(target, caches["target"], k + 1))
    med = {key: statistics.median(v) for key, v in samples.items()}
    return ForwardCosts(target_1=med["t1"], draft_1=med["d1"], target_k={k: med[k] for k in ks})


def theory_speedup(alpha: float, k: int, c: float, verify_cost: float) -> float:
    if not (isinstance(alpha, float) or isinstance(alpha, int)) or math.isnan(alpha) or not 0 <= alpha <= 1:
        return float("nan")
    if math.isnan(c) or math.isnan(verify_cost):
        return float("nan")
    return theory.expected_speedup(float(alpha), int(k), float(c), float(verify_cost))


# ---------------------------------------------------------------- the shared K sweep
@dataclass
class KRow:
    k: int
    tokens_per_s: float
    acceptance_rate: float
    alpha: float
    tau: float
    c: float
    verify_cost: float
    theory_speedup: float
    speedup: float               # tokens_per_s / target alone's tokens_per_s
    new_tokens: int
    seconds: float
    per_position: list[float] = field(default_factory=list)


@dataclass
class KSweep:
    target_tokens_per_s: float
    rows: list[KRow]
    max_new_tokens: int
    sampling: dict
    target_1_seconds: float = float("nan")
    draft_1_seconds: float = float("nan")

    @property
    def best_k(self) -> int | None:
        good = [r for r in self.rows if not math.isnan(r.tokens_per_s)]
        return max(good, key=lambda r: (r.tokens_per_s, -r.k)).k if good else None

    @property
    def best(self) -> KRow | None:
        return next((r for r in self.rows if r.k == self.best_k), None)

    def to_dict(self) -> dict:
        return _finite({"target_tokens_per_s": self.target_tokens_per_s, "best_k": self.best_k,
                        "max_new_tokens": self.max_new_tokens, "sampling": self.sampling,
                        "target_1_seconds": self.target_1_seconds, "draft_1_seconds": self.draft_1_seconds,
                        "rows": [asdict(r) for r in self.rows]})


def sweep_k(target, draft, input_ids, ks: Sequence[int], sampling: SamplingConfig = SamplingConfig(),
            max_new_tokens: int = 64, *, seed: int = 0, tokenizer=None, progress: Progress | None = None,
            record: bool = False, cost_repeats: int = 3) -> KSweep:
    """Target alone once, then the speculative decoder at each K; EOS ignored, same token counts.

    `record=False` (default) times the decoder without the per-token trace, the
    way it runs when only speed matters; `record=True` includes the trace cost.
    `progress(fraction, message)` is called before each step and at the end.
    """
    ks = [int(k) for k in ks]
    if not ks:
        raise ValueError("give at least one K")
    for k in ks:
        if not 1 <= k <= MAX_K:
            raise ValueError(f"K must be in [1, {MAX_K}], got {k}")
    report = progress or (lambda f, m: None)
    steps = len(ks) + 2
    report(0.0, "timing bare forwards")
    costs = forward_costs(target, draft, input_ids, ks, repeats=cost_repeats)
    report(1 / steps, "target alone")
    base = run_method("target", target, draft, input_ids, None, sampling, max_new_tokens, seed=seed)
    rows = []
    method = "specviz" if record else "specviz_notrace"
    for i, k in enumerate(ks):
        report((i + 2) / steps, f"speculative decoding, K = {k}")
        run = run_method(method, target, draft, input_ids, k, sampling, max_new_tokens, seed=seed,
                         tokenizer=tokenizer)
        c, vc = costs.c, costs.verify_cost(k)
        rows.append(KRow(k=k, tokens_per_s=run.tokens_per_s, acceptance_rate=run.acceptance_rate,
                         alpha=run.alpha, tau=run.tau, c=c, verify_cost=vc,
                         theory_speedup=theory_speedup(run.alpha, k, c, vc),
                         speedup=run.tokens_per_s / base.tokens_per_s, new_tokens=run.new_tokens,
                         seconds=run.seconds, per_position=run.per_position))
    report(1.0, "done")
    return KSweep(target_tokens_per_s=base.tokens_per_s, rows=rows, max_new_tokens=max_new_tokens,
                  sampling=sampling.to_dict(), target_1_seconds=costs.target_1, draft_1_seconds=costs.draft_1)


def ksweep_from_rows(rows: list[dict], temperature: float, method: str = "specviz_notrace") -> KSweep | None:
    """The benchmark's medians over prompts as a KSweep, so the report can reuse the app's chart."""
    rs = [r for r in rows if r["temperature"] == temperature]
    base = _median([r["tokens_per_s"] for r in rs if r["method"] == "target"])
    ks = sorted({r["k"] for r in rs if r["method"] == method and r["k"] is not None})
    out = []
    for k in ks:
        sel = [r for r in rs if r["method"] == method and r["k"] == k]
        med = {f: _median([r[f] for r in sel]) for f in ("tokens_per_s", "acceptance_rate", "alpha", "tau", "c",
                                                         "verify_cost", "theory_speedup", "speedup_vs_target",
                                                         "new_tokens", "seconds")}
        out.append(KRow(k=k, tokens_per_s=med["tokens_per_s"], acceptance_rate=med["acceptance_rate"],
                        alpha=med["alpha"], tau=med["tau"], c=med["c"], verify_cost=med["verify_cost"],
                        theory_speedup=med["theory_speedup"], speedup=med["speedup_vs_target"],
                        new_tokens=int(med["new_tokens"]) if not math.isnan(med["new_tokens"]) else 0,
                        seconds=med["seconds"]))
    if not out:
        return None
    return KSweep(target_tokens_per_s=base, rows=out, max_new_tokens=max(r.new_tokens for r in out),
                  sampling={"temperature": temperature})


def _finite(obj):
    """NaN/inf -> None, recursively, so the JSON is valid for browsers."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


# ---------------------------------------------------------------- prompts
@dataclass
class Prompt:
    id: str
    category: str
    text: str


class BenchError(Exception):
    """A problem the user can fix (bad file, bad value): reported in one line, exit code 2."""


def default_prompts_file() -> Path:
    return SHARED_PROMPTS if SHARED_PROMPTS.is_file() else ASSET_PROMPTS


def load_prompts(path: str | Path) -> list[Prompt]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BenchError(f"prompts file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"cannot read prompts file {path}: {e}") from None
    prompts = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise BenchError(f"{path}:{n}: not valid JSON ({e.msg})") from None
        if isinstance(obj, str):
            obj = {"prompt": obj}
        text = obj.get("prompt") if isinstance(obj, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise BenchError(f"{path}:{n}: expected an object with a non-empty \"prompt\" string")
        pid = str(obj.get("id") or f"p{len(prompts) + 1:02d}")
        prompts.append(Prompt(pid, str(obj.get("category") or "uncategorized"), text))
    if not prompts:
        raise BenchError(f"no prompts in {path}")
    return prompts


# ---------------------------------------------------------------- the command line
class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BenchError(message)


def _bounded_int(lo: int, hi: int, what: str):
    return bounded(int, lo, hi, what)


_temperature = bounded(float, 0.0, MAX_TEMPERATURE, "--temperature")
_top_p = bounded(float, 1e-6, 1.0, "--top-p")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m specviz bench",
                description="Throughput of speculative decoding versus K, side by side with the target alone "
                            "and transformers' generate / assisted generation.")
    p.add_argument("--prompts", help=f"JSONL file of {{\"prompt\", \"category\"}} (default: {SHARED_PROMPTS} "
                                     f"when present, else {ASSET_PROMPTS.relative_to(REPO_ROOT)})")
    p.add_argument("--k", nargs="+", type=_bounded_int(1, MAX_K, "K"), default=[1, 2, 3, 4, 6, 8],
                   help="draft lengths to sweep (default: 1 2 3 4 6 8)")
    p.add_argument("--max-new-tokens", type=_bounded_int(1, MAX_NEW_TOKENS, "--max-new-tokens"), default=128)
    p.add_argument("--temperature", nargs="+", type=_temperature, default=[0.0, 0.7],
                   help="temperatures (0 = greedy; default: 0 0.7)")
    p.add_argument("--top-k", type=_bounded_int(0, 1_000_000, "--top-k"), default=0, help="0 = off")
    p.add_argument("--top-p", type=_top_p, default=1.0, help="1 = off")
    p.add_argument("--repeats", type=_bounded_int(1, MAX_REPEATS, "--repeats"), default=3)
    p.add_argument("--out", default="bench-results", help="output folder (default: bench-results)")
    p.add_argument("--draft", help="draft model (Hub id or folder); with --target")
    p.add_argument("--target", help="target model (Hub id or folder); with --draft")
    p.add_argument("--device", help="cpu, cuda, cuda:0 ... (default: automatic)")
    p.add_argument("--dtype", help="float32, bfloat16, float16 (default: automatic)")
    p.add_argument("--limit-prompts", type=_bounded_int(1, 100_000, "--limit-prompts"),
                   help="use only the first N prompts")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), metavar="METHOD",
                   help=f"subset of: {' '.join(METHODS)} (default: all)")
    p.add_argument("--seed", type=_bounded_int(0, 2**31 - 1, "--seed"), default=0)
    p.add_argument("--threads", type=_bounded_int(0, 1024, "--threads"), default=0,
                   help="torch CPU threads (default 0: torch's choice); 1 is steadier on a shared machine")
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up generation")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _default_loader(**kwargs):
    from .models import load_pair

    return load_pair(**kwargs)


def _progress_bar(total: int, quiet: bool):
    if quiet:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:   # pragma: no cover - tqdm comes with transformers
        return None
    return tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True, mininterval=0.5)


def _median(xs) -> float:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")


def temp_key(t: float) -> str:
    return f"{float(t):.1f}" if round(t, 1) == t else repr(float(t))


def main(argv: Sequence[str] | None = None, *, pair_loader: Callable[..., Any] | None = None) -> int:
    """`python -m specviz bench ...`; returns the exit code (2 for bad arguments or files)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if (args.draft is None) != (args.target is None):
            raise BenchError("give both --draft and --target, or neither for the packaged pair")
        prompts = load_prompts(args.prompts or default_prompts_file())
        if args.limit_prompts:
            prompts = prompts[: args.limit_prompts]
        samplings = [SamplingConfig(t, args.top_k, args.top_p) for t in dict.fromkeys(args.temperature)]
        out_dir = Path(args.out)
        if out_dir.exists() and not out_dir.is_dir():
            raise BenchError(f"--out {out_dir} exists and is not a folder")
    except BenchError as e:
        print(f"specviz bench: error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:   # --help
        return int(e.code or 0)

    try:   # one line per hf_assisted call about generation_config otherwise
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass
    if args.threads:
        torch.set_num_threads(args.threads)
    ks = list(dict.fromkeys(args.k))
    methods = [m for m in METHODS if m in args.methods]
    load = pair_loader or _default_loader
    print(f"loading models{' ' + args.draft + ' -> ' + args.target if args.draft else ' (packaged pair)'} ...",
          file=sys.stderr)
    try:
        pair = load(draft=args.draft, target=args.target, device=args.device, dtype=args.dtype)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"specviz bench: error: cannot load the models: {e}", file=sys.stderr)
        return 1
    target, draft, tok = pair.target, pair.draft, getattr(pair, "tokenizer", None)
    encoded = [pair.encode_chat(p.text) for p in prompts]

    result = run_benchmark(target, draft, tok, prompts, encoded, ks, samplings, args.max_new_tokens,
                           args.repeats, methods, seed=args.seed, warmup=not args.no_warmup, quiet=args.quiet)
    result["meta"] = _meta(pair, args, argv, prompts)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(_finite(result), indent=1, allow_nan=False), encoding="utf-8")
    from .viz.report import write_report

    write_report(result, out_dir / "report.html")
    print(format_table(result))
    print(f"\nwrote {out_dir / 'results.json'} and {out_dir / 'report.html'}")
    return 0


def _meta(pair, args, argv, prompts) -> dict:
    device = getattr(pair, "device", None)
    meta = {
        "pair": getattr(pair, "name", ""), "device": str(device), "dtype": str(getattr(pair, "dtype", "")),
        "command": "python -m specviz bench " + " ".join(argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "python": platform.python_version(), "torch": torch.__version__},
        "prompts": [asdict(p) for p in prompts],
        "max_new_tokens": args.max_new_tokens, "repeats": args.repeats, "ks": list(dict.fromkeys(args.k)),
        "methods": args.methods,
    }
    try:
        import transformers
        meta["machine"]["transformers"] = transformers.__version__
    except Exception:  # pragma: no cover
        pass
    if torch.cuda.is_available() and device is not None and torch.device(device).type == "cuda":
        meta["machine"]["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return meta


def run_benchmark(target, draft, tokenizer, prompts: list[Prompt], encoded: list[list[int]], ks: list[int],
                  samplings: list[SamplingConfig], max_new_tokens: int, repeats: int, methods: list[str],
                  *, seed: int = 0, warmup: bool = True, quiet: bool = True) -> dict:
    """All measurements, interleaved per prompt and K; returns {"rows", "summary", "costs"}."""
    plain = [m for m in methods if m not in K_METHODS]
    with_k = [m for m in methods if m in K_METHODS]
    per_prompt = len(plain) + len(with_k) * len(ks)
    bar = _progress_bar(len(samplings) * repeats * len(prompts) * per_prompt, quiet)

    if warmup:   # every code path once, short, on the first prompt
        for sampling in samplings[:1]:
            for m in plain:
                run_method(m, target, draft, encoded[0], None, sampling, min(8, max_new_tokens), seed=seed)
            for m in with_k:
                run_method(m, target, draft, encoded[0], ks[0], sampling, min(8, max_new_tokens), seed=seed,
                           tokenizer=tokenizer)

    rows: list[dict] = []
    costs: dict[str, dict] = {}
    for sampling in samplings:
        tkey = temp_key(sampling.temperature)
        for rep in range(repeats):
            for pi, (prompt, ids) in enumerate(zip(prompts, encoded)):
                fc = forward_costs(target, draft, ids, ks, repeats=3)
                costs.setdefault(prompt.id, fc.to_dict())
                run_seed = seed + rep
                # Rotate the order each repeat so no method always runs first after a cost pass.
                jobs = [(m, None) for m in plain] + [(m, k) for k in ks for m in with_k]
                shift = (rep + pi) % len(jobs)
                jobs = jobs[shift:] + jobs[:shift]
                got: list[tuple[Run, str]] = []
                for m, k in jobs:
                    if bar is not None:
                        bar.set_description(f"T={tkey} rep {rep + 1}/{repeats} {prompt.id} {m}"
                                            + (f" K={k}" if k else ""), refresh=False)
                    run = run_method(m, target, draft, ids, k, sampling, max_new_tokens, seed=run_seed,
                                     tokenizer=tokenizer)
                    got.append((run, m))
                    if bar is not None:
                        bar.update(1)
                ref = next((r for r, m in got if m == "target"), None)
                for run, m in got:
                    k = run.k
                    c = fc.c if k else float("nan")
                    vc = fc.verify_cost(k) if k else float("nan")
                    rows.append({
                        "prompt_id": prompt.id, "category": prompt.category, "method": m, "k": k,
                        "temperature": sampling.temperature, "repeat": rep, "seed": run_seed,
                        "new_tokens": run.new_tokens, "seconds": run.seconds,
                        "tokens_per_s": run.tokens_per_s, "e2e_tokens_per_s": run.e2e_tokens_per_s,
                        "first_emit_seconds": run.first_emit_seconds, "total_seconds": run.total_seconds,
                        "acceptance_rate": run.acceptance_rate, "alpha": run.alpha, "tau": run.tau,
                        "rounds": run.rounds, "per_position": run.per_position,
                        "c": c, "verify_cost": vc,
                        "theory_speedup": theory_speedup(run.alpha, k, c, vc) if k else float("nan"),
                        "speedup_vs_target": (run.tokens_per_s / ref.tokens_per_s) if ref else float("nan"),
                        # Only greedy outputs are comparable token for token; samples differ by design.
                        "matches_target": (run.output_ids == ref.output_ids) if ref and sampling.greedy else None,
                    })
    if bar is not None:
        bar.close()
    return {"rows": rows, "summary": summarize(rows), "costs": costs}


# ---------------------------------------------------------------- summary
def _per_prompt(rows: list[dict], method: str, k, field_: str = "tokens_per_s") -> dict[str, float]:
    """prompt id -> median over repeats of `field_` for (method, k)."""
    acc: dict[str, list] = {}
    for r in rows:
        if r["method"] == method and r["k"] == k:
            acc.setdefault(r["prompt_id"], []).append(r[field_])
    return {p: _median(v) for p, v in acc.items()}


def summarize(rows: list[dict]) -> dict:
    """Per temperature ("0.0", "0.7"): medians over prompts, at one fixed best K per method.

    best_k: the K with the highest median-over-prompts speedup of specviz over the
    target alone (one K for all prompts, as a user would fix it; the per-prompt
    oracle is reported beside it). speedup_vs_target, ratio_vs_hf_assisted (each
    at its own best K), achieved_over_theory and trace_overhead (at specviz's
    best K) are medians over prompts of per-prompt ratios; each prompt's value
    is first the median over repeats.
    """
    out: dict[str, dict] = {}
    for temp in sorted({r["temperature"] for r in rows}):
        rs = [r for r in rows if r["temperature"] == temp]
        ks = sorted({r["k"] for r in rs if r["k"] is not None})
        target = _per_prompt(rs, "target", None)
        prompts = sorted({r["prompt_id"] for r in rs})
        s: dict[str, Any] = {"prompts": len(prompts)}

        def best_k_of(method: str):
            scored = {}
            for k in ks:
                tps = _per_prompt(rs, method, k)
                if not tps:
                    continue
                ref = target if target else None
                vals = [tps[p] / ref[p] for p in tps if ref and p in ref] if ref else list(tps.values())
                scored[k] = _median(vals)
            scored = {k: v for k, v in scored.items() if not math.isnan(v)}
            return max(scored, key=lambda k: (scored[k], -k)) if scored else None

        bk = best_k_of("specviz") or best_k_of("specviz_notrace")
        spec_method = "specviz" if _per_prompt(rs, "specviz", bk) else "specviz_notrace"
        hk = best_k_of("hf_assisted")
        s["best_k"] = bk
        s["hf_assisted_best_k"] = hk
        spec = _per_prompt(rs, spec_method, bk) if bk else {}
        notrace = _per_prompt(rs, "specviz_notrace", bk) if bk else {}
        hf = _per_prompt(rs, "hf_assisted", hk) if hk else {}
        hfg = _per_prompt(rs, "hf_generate", None)
        s["speedup_vs_target"] = _median([spec[p] / target[p] for p in spec if p in target])
        s["ratio_vs_hf_assisted"] = _median([spec[p] / hf[p] for p in spec if p in hf])
        s["hf_assisted_speedup_vs_target"] = _median([hf[p] / target[p] for p in hf if p in target])
        s["hf_generate_vs_target"] = _median([hfg[p] / target[p] for p in hfg if p in target])
        theo = _per_prompt(rs, spec_method, bk, "theory_speedup") if bk else {}
        s["theory_speedup"] = _median(list(theo.values()))
        s["achieved_over_theory"] = _median([(spec[p] / target[p]) / theo[p] for p in spec
                                             if p in target and theo.get(p) and not math.isnan(theo[p])])
        ak = best_k_of("specviz_adaptive")
        if ak:  # the adaptive draft length against the best fixed K, both without a trace
            adaptive = _per_prompt(rs, "specviz_adaptive", ak)
            s["adaptive_best_max_k"] = ak
            s["adaptive_speedup_vs_target"] = _median([adaptive[p] / target[p] for p in adaptive if p in target])
            s["adaptive_ratio_vs_fixed_k"] = _median([adaptive[p] / notrace[p] for p in adaptive if p in notrace])
        s["trace_overhead"] = _median([1 - _per_prompt(rs, "specviz", bk).get(p, float("nan")) / notrace[p]
                                       for p in notrace]) if bk else float("nan")
        # Per-prompt best K (an oracle a user could not pick in advance), for reference.
        oracle_k, oracle_speed = [], []
        for p in prompts:
            by_k = {k: _per_prompt(rs, spec_method, k).get(p) for k in ks}
            by_k = {k: v for k, v in by_k.items() if v is not None and not math.isnan(v)}
            if by_k and p in target:
                kk = max(by_k, key=lambda k: (by_k[k], -k))
                oracle_k.append(kk)
                oracle_speed.append(by_k[kk] / target[p])
        s["per_prompt_best_k_median"] = _median(oracle_k)
        s["speedup_vs_target_per_prompt_best_k"] = _median(oracle_speed)
        s["alpha"] = _median(list(_per_prompt(rs, spec_method, bk, "alpha").values())) if bk else float("nan")
        s["tau"] = _median(list(_per_prompt(rs, spec_method, bk, "tau").values())) if bk else float("nan")
        s["c"] = _median([r["c"] for r in rs if r["k"] is not None])
        # Median tokens/s over prompts for every method and K (the printed table).
        table = []
        for m in METHODS:
            for k in ([None] if m not in K_METHODS else ks):
                tps = _per_prompt(rs, m, k)
                if not tps:
                    continue
                table.append({
                    "method": m, "k": k, "tokens_per_s": _median(list(tps.values())),
                    "speedup_vs_target": _median([tps[p] / target[p] for p in tps if p in target]),
                    "acceptance_rate": _median(list(_per_prompt(rs, m, k, "acceptance_rate").values())),
                    "tau": _median(list(_per_prompt(rs, m, k, "tau").values())),
                    "theory_speedup": _median(list(_per_prompt(rs, m, k, "theory_speedup").values())),
                    "matches_target": _fraction([r["matches_target"] for r in rs
                                                 if r["method"] == m and r["k"] == k]),
                })
        s["table"] = table
        out[temp_key(temp)] = s
    return out


def _fraction(flags) -> float:
    flags = [f for f in flags if f is not None]
    return sum(bool(f) for f in flags) / len(flags) if flags else float("nan")


def _fmt(x, spec="{:.2f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return spec.format(x)


def format_table(result: dict) -> str:
    lines = []
    for tkey, s in result["summary"].items():
        lines.append(f"\ntemperature {tkey}: medians over {s['prompts']} prompt(s)")
        lines.append(f"{'method':<16}{'K':>3}{'tok/s':>9}{'speedup':>9}{'accept':>8}{'tau':>6}"
                     f"{'theory':>8}{'same out':>9}")
        for r in s["table"]:
            lines.append(f"{r['method']:<16}{_fmt(r['k'], '{}'):>3}{_fmt(r['tokens_per_s']):>9}"
                         f"{_fmt(r['speedup_vs_target'], '{:.2f}x'):>9}{_fmt(r['acceptance_rate']):>8}"
                         f"{_fmt(r['tau']):>6}{_fmt(r['theory_speedup'], '{:.2f}x'):>8}"
                         f"{_fmt(r['matches_target'], '{:.0%}'):>9}")
        lines.append(f"best K {s['best_k']}: speedup vs target {_fmt(s['speedup_vs_target'], '{:.2f}x')}, "
                     f"vs hf_assisted (K {s['hf_assisted_best_k']}) {_fmt(s['ratio_vs_hf_assisted'], '{:.2f}x')}, "
                     f"achieved/theory {_fmt(s['achieved_over_theory'])}, "
                     f"trace overhead {_fmt(s['trace_overhead'], '{:+.1%}')}")
    return "\n".join(lines)
