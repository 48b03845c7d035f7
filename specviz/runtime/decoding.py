"""Helpers shared by every decoding loop: the speculative decoder and the target-alone baseline.

Both loops must agree on how a prompt becomes a tensor, how a cache is
prefilled, how EOS is recognised and how time is measured, or the baseline would
not be a fair reference. Nothing here knows about drafting or the rejection rule.
"""
from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from transformers import DynamicCache, StaticCache

from . import attention
from .attention import has_row_invariant_attention
from .graphs import failure_of, graph_set
from .report import Facts, RunReport
from .state import known_runtime, runtime_of
from .forwards import COMPILE_CHOICES, Forwards, compiled_unbound, resolve_forwards  # noqa: F401 - COMPILE_CHOICES and Forwards: re-exported
from ..limits import DECODER_MAX_NEW_TOKENS, LEAN_MAX_ROWS, PREFILL_CHUNK

StopCheck = Callable[[], bool]


class PrefillStopped(Exception):
    """The caller's stop check said stop before the first step: while the prompt was being read (between prefill
    chunks) or while the forwards were compiled and captured (between warm-up calls)."""


def as_id_tensor(input_ids: Sequence[int] | torch.Tensor, device) -> torch.Tensor:
    """A list of ints or a [1, T] / [T] tensor -> a 1-D int64 tensor on `device`."""
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    if ids.dim() == 2:
        if ids.shape[0] != 1:
            raise ValueError(f"only batch size 1 is supported, got input_ids of shape {tuple(ids.shape)}")
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError("input_ids must hold at least one token")
    return ids.to(device)


def input_device(model) -> torch.device:
    # With accelerate's device_map the embedding may sit on another device than model.device. A table kept in its
    # GGUF form (models.gguf_loader.GGUFEmbedding) says where it is without a dense weight.
    embedding = model.get_input_embeddings()
    return embedding.device if hasattr(embedding, "dense") else embedding.weight.device


def vocab_size(model) -> int:
    return model.config.get_text_config().vocab_size


def eos_ids(model, eos_token_id) -> list[int]:
    if eos_token_id is None:
        eos_token_id = getattr(model.generation_config, "eos_token_id", None)
    if eos_token_id is None:
        return []
    return [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)


def check_budget(max_new_tokens: int, limit: int = DECODER_MAX_NEW_TOKENS) -> None:
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= limit:
        raise ValueError(f"max_new_tokens must be a whole number in [1, {limit}], got {max_new_tokens!r}")


def make_generator(seed: int | None, device) -> torch.Generator:
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


class Timer:
    """Wall clock that waits for queued CUDA work, so per-phase times are honest."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __call__(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


@dataclass
class Run:
    """What every decoding loop sets up before its first step, built once by `start_run`."""

    tokens: torch.Tensor        # the prompt, 1-D, on the target's input device
    eos: set[int]               # token ids that end the output (empty with ignore_eos)
    generator: torch.Generator
    clock: Timer
    cache_options: dict         # static / max_len / compiled / backend (and the prefill's stop check) of every KVCache
    facts: Facts                # warmup_seconds / prefill_seconds / stopped ..., for the report the loop returns

    @property
    def compiled(self) -> bool:
        return self.cache_options["compiled"]

    def report(self) -> RunReport:
        """What the run measured and how it ended: the loop's return value."""
        return self.facts.report()

    def note_graph_failure(self, *models) -> None:
        """A failed CUDA-graph capture (the run then decodes eagerly): the report's `graphs_fallback`, for the status."""
        failure = failure_of(*(m for m in models if m is not None)) if self.compiled else None
        if failure:
            self.facts.note("graphs_fallback", failure)

    def stopped(self) -> bool:
        """Asked between rounds (the target alone: tokens): whether `stop()` says stop; if so, the run is marked."""
        stop = self.cache_options["stop"]
        return stop is not None and bool(stop()) and self.note_stopped()

    def note_stopped(self) -> bool:
        """The report's `stopped`: the one mark of a run that `stop()` cut (between rounds, or before any); True."""
        self.facts.note("stopped", True)
        return True

    @contextmanager
    def timed(self, name: str, when: bool = True):
        """The block's wall time as the report's `name` (when `when` holds and the block ran to its end)."""
        start = self.clock()
        yield
        if when:
            self.facts.note(name, self.clock() - start)


