"""The speculative decoder: draft K, verify with one target forward, accept/reject.

Invariant between rounds: `tokens` holds the prompt and everything emitted;
each model's KV cache covers a prefix of `tokens` that excludes at least the
last token, so the next forward always has at least one new token to read.

One round (Leviathan et al. 2023; notation and round structure in docs/design.md):
  1. the drafter proposes x_1..x_K with the q_1..q_K they were drawn from;
  2. the target reads [pending tokens, x_1..x_K] in ONE forward and gives p_1..p_{K+1};
  3. the rule (specviz.rule) accepts x_i iff u_i < min(1, p_i(x_i) / q_i(x_i)) up to the
     first rejection j, then draws the correction from max(0, p_j - q_j) normalised, or
     the bonus from p_{K+1} if all K passed;
  4. both sides forget what they read beyond the accepted prefix.
Everything stays on the device until one batched transfer per round.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from .decoding import (Timer, as_id_tensor, check_budget, crop_to, eos_ids, forward_logits, input_device,
                       make_generator, prefill, resolve_compile, vocab_size, warm_up)
from .drafters import Drafter, as_drafter, make_drafter
from .limits import MAX_K
from .recording import RoundRecorder, RoundTensors
from .rule import verify
from .sampling import SamplingConfig, probabilities
from .trace import Round


def speculative_round(target, target_cache, drafter: Drafter, tokens: torch.Tensor, k: int,
                      sampling: SamplingConfig, generator: torch.Generator | None, vocab: int,
                      clock=None) -> tuple[RoundTensors, float | None]:
    """One draft/verify step for B rows of equal length `tokens` [B, T], all on the device.

    `target_cache=None` reads the whole sequence afresh (the statistical tests run
    thousands of rows through one call this way). Returns the round's tensors and,
    given a `clock`, the time at which drafting ended.
    """
    proposal = drafter.propose(tokens, k, sampling, generator)
    t_drafted = clock() if clock else None
    seen = target_cache.get_seq_length() if target_cache is not None else 0
    target_in = torch.cat([tokens[:, seen:], proposal.ids], dim=1)
    k_drafted = proposal.ids.shape[1]
    p_logits = forward_logits(target, target_in, target_cache, k_drafted + 1)[..., :vocab].to(tokens.device)
    P = probabilities(p_logits, sampling)                                      # [B, K+1, V]
    verdict = verify(P, proposal.q, proposal.ids, generator, sampling.greedy, proposal.n_drafted)
    return RoundTensors(proposal, p_logits, P, verdict), t_drafted


def _cut_at_eos(emitted: list[int], eos: set[int]) -> tuple[list[int], bool]:
    for i, t in enumerate(emitted):
        if t in eos:
            return emitted[: i + 1], True
    return emitted, False


@torch.inference_mode()
def speculative_generate(
    target,
    draft,
    input_ids: Sequence[int] | torch.Tensor,
    k: int = 4,
    sampling: SamplingConfig = SamplingConfig(),
    max_new_tokens: int = 64,
    seed: int | None = 0,
    *,
    tokenizer=None,
    eos_token_id: int | list[int] | None = None,
    ignore_eos: bool = False,
    record: bool = True,
    stats: dict | None = None,
    adaptive_threshold: float | None = None,
    method: str = "model",
    compile: str = "auto",
    static_cache: bool | None = None,
) -> Iterator[Round]:
    """Yield one `Round` per draft/verify step until `max_new_tokens` or EOS.

    `draft` is a draft model or any `Drafter`. `method` picks how a draft model is
    used: "model" (it drafts every token), "ngram" (prompt lookup; `draft` may be
    None) or "hybrid" (prompt lookup when its match is long enough, else the model).
    `adaptive_threshold=t` stops drafting a round early once the draft model's
    confidence in its token falls below t: K is then a maximum (still exact).
    `record=False` skips the per-token trace (texts, top-5 lists, confidences);
    the emitted tokens, verdicts and timings are still there. `compile` =
    "auto" | "on" | "off": static KV caches and CUDA-graph forwards ("auto": on
    CUDA only); `static_cache=True` runs the static cache without graphs. `stats`,
    if given, receives `prefill_seconds` (and `warmup_seconds` when compiling).
    """
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be a whole number in [1, {MAX_K}], got {k!r}")
    check_budget(max_new_tokens)
    device = input_device(target)
    tokens = as_id_tensor(input_ids, device)
    eos = set() if ignore_eos else set(eos_ids(target, eos_token_id))
    gen = make_generator(seed, device)
    clock = Timer(device)
    # The two models may pad their vocabularies differently; real tokens live in the common prefix.
    vocab = vocab_size(target) if not hasattr(draft, "config") else min(vocab_size(target), vocab_size(draft))
    static, compiled = resolve_compile(compile, device, static_cache)
    # Room for the prompt, the budget, and drafts that run past it before being cut.
    cache_options = dict(static=static, max_len=len(tokens) + max_new_tokens + k + 2, compiled=compiled)
    t_warm = clock()   # a trimmed drafter captures its own graphs when it is built
    if method == "model":
        drafter = as_drafter(draft, vocab, adaptive_threshold, cache_options)
    else:
        drafter = make_drafter(method, draft, vocab, adaptive_threshold=adaptive_threshold, eos_ids=eos,
                               cache_options=cache_options, tokenizer=tokenizer)
    recorder = RoundRecorder(tokenizer, sampling, record)
    if compiled:
        warm_up(target, [j + 1 for j in range(k + 1)], cache_options["max_len"], verify=True)
        if hasattr(draft, "config"):
            warm_up(draft, [1, 2], cache_options["max_len"], verify=False)
        if stats is not None:
            stats["warmup_seconds"] = clock() - t_warm

    t0 = clock()
    target_cache = prefill(target, tokens[None], **cache_options)
    drafter.begin(tokens[None])
    if stats is not None:
        stats["prefill_seconds"] = clock() - t0

    produced = round_index = 0
    while produced < max_new_tokens:
        t_start = clock()
        n = len(tokens)
        # Never draft past the budget: K accepted drafts + 1 bonus must fit.
        k_round = min(k, max_new_tokens - produced - 1)
        state, t_drafted = speculative_round(target, target_cache, drafter, tokens[None], k_round, sampling,
                                             gen, vocab, clock)
        # The one host sync of the round: how many were accepted, and the next token.
        verdict, drafted = state.verdict, state.proposal.ids[0]
        m, y, *draft_ids = torch.cat([verdict.n_accepted[:1], verdict.next_token[:1], drafted]).tolist()
        t_verified = clock()

        emitted, hit_eos = _cut_at_eos(draft_ids[:m] + [y], eos)
        used_all = len(emitted) == m + 1  # False when EOS cut the round inside the accepted drafts
        tokens = torch.cat([tokens, torch.tensor(emitted, device=device)])
        crop_to(target_cache, n + m)       # keep keys only for the accepted prefix;
        drafter.rollback(n + m)            # the newest token stays pending for the next round
        produced += len(emitted)

        k_drafted = len(draft_ids)
        rnd = Round(index=round_index, drafted=[], rejected_at=m if m < k_drafted and used_all else None,
                    correction=None, bonus=None, emitted=emitted, draft_seconds=t_drafted - t_start,
                    verify_seconds=t_verified - t_drafted, eos=hit_eos, drafter=getattr(drafter, "name", "custom"))
        recorder.fill(rnd, state, m, draft_ids[:k_drafted if used_all else len(emitted)], used_all)
        rnd.seconds = clock() - t_start
        yield rnd
        round_index += 1
        if hit_eos:
            return
