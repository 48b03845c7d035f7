"""One measured generation: one method, one prompt, exactly `max_new_tokens` new tokens, timed.

Throughput is decode throughput (see the package docstring): tokens emitted
after the first emission over the wall time from the first emission to the
last, so prefill never enters tokens/s. Every method ignores EOS so that all of
them produce the same number of tokens.
"""
from __future__ import annotations

import copy
import dataclasses
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import torch

from ..engine.baseline import autoregressive_generate
from ..runtime.decoding import Timer, as_id_tensor, input_device
from ..runtime.report import RunReport, run_to_end
from ..limits import ADAPTIVE_THRESHOLD
from ..engine.options import HYBRID_DRAFTERS, Chain, DecodeOptions, Tree
from ..engine.sampling import SamplingConfig
from ..generate import speculative_generate
from ..trace.records import metrics
from .methods import METHODS, TREE_SPECS


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
    lookup_share: float = float("nan")   # drafted tokens proposed by prompt lookup (ngram/hybrid), of all drafted

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


class RunStopped(Exception):
    """The caller's `stop()` said stop during a measured run: a cut run has no figure, so none is returned."""


def _whole(loop) -> tuple[list, RunReport]:
    """Every step or round of one of specviz's loops and its report; the loop asks the caller's `stop()` between them
    and ends early once it says stop (within one round, not one whole run: the page's Stop), its report `stopped`."""
    out, report = run_to_end(loop)
    if report.stopped:
        raise RunStopped()
    return out, report


