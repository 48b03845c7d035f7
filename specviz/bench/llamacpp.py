"""llama.cpp as a peer in the bench: the target's own GGUF file run by llama-cpp-python (optional).

Two methods (methods.PEER_METHODS):
- llamacpp_target: llama.cpp's decode of the target GGUF alone, one token per step;
- llamacpp_lookup: the same with llama-cpp-python's prompt-lookup drafter
  (`LlamaPromptLookupDecoding`, its default n-gram size, num_pred_tokens = the bench's K).

They follow the bench's conventions: the same prompt token ids as every other
method (the packaged pair's tokenizer was converted from this very GGUF, so an
id means the same token on both sides), EOS ignored, exactly `max_new_tokens`
tokens, and decode throughput timed from the first emission to the last, so
prefill counts the same way as for the others. What they emit is llama.cpp's own
run of the model (its quantized kernels, its sampler and its random numbers):
greedy outputs are compared token for token with specviz's target ("same out"),
sampled ones never.

llama-cpp-python has no prebuilt CPU wheel for most machines and is never needed
by the app or the tests: nothing imports it but this module, and only when a
bench asks for these methods (`peer_for`).
"""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..limits import LLAMACPP_CTX_STEP
from ..engine.sampling import SamplingConfig
from .measure import Run
from .methods import PEER_METHODS

LLAMACPP_VERSION = "0.3.36"   # the version built and measured here (docs/measurements.md)
INSTALL_HINT = (f'CMAKE_ARGS="-DGGML_NATIVE=ON" pip install llama-cpp-python=={LLAMACPP_VERSION} '
                '(built from source: about 10 minutes on 2 cores; see docs/measurements.md, "llama.cpp as a peer")')


def import_llama_cpp():
    """The llama_cpp module, or None where it is not installed or does not load (a broken build)."""
    try:
        import llama_cpp
    except Exception:   # ImportError, or OSError from a shared library that does not load
        return None
    return llama_cpp


def skipped(why: str) -> str:
    """The one sentence the bench prints when the llama.cpp methods cannot run."""
    return f"the llama.cpp peers ({' and '.join(PEER_METHODS)}) were skipped: {why}"


def missing_package() -> str | None:
    """Why llama.cpp cannot run here at all (llama-cpp-python missing), in one sentence; None when it can."""
    if import_llama_cpp() is None:
        return skipped(f"llama-cpp-python is not installed. They are optional; to add them: {INSTALL_HINT}")
    return None


def skip_reason(gguf: Path | None) -> str | None:
    """Why the llama.cpp methods cannot run `gguf` here, in one sentence; None when they can."""
    if missing := missing_package():
        return missing
    if gguf is None:
        return skipped("they run the target's GGUF file, and this target was not loaded from one "
                       "(give --gguf FILE)")
    if not Path(gguf).is_file():
        return skipped(f"no GGUF file at {gguf}")
    return None