def start_run(target, input_ids, options, room: int) -> Run:
    """Check the budget and set up a run; caches hold the prompt, the budget and `room` positions more.

    `options` is a specviz.engine.options.DecodeOptions (read by name: the runtime imports nothing above it).
    Its `stop` (a callable, e.g. an Event's is_set) makes every prefill of the run read the prompt in chunks and
    raise `PrefillStopped` between them once it returns True. The target is read as it was prepared at load
    (runtime.setup.prepare: with the row-invariant attention, greedy output is bit-identical to the target alone
    wherever its products are row-invariant); nothing here changes it."""
    max_new_tokens, stop = options.max_new_tokens, options.stop
    check_budget(max_new_tokens)
    device = input_device(target)
    tokens = as_id_tensor(input_ids, device)
    eos = set() if options.ignore_eos else set(eos_ids(target, options.eos_token_id))
    generator = make_generator(options.seed, device)
    clock = Timer(device)
    forwards = resolve_forwards(options.compile, device, options.static_cache)
    cache_options = dict(static=forwards.static, max_len=len(tokens) + max_new_tokens + room,
                         compiled=forwards.compiled, backend=forwards.backend, stop=stop)
    return Run(tokens, eos, generator, clock, cache_options, Facts(options.on_event))


class KVCache:
    """A transformers cache with its length kept on the host.

    Reading a static cache's length back from the device would cost a host
    sync per forward; the decoder always knows how many tokens it fed, so the
    length lives here. `static=True` preallocates `max_len` positions
    (transformers' StaticCache): a rollback then only moves the position, and
    with `compiled=True` the one- and (K+1)-token forwards are replayed: through
    `torch.compile(mode="reduce-overhead")` (backend "inductor"), or captured
    as CUDA graphs without it (backend "graphs", specviz.runtime.graphs; "buffers" runs
    the graphs' fixed buffers without capture).
    """

    def __init__(self, model, static: bool = False, max_len: int = 0, compiled: bool = False,
                 backend: str = "inductor"):
        if compiled and not static:
            raise ValueError("compiled forwards need a static cache")
        self.static, self.compiled, self.backend, self.length = static, compiled, backend, 0
        if not static:
            self.cache = DynamicCache()
        elif compiled and backend != "buffers":
            self.cache = _shared_static_cache(model, max_len)  # graphs replay on fixed addresses
        else:
            self.cache = StaticCache(config=model.config, max_cache_len=max_len)

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, n: int) -> None:
        """Forget the last -n positions (n < 0, transformers 5's convention)."""
        self.cache.crop(n)
        self.length += n


def _shared_static_cache(model, max_len: int) -> StaticCache:
    """One static cache per model and process, grown when needed and reset between runs."""
    # The length is kept beside the cache: transformers versions name it differently (or not at all).
    runtime = runtime_of(model)
    held, held_len = runtime.static_cache or (None, 0)
    if held is None or held_len < max_len:
        held_len = max(max_len, 256)
        held = StaticCache(config=model.config, max_cache_len=held_len)
        runtime.static_cache = (held, held_len)
    else:
        held.reset()
    return held


def compiled_forward(model):
    """`model.forward` compiled once per model and process; one CUDA graph per input shape."""
    runtime = runtime_of(model)
    if runtime.compiled is None:
        runtime.compiled = compiled_unbound(model)
    return functools.partial(runtime.compiled, model)


_lean_off = threading.local()   # `transformers_forwards()`: this thread's forwards through transformers' modules