def run_method(method: str, target, draft, input_ids, k: int | None, options: DecodeOptions,
               tree_costs=None, lookup_k: int | None = None) -> Run:
    """Generate `options.max_new_tokens` (EOS ignored) with one method and time it.

    `options` carries the sampling, budget, seed, tokenizer, `compile` and `stop`; the method sets the rest (its
    drafting at `k`, the trace, EOS ignored). `compile` (auto | on | off) applies to specviz's own loops (target,
    specviz*), as in `speculative_generate`; transformers' methods pick their own caches by name. `tree_costs`
    (specviz.engine.tree_drafter.TreeCosts) lets the tree methods size each tree to the measured costs; `lookup_k`
    is the most tokens a hybrid's lookup rounds propose (default k; engine.options.Chain). `stop` (a
    callable) is asked by specviz's loops between rounds; once it ends one, `RunStopped` (transformers' methods
    run whole).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    ids = as_id_tensor(input_ids, input_device(target))
    options = dataclasses.replace(options, ignore_eos=True)
    if method == "target":
        return _run_target(target, ids, options)
    if method in HF_KINDS:
        return _run_hf(method, target, draft, ids, k, options)
    return _run_specviz(method, target, draft, ids, int(k), options, tree_costs, lookup_k)


# ---------------------------------------------------------------- specviz's own loops
def _run_target(target, ids: torch.Tensor, options: DecodeOptions) -> Run:
    clock = Timer(input_device(target))
    t0 = clock()
    steps, report = _whole(autoregressive_generate(target, ids, dataclasses.replace(options, tokenizer=None)))
    t1 = clock() - report.seconds("warmup_seconds")   # graph capture is set-up, not decoding
    first = steps[0].seconds if steps else 0.0
    stats_first = t1 - t0 - sum(s.seconds for s in steps) + first   # prefill + first step
    return Run("target", None, [s.token_id for s in steps], seconds=sum(s.seconds for s in steps[1:]),
               first_emit_seconds=stats_first, first_tokens=1 if steps else 0, total_seconds=t1 - t0,
               tau=1.0, rounds=len(steps))


# specviz method -> (drafter, record the trace, adaptive threshold)
SPECVIZ_KINDS = {
    "specviz": ("model", True, None),
    "specviz_notrace": ("model", False, None),
    "specviz_adaptive": ("model", False, ADAPTIVE_THRESHOLD),
    "specviz_ngram": ("ngram", False, None),
    "specviz_hybrid": ("hybrid", False, ADAPTIVE_THRESHOLD),   # its model rounds stop early too
    "specviz_trimmed": ("trimmed", False, None),
    "specviz_hybrid_trimmed": ("hybrid_trimmed", False, ADAPTIVE_THRESHOLD),
    "specviz_tree": ("model", False, None),   # with tree="dynamic:K": K nodes per target pass
    "specviz_hybrid_tree": ("model", False, None),   # with tree="hybrid:K:K:2:1" (TREE_SPECS)
}


def method_options(method: str, k: int, options: DecodeOptions, tree_costs=None,
                   lookup_k: int | None = None) -> DecodeOptions:
    """`options` with the drafting and the trace of a specviz method at `k` (a tree method's K is its node budget;
    `lookup_k` applies to the hybrid chains, the others ignore it)."""
    drafter, record, threshold = SPECVIZ_KINDS[method]
    drafting = (Tree(TREE_SPECS[method].format(k=k), tree_costs) if method in TREE_SPECS
                else Chain(k, threshold, drafter, lookup_k if drafter in HYBRID_DRAFTERS else None))
    return dataclasses.replace(options, drafting=drafting, record=record,
                               tokenizer=options.tokenizer if record else None)


def _run_specviz(method: str, target, draft, ids: torch.Tensor, k: int, options: DecodeOptions,
                 tree_costs=None, lookup_k: int | None = None) -> Run:
    drafter = SPECVIZ_KINDS[method][0]
    clock = Timer(input_device(target))
    t0 = clock()
    options = method_options(method, k, options, tree_costs, lookup_k)
    rounds, report = _whole(speculative_generate(target, None if drafter == "ngram" else draft, ids, options))
    t1 = clock() - report.seconds("warmup_seconds")   # graph capture is set-up, not decoding
    m = metrics(rounds)
    out = [t for r in rounds for t in r.emitted]
    in_rounds = sum(r.seconds for r in rounds)
    first = rounds[0].seconds if rounds else 0.0
    sources = [getattr(t, "source", "model") for r in rounds for t in r.drafted]
    return Run(method, k, out, seconds=in_rounds - first,
               first_emit_seconds=(t1 - t0) - in_rounds + first,
               first_tokens=len(rounds[0].emitted) if rounds else 0, total_seconds=t1 - t0,
               acceptance_rate=m["acceptance_rate"], alpha=m["alpha_verified"], tau=m["tau"],
               per_position=m["per_position"], rounds=len(rounds),
               lookup_share=(sources.count("ngram") / len(sources)) if sources and drafter != "model"
               else float("nan"))


# ---------------------------------------------------------------- transformers' generate
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


@contextmanager
def _assistant_config(draft, k: int | None):
    """The draft's generation_config swapped for a copy for one call, then the original put back.

    transformers reads the assistant's settings from `draft.generation_config`
    (and may update them as it goes), so every call starts from a fresh copy:
    with `k`, constant K and no confidence early-exit; without, the config as
    shipped, so generate fills in its own defaults (20 tokens, threshold 0.4).
    """
    original = draft.generation_config
    gc = copy.deepcopy(original)
    if k is not None:
        gc.num_assistant_tokens = int(k)
        gc.num_assistant_tokens_schedule = "constant"
        gc.assistant_confidence_threshold = 0.0
    draft.generation_config = gc
    try:
        yield
    finally:
        draft.generation_config = original


def _pad_id(model) -> int:
    gc = model.generation_config
    for v in (gc.pad_token_id, gc.eos_token_id):
        if isinstance(v, int):
            return v
        if isinstance(v, (list, tuple)) and v:
            return int(v[0])
    return 0


# transformers method -> what it adds to generate's arguments (K where it takes one).
HF_KINDS = ("hf_generate", "hf_static", "hf_assisted", "hf_assisted_default", "hf_prompt_lookup")


def _hf_method_kwargs(method: str, draft, k: int | None) -> dict:
    if method == "hf_static":
        return dict(cache_implementation="static")
    if method == "hf_prompt_lookup":
        return dict(prompt_lookup_num_tokens=int(k))
    if method == "hf_assisted":
        return dict(assistant_model=draft, num_assistant_tokens=int(k), num_assistant_tokens_schedule="constant",
                    assistant_confidence_threshold=0.0)
    if method == "hf_assisted_default":
        return dict(assistant_model=draft)   # nothing else: transformers' own defaults
    return {}


@torch.inference_mode()
def _run_hf(method: str, target, draft, ids: torch.Tensor, k: int | None, options: DecodeOptions) -> Run:
    """One of transformers' decoders (HF_KINDS), timed by a streamer."""
    sampling, max_new_tokens, seed = options.sampling, options.max_new_tokens, options.seed
    k = int(k) if method in ("hf_assisted", "hf_prompt_lookup") else None
    assisted = method in ("hf_assisted", "hf_assisted_default")
    if assisted and draft is None:
        raise ValueError(f"{method} needs a draft model")
    device = input_device(target)
    clock = Timer(device)
    stamps = _Stamps(clock)
    x = ids[None].to(device)
    gen_kwargs = dict(max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                      attention_mask=torch.ones_like(x), streamer=stamps,
                      pad_token_id=_pad_id(target), **_hf_sampling_kwargs(sampling),
                      **_hf_method_kwargs(method, draft, k))
    with _assistant_config(draft, k) if assisted else nullcontext():
        torch.manual_seed(seed)
        t0 = clock()
        out = target.generate(x, **gen_kwargs)
        t1 = clock()
    new = out[0, x.shape[1]:].tolist()
    chunks = stamps.chunks or [(t1, len(new))]
    t_first, n_first = chunks[0]
    run = Run(method=method, k=k, output_ids=new,
              seconds=t1 - t_first, first_emit_seconds=t_first - t0, first_tokens=n_first,
              total_seconds=t1 - t0, rounds=len(chunks))
    if method in ("hf_assisted", "hf_assisted_default", "hf_prompt_lookup") and chunks:
        # Each streamer push after the first verify is one round: accepted drafts + 1.
        run.tau = len(new) / len(chunks)
        if method == "hf_assisted":   # K drafts every round: the acceptance rate follows from tau
            run.acceptance_rate = min(1.0, max(0.0, (len(new) - len(chunks)) / (len(chunks) * k)))
    return run