@dataclass
class LlamaCppPeer:
    """One GGUF file and the llama.cpp contexts that run it, loaded once and reused across runs.

    Two contexts at most: plain decoding keeps logits for the last position only;
    prompt lookup needs them at every position it verifies (logits_all). Both map
    the same file, so the weights are in memory once.
    """

    gguf: Path
    threads: int
    # llama.cpp's extra weight buffers (AMX, repacked weights): off on AMX CPUs, where 0.3.36 built with
    # GGML_NATIVE crashed (SIGSEGV in ggml_backend_amx_mul_mat, the packaged Q4_K_M target, a 2-core Xeon).
    extra_buffers: bool = field(default_factory=lambda: not _cpu_has_amx())
    _contexts: dict = field(default_factory=dict)   # lookup? -> (Llama, n_ctx)

    def context(self, lookup: bool, positions: int):
        """The Llama for plain or lookup decoding, with room for `positions` tokens (reloaded when short)."""
        held = self._contexts.get(lookup)
        if held and held[1] >= positions:
            return held[0]
        self._contexts.pop(lookup, None)
        gc.collect()   # free the smaller context's KV cache before allocating the next
        n_ctx = -(-positions // LLAMACPP_CTX_STEP) * LLAMACPP_CTX_STEP
        llama_cpp = import_llama_cpp()
        extra = {"draft_model": _lookup_drafter(1)} if lookup else {}
        with _model_params(llama_cpp, self.extra_buffers):
            llm = llama_cpp.Llama(model_path=str(self.gguf), n_ctx=n_ctx, n_threads=self.threads,
                                  n_threads_batch=self.threads, verbose=False, **extra)
        self._contexts[lookup] = (llm, n_ctx)
        return llm

    def describe(self) -> dict:
        """What ran, for the results' meta."""
        llama_cpp = import_llama_cpp()
        return {"gguf": Path(self.gguf).name, "threads": self.threads, "extra_buffers": self.extra_buffers,
                "llama_cpp_python": getattr(llama_cpp, "__version__", None)}


def _cpu_has_amx() -> bool:
    try:
        return "amx_int8" in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


@contextmanager
def _model_params(llama_cpp, extra_buffers: bool):
    """Llama() with llama.cpp's `use_extra_bufts` as asked (llama-cpp-python 0.3 has no argument for it).

    Its constructor reads `llama_model_default_params()` from its low-level module; that one
    function is wrapped for the constructor's duration, then put back.
    """
    low = getattr(getattr(llama_cpp, "llama", None), "llama_cpp", None)
    if extra_buffers or low is None or not hasattr(low, "llama_model_default_params"):
        yield
        return
    default = low.llama_model_default_params

    def without_extra_buffers():
        params = default()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        low.llama_model_default_params = default


def peer_for(gguf: Path | None, threads: int) -> tuple[LlamaCppPeer | None, str | None]:
    """(the peer, None) when llama.cpp can run `gguf` here, else (None, why not in one sentence)."""
    reason = skip_reason(gguf)
    return (None, reason) if reason else (LlamaCppPeer(Path(gguf), max(1, int(threads))), None)


def _lookup_drafter(k: int):
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    return LlamaPromptLookupDecoding(num_pred_tokens=int(k))   # its default n-gram size (2)


class _CountingDrafter:
    """A llama-cpp-python draft model that counts what it proposes (for the acceptance rate)."""

    def __init__(self, inner):
        self.inner = inner
        self.drafted = 0

    def __call__(self, input_ids, *args, **kwargs):
        out = self.inner(input_ids, *args, **kwargs)
        self.drafted += len(out)
        return out


@contextmanager
def _counting_evals(llm):
    """Count the Llama's batched forwards (`eval` calls): one per decode step or verify round."""
    calls = [0]
    inner = llm.eval

    def eval_counted(tokens):
        calls[0] += 1
        return inner(tokens)

    llm.eval = eval_counted   # an instance attribute: generate() calls self.eval
    try:
        yield calls
    finally:
        del llm.eval


def sampling_kwargs(sampling: SamplingConfig) -> dict:
    """specviz's sampling as llama-cpp-python's `generate` arguments, with its own extras turned off.

    temp 0 is llama.cpp's greedy sampler; top_k 0 and top_p 1 are off on both sides;
    min_p (0.05 by default there) and the repeat penalty are switched off so that
    both sample from the same distribution.
    """
    if sampling.greedy:
        return dict(temp=0.0, top_k=0, top_p=1.0, min_p=0.0, typical_p=1.0, repeat_penalty=1.0)
    return dict(temp=float(sampling.temperature), top_k=int(sampling.top_k), top_p=float(sampling.top_p),
                min_p=0.0, typical_p=1.0, repeat_penalty=1.0)


def run_llamacpp(method: str, peer: LlamaCppPeer, ids: list[int], k: int | None, sampling: SamplingConfig,
                 max_new_tokens: int, seed: int) -> Run:
    """One timed generation by llama.cpp: `max_new_tokens` tokens after `ids`, EOS ignored."""
    if method not in PEER_METHODS:
        raise ValueError(f"not a llama.cpp method: {method!r}")
    lookup = method == "llamacpp_lookup"
    k = int(k) if lookup else None
    llm = peer.context(lookup, len(ids) + max_new_tokens + (k or 0) + 1)
    drafter = _CountingDrafter(_lookup_drafter(k)) if lookup else None
    if lookup:
        llm.draft_model = drafter
    llm.set_seed(int(seed))
    llm.reset()   # no KV reuse from the previous run: every run reads its prompt (prefill) in full
    with _counting_evals(llm) as evals:
        t0, stamps = _timed_tokens(llm.generate(list(ids), **sampling_kwargs(sampling)), max_new_tokens)
    return _as_run(method, k, t0, stamps, evals[0], drafter.drafted if drafter else 0)


def _timed_tokens(gen, max_new_tokens: int) -> tuple[float, list[tuple[float, int]]]:
    """(start, [(time of each emission, token id)]) for the first `max_new_tokens` tokens `gen` yields."""
    stamps: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    try:
        for token in gen:
            stamps.append((time.perf_counter(), int(token)))
            if len(stamps) >= max_new_tokens:
                break
    finally:
        gen.close()
    return t0, stamps


def _as_run(method: str, k: int | None, t0: float, stamps: list[tuple[float, int]], forwards: int,
            drafted: int) -> Run:
    """The bench's Run from the emission times: tokens/s after the first emission, as for every method."""
    if not stamps:
        return Run(method, k, [], seconds=0.0, first_emit_seconds=0.0, first_tokens=0, total_seconds=0.0)
    t_first, t_last = stamps[0][0], stamps[-1][0]
    n = len(stamps)
    rounds = max(1, forwards)   # the prefill emits the first token; each later forward one step or round
    run = Run(method, k, [t for _, t in stamps], seconds=t_last - t_first, first_emit_seconds=t_first - t0,
              first_tokens=1, total_seconds=t_last - t0, tau=n / rounds, rounds=rounds)
    if drafted:   # each verify round emits its accepted drafts and one token of its own
        run.acceptance_rate = min(1.0, max(0.0, (n - rounds) / drafted))
        run.lookup_share = 1.0
    return run