@contextmanager
def transformers_forwards():
    """This thread's forwards go through transformers' modules, never the lean stack (the row-invariance harness
    compares every module's rows; it checks the lean stack's logits against them apart)."""
    _lean_off.on = True
    try:
        yield
    finally:
        _lean_off.on = False


def lean_available(model) -> bool:
    """Whether a few-position forward of `model` on a dynamic cache takes the lean stack."""
    return _lean_stack(model) is not None


def _lean_stack(model):
    """The lean stack prepared for `model` at load (runtime.setup.prepare) while it still serves it (its layers
    and dtype unchanged since); read, never built here."""
    if getattr(_lean_off, "on", False) or not has_row_invariant_attention(model) or attention.kernel() is None:
        return None
    stack = known_runtime(model).lean
    return stack if stack is not None and stack.serves(model) else None


def _lean(model, ids: torch.Tensor, cache, eager: bool):
    """The lean stack for this forward where it computes exactly what transformers' forward would: a batch of one
    on a dynamic cache, a few new positions, the row-invariant attention on specviz's kernel; else None."""
    if (eager or not isinstance(cache, KVCache) or cache.static or ids.shape[0] != 1 or ids.shape[1] > LEAN_MAX_ROWS
            or ids.device.type != "cpu"):
        return None
    return _lean_stack(model)


def forward_logits(model, ids: torch.Tensor, cache, keep: int, eager: bool = False) -> torch.Tensor:
    """Feed `ids` ([T] or [B, T]) after what `cache` holds; logits of the last `keep` positions.

    A 1-D `ids` gives [keep, V] (the decoder's batch of one); a 2-D one gives [B, keep, V].
    `cache` is a KVCache, a bare transformers cache, or None (no cache). `eager`
    keeps a compiled cache's forward uncompiled (the prefill: one graph per prompt
    length would be wasted).
    """
    batched = ids.dim() == 2
    ids = (ids if batched else ids[None]).to(input_device(model))
    if isinstance(cache, KVCache) and cache.compiled and cache.backend != "inductor" and not eager:
        logits = _replayed(model, cache, ids, keep, hidden=False)
        return logits if batched else logits[0]
    lean = _lean(model, ids, cache, eager)
    if lean is not None:
        logits = model.get_output_embeddings()(lean(ids[0], cache, keep))
        return logits[None] if batched else logits
    if isinstance(cache, KVCache):
        start, n = cache.length, ids.shape[1]
        position = torch.arange(start, start + n, device=ids.device)
        forward = compiled_forward(model) if cache.compiled and not eager else model
        out = forward(input_ids=ids, cache=cache.cache, use_cache=True, logits_to_keep=keep,
                      cache_position=position)
        cache.length += n
    else:
        out = model(input_ids=ids, cache=cache, use_cache=cache is not None, logits_to_keep=keep)
    return out.logits if batched else out.logits[0]


def lean_masked_logits(model, ids: torch.Tensor, cache, positions: torch.Tensor, allowed: torch.Tensor,
                       keep: int) -> torch.Tensor | None:
    """masked.forward_masked's logits [1, keep, V] through the lean stack where it takes the forward, else None."""
    lean = _lean(model, ids, cache, False)
    if lean is None:
        return None
    return model.get_output_embeddings()(lean(ids[0].to(input_device(model)), cache, keep, positions, allowed))[None]


def forward_hidden(model, ids: torch.Tensor, cache, keep: int, eager: bool = False) -> torch.Tensor:
    """`forward_logits` without the output layer: final hidden states [B, keep, H] (or [keep, H]).

    The base model (`get_decoder()`) ends with the final norm for Qwen2 and
    Llama, so a head applied to these states gives the model's logits; a trimmed
    draft vocabulary (specviz.engine.vocab_trim) multiplies them by its subset rows only.
    """
    batched = ids.dim() == 2
    ids = (ids if batched else ids[None]).to(input_device(model))
    base = model.get_decoder()
    if isinstance(cache, KVCache) and cache.compiled and cache.backend != "inductor" and not eager:
        hidden = _replayed(model, cache, ids, keep, hidden=True)
        return hidden if batched else hidden[0]
    lean = _lean(model, ids, cache, eager)
    if lean is not None:
        hidden = lean(ids[0], cache, keep)
        return hidden[None] if batched else hidden
    if isinstance(cache, KVCache):
        start, n = cache.length, ids.shape[1]
        position = torch.arange(start, start + n, device=ids.device)
        forward = _compiled_base(model) if cache.compiled and not eager else base
        out = forward(input_ids=ids, cache=cache.cache, use_cache=True, cache_position=position)
        cache.length += n
    else:
        out = base(input_ids=ids, cache=cache, use_cache=cache is not None)
    hidden = out.last_hidden_state[:, -keep:]
    return hidden if batched else hidden[0]


