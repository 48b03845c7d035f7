"""The speculative decoder: draft K, verify with one target forward, accept/reject.

Invariant between rounds: `tokens` holds the prompt and everything emitted;
each model's KV cache covers a prefix of `tokens` that excludes at least the
last token, so the next forward always has at least one new token to read.

One round (Leviathan et al. 2023; notation and round structure in docs/design.md):
  1. the drafter proposes x_1..x_K with the q_1..q_K they were drawn from;
  2. the target reads [pending tokens, x_1..x_K] in ONE forward and gives p_1..p_{K+1};
  3. the rule (specviz.engine.rule) accepts x_i iff u_i < min(1, p_i(x_i) / q_i(x_i)) up to the
     first rejection j, then draws the correction from max(0, p_j - q_j) normalised, or
     the bonus from p_{K+1} if all K passed;
  4. both sides forget what they read beyond the accepted prefix.
Everything stays on the device until one batched transfer per round.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterator, Sequence

import torch

from ..runtime.decoding import PrefillStopped, Run, crop_to, forward_logits, prefill, start_run, warm_up
from .drafters import Drafter, make_drafter, shared_vocab
from ..trace.recording import RoundRecorder, RoundTensors
from .options import DecodeOptions, decode_options
from .rule import settle, verify
from .sampling import SamplingConfig, probabilities
from ..trace.records import Round
from .tree import forward_masked, keep_path, verify_mask, verify_positions


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


def tree_round(target, target_cache, drafter, tokens: torch.Tensor, depth: int, sampling: SamplingConfig,
               generator: torch.Generator | None, vocab: int, clock=None):
    """`speculative_round` for a tree drafter: one target forward over the pending tokens and every node.

    The nodes follow the pending tokens, each at the last position + its depth,
    under the tree mask (specviz.engine.tree); the rule is specviz.engine.tree_rule's.
    """
    from ..trace.tree_recording import TreeRoundTensors
    from .tree_rule import verify_tree

    proposal = drafter.propose(tokens, depth, sampling, generator)
    t_drafted = clock() if clock else None
    shape, seen = proposal.shape, target_cache.get_seq_length() if target_cache is not None else 0
    pending = tokens[:, seen:]
    p_logits = forward_masked(target, torch.cat([pending, proposal.ids], 1), target_cache,
                              verify_positions(shape, seen, pending.shape[1]),
                              verify_mask(shape, seen, pending.shape[1]), shape.size + 1)
    p_logits = p_logits[..., :vocab].to(tokens.device)                         # [B, N+1, V]
    P = probabilities(p_logits, sampling)
    verdict = verify_tree(P, proposal.q, proposal.ids, shape, generator, sampling.greedy)
    return TreeRoundTensors(proposal, p_logits, P, verdict), t_drafted


@torch.inference_mode()
def speculative_generate(target, draft, input_ids: Sequence[int] | torch.Tensor, options: DecodeOptions | None = None,
                         **keywords) -> Iterator[Round]:
    """Yield one `Round` per draft/verify step until `options.max_new_tokens` or EOS.

    `draft` is a draft model or any `Drafter`; `options.drafting` is a `Chain` (k, the drafter kind: "model",
    "ngram" (prompt lookup; `draft` may be None), "hybrid" or "trimmed", an adaptive threshold) or a `Tree`
    (a shape or "dynamic:N", costs; dynamic caches only). Keywords build or amend the options, as the README's
    examples call it: `speculative_generate(target, draft, ids, k=4, max_new_tokens=64)` (`decode_options`).
    """
    options = decode_options(options, **keywords)
    if options.tree:
        yield from _tree_generate(target, draft, input_ids, options)
        return
    chain, stop = options.drafting, options.stop
    k = chain.k
    # Room for the prompt, the budget, and drafts that run past it before being cut.
    run = start_run(target, input_ids, options, room=k + 2)
    vocab = shared_vocab(target, draft)
    try:   # Stop during the warm-up or the prefill: no round, and no more compiling
        with run.timed("warmup_seconds", when=run.compiled):   # a compiled drafter captures its graphs as it is built
            drafting = make_drafter(chain.drafter, draft, vocab, adaptive_threshold=chain.adaptive_threshold,
                                    eos_ids=run.eos, cache_options=run.cache_options, tokenizer=options.tokenizer)
            if run.compiled:
                warm_up(target, [j + 1 for j in range(k + 1)], run.cache_options["max_len"], verify=True,
                        backend=run.cache_options["backend"], stop=stop)
        run.note_graph_failure(target, draft)
        with run.timed("prefill_seconds"):
            target_cache = prefill(target, run.tokens[None], **run.cache_options)
            drafting.begin(run.tokens[None])
    except PrefillStopped:
        return
    recorder = RoundRecorder(options.tokenizer, options.sampling, options.record, run.clock)
    yield from _rounds(run, target, target_cache, drafting, recorder, k, options.sampling, options.max_new_tokens,
                       vocab)


def _rounds(run: Run, target, target_cache, drafter: Drafter, recorder: RoundRecorder, k: int,
            sampling: SamplingConfig, max_new_tokens: int, vocab: int) -> Iterator[Round]:
    """The decoding loop: draft, verify, settle, keep the accepted prefix, record."""
    tokens, clock, name, produced = run.tokens, run.clock, getattr(drafter, "name", "custom"), 0
    for index in itertools.count():
        started, n = clock(), len(tokens)
        k_round = min(k, max_new_tokens - produced - 1)   # never draft past the budget: K drafts + 1 bonus fit
        state, drafted_at = speculative_round(target, target_cache, drafter, tokens[None], k_round, sampling,
                                              run.generator, vocab, clock)
        outcome = settle(*state.first_row(), run.eos)     # the round's one host sync
        verified_at = clock()
        tokens = torch.cat([tokens, torch.tensor(outcome.emitted, device=tokens.device)])
        crop_to(target_cache, n + outcome.n_accepted)    # keep keys only for the accepted prefix;
        drafter.rollback(n + outcome.n_accepted)         # the newest token stays pending for the next round
        produced += len(outcome.emitted)
        yield recorder.record(index, state, outcome, name, (started, drafted_at, verified_at))
        if outcome.eos or produced >= max_new_tokens:
            return


def _tree_generate(target, draft, input_ids, options: DecodeOptions) -> Iterator[Round]:
    """`speculative_generate` with a tree drafter: the same set-up on dynamic caches, then `_tree_rounds`."""
    from .tree_drafter import make_tree_drafter
    from ..trace.tree_recording import TreeRecorder

    if draft is None or hasattr(draft, "propose"):
        raise ValueError("a tree is drafted by a draft model (drafter='model', no adaptive_threshold)")
    if options.compile == "on" or options.static_cache:
        raise ValueError("draft trees run on dynamic caches: use compile='off' (or 'auto') without static_cache")
    run = start_run(target, input_ids, dataclasses.replace(options, compile="off", static_cache=False), room=2)
    vocab = shared_vocab(target, draft)
    drafting = make_tree_drafter(draft, vocab, options.drafting.shape, options.drafting.costs)
    try:
        with run.timed("prefill_seconds"):
            target_cache = prefill(target, run.tokens[None], stop=options.stop)
            drafting.begin(run.tokens[None])
    except PrefillStopped:
        return
    recorder = TreeRecorder(options.tokenizer, options.sampling, options.record, run.clock)
    yield from _tree_rounds(run, target, target_cache, drafting, recorder, options.sampling, options.max_new_tokens,
                            vocab)


def _tree_rounds(run: Run, target, target_cache, drafter, recorder, sampling: SamplingConfig, max_new_tokens: int,
                 vocab: int) -> Iterator[Round]:
    """The decoding loop of a tree: draft the tree, verify it in one forward, keep the accepted path."""
    tokens, clock, produced = run.tokens, run.clock, 0
    for index in itertools.count():
        started, n = clock(), len(tokens)
        depth = min(drafter.max_depth, max_new_tokens - produced - 1)   # K drafts + 1 bonus fit the budget
        if depth < 1:   # one token left: the target alone (a chain round with no drafts)
            state, drafted_at = speculative_round(target, target_cache, drafter, tokens[None], 0, sampling,
                                                  run.generator, vocab, clock)
            path, outcome = [], settle(*state.first_row(), run.eos)
        else:
            state, drafted_at = tree_round(target, target_cache, drafter, tokens[None], depth, sampling,
                                           run.generator, vocab, clock)
            path, shown, m, y = state.first_row()
            outcome = settle(shown, m, y, run.eos)
        verified_at = clock()
        tokens = torch.cat([tokens, torch.tensor(outcome.emitted, device=tokens.device)])
        keep_path(target_cache, n, [n + node for node in path])   # the prefix and the accepted path only
        drafter.keep(path)
        produced += len(outcome.emitted)
        yield recorder.record(index, state, outcome, (started, drafted_at, verified_at))
        if outcome.eos or produced >= max_new_tokens:
            return
