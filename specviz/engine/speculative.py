"""The speculative decoder: draft, verify with one target forward, accept/reject; a chain or a tree, one loop.

Invariant between rounds: `tokens` holds the prompt and everything emitted;
each model's KV cache covers a prefix of `tokens` that excludes at least the
last token, so the next forward always has at least one new token to read.

One round (Leviathan et al. 2023; notation and round structure in docs/design.md):
  1. the drafter proposes x_1..x_K with the q_1..q_K they were drawn from (a tree: N nodes and its shape);
  2. the target reads [pending tokens, x_1..x_K] in ONE forward and gives p_1..p_{K+1};
  3. the rule (specviz.engine.rule.verify) accepts x_i iff u_i < min(1, p_i(x_i) / q_i(x_i)) up to the
     first rejection j, then draws the correction from max(0, p_j - q_j) normalised, or
     the bonus from p_{K+1} if all K passed (a tree: the same rule walked down its branches);
  4. both sides keep the accepted path and forget the rest (`commit`).
Every proposal has a shape, and a chain is the width-one tree: its shape picks the verify forward (a chain's
causal forward with no mask, static caches and CUDA graphs; a tree's mask) and the rule's fast path.
Everything stays on the device until one batched transfer per round.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from ..runtime.decoding import KVCache, PrefillStopped, Run, forward_logits, prefill, start_run, warm_up
from ..runtime.masked import forward_masked, verify_mask, verify_positions
from ..runtime.report import RunReport
from .drafters import Drafter, make_drafter, shared_vocab
from .options import DecodeOptions
from .proposal import Proposal
from . import rule
from .rule import Settled, Verdict, settle
from .sampling import SamplingConfig, probabilities
from .tree import commit


@dataclass
class RoundTensors:
    """What one round computed for B rows, still on the device (the decoder's B is 1); a tree's rows of p_logits
    and P are the root's, then one after each node."""

    proposal: Proposal
    p_logits: torch.Tensor   # [B, K+1, V] the target's raw logits (confidence display)
    P: torch.Tensor          # [B, K+1, V] p after the sampling transform
    verdict: Verdict

    def first_row(self) -> tuple[list[int], list[int], int, int]:
        """(accepted path's node ids, drafts shown, accepted count, next token) of row 0, in one transfer: the
        decoder's host sync. A chain shows all its drafts (those after a rejection too, discarded); a tree shows
        the path's tokens and, after a rejection, the first child rejected at its end."""
        v, shape = self.verdict, self.proposal.shape
        m, y, *rest = torch.cat([v.n_accepted[:1], v.next_token[:1], v.path[0], self.proposal.ids[0]]).tolist()
        path, ids = rest[:m], rest[v.path.shape[1]:]
        if shape.is_chain():
            return path, ids, m, y
        shown = [ids[node] for node in path]
        stop = shape.children[path[-1] + 1 if path else 0]
        if stop:   # the walk stopped at a node with children: all of them were rejected
            shown.append(ids[stop[0]])
        return path, shown, m, y


@dataclass
class Decided:
    """What one round decided, for whoever records it (specviz.trace.recording turns it into a `Round`): its
    tensors, its outcome on the host, and the clock's readings at its start, after drafting, after verifying."""

    index: int
    tensors: RoundTensors
    outcome: Settled
    marks: tuple[float, float, float]


@dataclass
class Sides:
    """What a round reads besides the sequence: the target and its cache (None: every round reads its rows
    afresh), the drafter, and the vocabulary both sides score."""

    target: Any
    cache: KVCache | None
    drafter: Drafter
    vocab: int


def decode_round(sides: Sides, tokens: torch.Tensor, depth: int, sampling: SamplingConfig,
                 generator: torch.Generator | None, clock=None) -> tuple[RoundTensors, float | None]:
    """One draft/verify step for B rows of equal length `tokens` [B, T], all on the device, chain or tree.

    The drafter proposes at most `depth` deep; the proposal's shape picks the verify forward and the rule.
    A cache-free `Sides` lets the statistical tests run thousands of rows through one call. Returns the round's
    tensors and, given a `clock`, the time at which drafting ended.
    """
    proposal = sides.drafter.propose(tokens, depth, sampling, generator)
    t_drafted = clock() if clock else None
    p_logits = verify_forward(sides, tokens, proposal)[..., :sides.vocab].to(tokens.device)   # [B, K+1, V]
    P = probabilities(p_logits, sampling)
    verdict = rule.verify(P, proposal, generator, sampling.greedy)
    return RoundTensors(proposal, p_logits, P, verdict), t_drafted


def verify_forward(sides: Sides, tokens: torch.Tensor, proposal: Proposal) -> torch.Tensor:
    """The target's logits after the last pending token and after each draft, from ONE forward over both.

    A chain reads causally (no mask to build: the static cache's and the graphs' path); a tree's nodes sit at the
    last position + their depth under the tree mask (specviz.runtime.masked)."""
    seen = sides.cache.get_seq_length() if sides.cache is not None else 0
    pending = tokens[:, seen:]
    target_in = torch.cat([pending, proposal.ids], dim=1)
    shape = proposal.shape
    if shape.is_chain():
        return forward_logits(sides.target, target_in, sides.cache, proposal.ids.shape[1] + 1)
    return forward_masked(sides.target, target_in, sides.cache, verify_positions(shape.depths, seen, pending.shape[1]),
                          verify_mask(shape.ancestry, seen, pending.shape[1]), shape.size + 1)


@dataclass
class Started:
    """A run set up and prefilled: what its rounds read. `name` is its drafting method as a Round records it
    ("model", "ngram", ..., "tree"); `most` the deepest draft a round may ask for; `trees`: the run drafts trees
    (every round is recorded node by node, a round whose tree came out a chain too)."""

    run: Run
    sides: Sides
    name: str
    most: int
    trees: bool = False


def start(target, draft, input_ids, options: DecodeOptions) -> Started | RunReport:
    """Set a run up: drafter, warm-up, prefill; once stopped, instead, the run's report (marked `stopped`).

    `draft` is a draft model or any `Drafter`; `options.drafting` is a `Chain` (k, the drafter kind: "model",
    "ngram" (prompt lookup; `draft` may be None), "hybrid" or "trimmed", an adaptive threshold) or a `Tree`
    (a shape or "dynamic:N", costs; dynamic caches only). specviz.generate.speculative_generate runs and records it.
    """
    tree = options.tree
    if tree:
        refuse_tree(draft, options)
        options = dataclasses.replace(options, compile="off", static_cache=False)
    most = None if tree else options.drafting.depth   # a hybrid's lookup rounds may go past k
    # Room for the prompt, the budget, and drafts that run past it before being cut.
    run = start_run(target, input_ids, options, room=2 if tree else most + 2)
    vocab = shared_vocab(target, draft)
    try:   # Stop during the warm-up or the prefill: no round, and no more compiling
        with run.timed("warmup_seconds", when=run.compiled):   # a compiled drafter captures its graphs as it is built
            # A trimmed head is cut from the output layer and packed here, once a process (~2 s for the packaged
            # draft): set-up like the prefill, reported apart so no rate counts it.
            with run.timed("drafter_seconds", when=not run.compiled):
                drafter = _drafter(draft, vocab, run, options)
            if run.compiled:
                warm_up(target, [j + 1 for j in range(most + 1)], run.cache_options["max_len"], verify=True,
                        backend=run.cache_options["backend"], stop=options.stop)
        run.note_graph_failure(target, draft)
        with run.timed("prefill_seconds"):
            target_cache = prefill(target, run.tokens[None], **run.cache_options)
            drafter.begin(run.tokens[None])
    except PrefillStopped:
        run.note_stopped()
        return run.report()
    name = "tree" if tree else getattr(drafter, "name", "custom")
    return Started(run, Sides(target, target_cache, drafter, vocab), name, drafter.max_depth if tree else most, tree)


def refuse_tree(draft, options: DecodeOptions) -> None:
    """A tree needs a draft model and runs on dynamic caches, eagerly: anything else is refused in words, never
    run some other way than asked."""
    if draft is None or hasattr(draft, "propose"):
        raise ValueError("a tree is drafted by a draft model (drafter='model', no adaptive_threshold)")
    if options.compile in ("on", "graphs") or options.static_cache:
        raise ValueError(f"a draft tree runs on dynamic caches without compiled forwards or CUDA graphs (its "
                         f"attention mask changes every round), so compile={options.compile!r} with "
                         f"static_cache={options.static_cache!r} cannot run it: use compile='off' (or 'auto') "
                         f"without static_cache")


def _drafter(draft, vocab: int, run: Run, options: DecodeOptions) -> Drafter:
    """The run's drafter, chain or tree (a compiled one captures its graphs here)."""
    return make_drafter(options.drafting, draft, vocab, eos_ids=run.eos, cache_options=run.cache_options,
                        tokenizer=options.tokenizer)


def rounds(started: Started, options: DecodeOptions) -> Iterator[Decided]:
    """The decoding loop, chains and trees alike: draft, verify, settle, keep the accepted path, yield what the
    round decided; it ends at EOS, at the budget, or between rounds once `options.stop()` says so
    (the report's `stopped`: `Run.stopped`)."""
    run, sides = started.run, started.sides
    tokens, clock, produced, budget = run.tokens, run.clock, 0, options.max_new_tokens
    for index in itertools.count():
        began, n = clock(), len(tokens)
        depth = min(started.most, budget - produced - 1)   # never draft past the budget: the drafts + 1 token fit
        state, drafted_at = decode_round(sides, tokens[None], depth, options.sampling, run.generator, clock)
        path, shown, m, y = state.first_row()      # the round's one host sync
        outcome = settle(shown, m, y, run.eos)
        verified_at = clock()
        tokens = torch.cat([tokens, torch.tensor(outcome.emitted, device=tokens.device)])
        commit(sides.cache, n, path)   # keys only for the prefix and the accepted path;
        sides.drafter.commit(path)     # the newest token stays pending for the next round
        produced += len(outcome.emitted)
        yield Decided(index, state, outcome, (began, drafted_at, verified_at))
        if outcome.eos or produced >= budget or run.stopped():   # Stop is asked only where a round would follow
            return