def _replayed(model, cache: KVCache, ids: torch.Tensor, keep: int, hidden: bool) -> torch.Tensor:
    """A forward through the model's graphs (specviz.runtime.graphs), captured on first use of its shape unless "buffers"."""
    out = graph_set(model, cache.cache, hidden, capture=cache.backend == "graphs").forward(ids, cache.length, keep)
    cache.length += ids.shape[1]
    return out


def _compiled_base(model):
    """The base model's forward compiled once per model, as `compiled_forward` does for the whole model."""
    runtime = runtime_of(model)
    if runtime.compiled_base is None:
        runtime.compiled_base = compiled_unbound(model.get_decoder())
    return functools.partial(runtime.compiled_base, model.get_decoder())


def prefill(model, tokens: torch.Tensor, static: bool = False, max_len: int = 0,
            compiled: bool = False, backend: str = "inductor",
            stop: StopCheck | None = None) -> KVCache:
    """A cache holding all of `tokens` but the last, which the first step reads.

    Without `stop`, one forward. With it, `PREFILL_CHUNK` positions per forward and `stop()` asked before each, so a
    long prompt on a slow machine can be abandoned within one chunk (raises `PrefillStopped`); the chunks fill the
    same cache positions, so the result is the same up to float rounding.
    """
    cache = KVCache(model, static, max_len, compiled, backend)
    body = tokens[..., :-1]
    n = body.shape[-1]
    step = n if stop is None else PREFILL_CHUNK
    for start in range(0, n, max(1, step)):
        if stop is not None and stop():
            raise PrefillStopped()
        forward_logits(model, body[..., start:start + step], cache, 1, eager=True)
    return cache


def resolve_compile(compile: str, device, static_cache: bool | None = None) -> tuple[bool, bool]:
    """(static cache, replayed forwards) for `compile`, as `resolve_forwards` decides them."""
    forwards = resolve_forwards(compile, device, static_cache)
    return forwards.static, forwards.compiled


def crop_to(cache, length: int) -> None:
    """Drop cached positions beyond `length` (transformers 5's crop takes a negative count)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def warm_up(model, lengths: list[int], max_len: int, verify: bool, hidden: bool = False,
            backend: str = "inductor", stop: StopCheck | None = None) -> None:
    """Compile and capture every forward shape a run will use, before any timed work.

    Verifies keep the logits of all their positions, draft steps only the last.
    Three calls per shape: compile, record the CUDA graph, replay it once (the
    "graphs" backend captures on the first and replays on the next two).
    `hidden=True` warms `forward_hidden` instead (a trimmed draft head).
    `stop()` is asked before every call, as the prefill asks it between chunks: once True, `PrefillStopped`
    (one compile of one shape is the longest a Stop waits; a warm-up of every shape took minutes on a CPU).
    """
    cache = KVCache(model, static=True, max_len=max_len, compiled=True, backend=backend)
    ids = torch.zeros(1, max(lengths), dtype=torch.long, device=input_device(model))
    forward = forward_hidden if hidden else forward_logits
    for n in lengths:
        for _ in range(3):
            if stop is not None and stop():
                raise PrefillStopped()
            forward(model, ids[:, :n], cache, n if verify else 1)
            cache.crop(-n)
