"""The drafters behind the one seam of specviz.engine.proposal, and the one factory that builds any of them.

A draft model's chain or tree (`ModelDrafter`, specviz.engine.model_drafter: a chain is its width-one tree, its
vocabulary optionally trimmed), prompt lookup (`PromptLookupDrafter`), and the hybrid of lookup over a model
drafter (`HybridDrafter`). `make_drafter` reads a run's `Chain` or `Tree` and returns the drafter it names.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..runtime.decoding import crop_to, vocab_size
from .model_drafter import ModelDrafter
from .options import Chain, Tree
from .proposal import Drafter, Proposal
from . import vocab_trim
from .tree_drafter import tree_plan


def is_drafter(draft) -> bool:
    """Anything with the three methods of `Drafter` is one (the protocol is structural)."""
    return all(hasattr(draft, name) for name in ("begin", "propose", "commit"))


def shared_vocab(target, draft) -> int:
    """The vocabulary both sides score: two models may pad theirs differently, real tokens live in the common prefix."""
    if draft is None or is_drafter(draft):
        return vocab_size(target)
    return min(vocab_size(target), vocab_size(draft))


# ---------------------------------------------------------------- prompt lookup (n-gram)
def lookup_continuation(seq: torch.Tensor, k: int, max_ngram: int = 3, min_ngram: int = 1,
                        eos: frozenset = frozenset()) -> tuple[list[int], int]:
    """(continuation, n): the tokens that followed the most recent earlier occurrence of the
    sequence's last n tokens, n tried from max_ngram down to min_ngram; ([], 0) without a match.

    The continuation stops at k tokens, at the end of the sequence, and after an EOS token.
    """
    T = seq.shape[0]
    for n in range(min(max_ngram, T - 1), min_ngram - 1, -1):
        windows = seq[: T - 1].unfold(0, n, 1)                       # every earlier n-gram, by start
        starts = (windows == seq[T - n:]).all(-1).nonzero().flatten()
        if starts.numel():
            begin = int(starts[-1]) + n                               # the most recent match
            cont = seq[begin: begin + k].tolist()
            for i, t in enumerate(cont):
                if t in eos:
                    return cont[: i + 1], n
            return cont, n
    return [], 0


@dataclass
class Lookups:
    """Prompt-lookup continuations of B rows: ids [B, W] (zero-padded), lengths [B], matched n-gram [B]."""

    ids: torch.Tensor
    lengths: torch.Tensor
    ngram: torch.Tensor


def lookup_rows(tokens: torch.Tensor, k: int, max_ngram: int, min_ngram: int, eos: frozenset) -> Lookups:
    """`lookup_continuation` for every row of `tokens` [B, T]; identical rows are looked up once
    (batched sampling repeats one history thousands of times)."""
    uniq, inverse = torch.unique(tokens, dim=0, return_inverse=True)
    found = [lookup_continuation(row, k, max_ngram, min_ngram, eos) for row in uniq]
    ids = torch.zeros(len(found), max((len(c) for c, _ in found), default=0), dtype=torch.long)
    for u, (cont, _) in enumerate(found):
        ids[u, : len(cont)] = torch.tensor(cont, dtype=torch.long)
    lengths = torch.tensor([len(c) for c, _ in found])
    ngram = torch.tensor([n for _, n in found])
    inverse = inverse.cpu()
    return Lookups(*(x[inverse].to(tokens.device) for x in (ids, lengths, ngram)))


def one_hot_proposal(ids: torch.Tensor, lengths: torch.Tensor, vocab: int) -> Proposal:
    """Deterministic proposals as a Proposal: q is one-hot; rows of unequal length are masked by length."""
    uneven = bool((lengths != lengths[0]).any()) if len(lengths) > 1 else False
    return Proposal(ids, torch.nn.functional.one_hot(ids, vocab).float(), None, lengths if uneven else None,
                    source="ngram")


class PromptLookupDrafter:
    """Proposes what followed the last n-gram earlier in the prompt or the output (no model, no cache).

    Deterministic, so q is one-hot: a drafted x is accepted with probability p(x), and
    after a rejection the correction comes from p with x removed, renormalised: the
    general rule with a one-hot q, exact like any other.
    """

    name = "ngram"

    def __init__(self, vocab: int, max_ngram: int = 3, min_ngram: int = 1, eos_ids=()):
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.vocab, self.max_ngram, self.min_ngram, self.eos = vocab, max_ngram, min_ngram, frozenset(eos_ids)

    def begin(self, tokens):
        pass

    def commit(self, path):
        pass

    def lookup(self, tokens: torch.Tensor, k: int) -> Lookups:
        return lookup_rows(tokens, k, self.max_ngram, self.min_ngram, self.eos)

    def propose(self, tokens, k, sampling, generator) -> Proposal:
        found = self.lookup(tokens, k)
        return one_hot_proposal(found.ids, found.lengths, self.vocab)


@dataclass(frozen=True)
class LookupRule:
    """When a hybrid drafter (`HybridDrafter`, over a chain or a tree) takes prompt lookup's continuation:
    the last `min_match`+ tokens occurred earlier and at least `min_tokens` followed them.

    The defaults (a match of at least 3 tokens, a continuation of at least 2) scored best when greedy runs of 60
    prompts outside the benchmark sets were replayed (scripts/hybrid_policy.py; a 2-token match came close), with
    the adaptive stop on the model rounds."""

    min_match: int = 3
    min_tokens: int = 2

    def takes(self, found: Lookups) -> torch.Tensor:
        """[B] bool: the rows whose lookup is long enough to draft the round."""
        return (found.ngram >= self.min_match) & (found.lengths >= self.min_tokens)


class HybridDrafter:
    """n-gram lookup when its match is long enough (`rule`, a LookupRule: no draft forwards that round), else the
    `inner` drafter: the draft model's chain (with a trimmed vocabulary: "hybrid_trimmed", the cheapest draft step
    on a long vocabulary), or its tree ("hybrid:N" grows EAGLE-2's dynamic tree, specviz.engine.tree_drafter).

    Each row's drafts come wholly from one source and carry the q that produced
    them, so the rule stays exact. The inner drafter's cache lags through lookup rounds and catches up when it
    next drafts.
    """

    def __init__(self, inner, lookup: PromptLookupDrafter, rule: LookupRule = LookupRule(),
                 model_k: int | None = None):
        self.model, self.lookup, self.rule = inner, lookup, rule
        trimmed = getattr(inner, "subset", None) is not None
        self.name = "hybrid_trimmed" if trimmed else "hybrid"   # what a chain's Round records
        self.model_k = model_k   # the most a model round drafts (None: all the round asks); lookup rounds get all
        self.prefix = 0   # the sequence's length at the last propose (the model may not have drafted that round)
        self.looked_up = False   # the last round's drafts came from the lookup for every row

    @property
    def max_depth(self) -> int:
        """The deepest draft the inner drafter proposes (a tree's; a chain's is the round's ask)."""
        return self.model.max_depth

    @property
    def drafts_chains(self) -> bool:
        """The inner drafter is the draft model's chain: rows drafted by it and by the lookup merge into one chain
        (a tree has one shape for every row)."""
        return isinstance(self.model, ModelDrafter) and self.model.chain

    def begin(self, tokens):
        self.model.begin(tokens)

    def commit(self, path):
        if self.looked_up:   # the inner drafter read nothing this round: its cache keeps at most the sequence
            crop_to(self.model.cache, self.prefix + len(path))
        else:
            self.model.commit(path)

    def propose(self, tokens, k, sampling, generator) -> Proposal:
        self.prefix = tokens.shape[1]
        found = self.lookup.lookup(tokens, k)
        use = self.rule.takes(found)
        self.looked_up = bool(use.all())
        if self.looked_up:
            return one_hot_proposal(found.ids, found.lengths, self.lookup.vocab)
        model_k = min(k, self.model_k or k)
        if not bool(use.any()) or not self.drafts_chains:   # a tree: one shape for every row
            return self.model.propose(tokens, model_k, sampling, generator)
        return self._merged(tokens, found, use, model_k, sampling, generator)

    def _merged(self, tokens, found: Lookups, use: torch.Tensor, model_k: int, sampling, generator) -> Proposal:
        """Mixed rows (batched sampling only): draft the model rows, then merge both kinds into one chain."""
        model_rows = (~use).nonzero().flatten()
        drafted = self.model.propose(tokens[model_rows], model_k, sampling, generator)
        kd = drafted.ids.shape[1]
        ids = torch.nn.functional.pad(found.ids, (0, max(0, kd - found.ids.shape[1])))
        ids[model_rows, :kd] = drafted.ids
        q = torch.nn.functional.one_hot(ids, self.lookup.vocab).float()   # columns past a row's length are masked
        q[model_rows, :kd] = drafted.q
        lengths = torch.where(use, found.lengths, 0)
        lengths[model_rows] = drafted.n_drafted if drafted.n_drafted is not None else kd
        return Proposal(ids, q, None, lengths)


DRAFTERS = ("model", "ngram", "hybrid", "trimmed", "hybrid_trimmed")


def make_drafter(how: Chain | Tree | str, draft, vocab: int, *, eos_ids=(), cache_options: dict | None = None,
                 trim_size: int | None = None, tokenizer=None, table=None) -> Drafter:
    """`draft` as a Drafter: a Drafter is used as it is; a draft model (or None) drafts as `how` says (a `Chain`,
    a `Tree`, or a chain drafter's name alone).

    A chain: "model" (the draft model), "ngram" (prompt lookup; `draft` may be None), "hybrid", "trimmed" (the
    draft model with its output layer cut to the `trim_size` most frequent tokens of `table`, by default
    the table shipped for the packaged Qwen2.5 tokenizer; `tokenizer`, when given, is checked against the
    table's fingerprint; a vocabulary of at most `trim_size` tokens is left whole), or "hybrid_trimmed" (the
    hybrid whose model rounds draft with that trimmed head). With compiled
    `cache_options` a model drafter captures its CUDA graphs as it is built. A tree: its shape, or "dynamic:N"
    (EAGLE-2's growth) or "hybrid:N" (prompt lookup, else that growth), drafted by the same model drafter
    (specviz.engine.tree_drafter.tree_plan reads the spelling).
    """
    if isinstance(how, Tree):
        if draft is None or is_drafter(draft):
            raise ValueError("a tree is drafted by a draft model (drafter='model', no adaptive_threshold)")
        tree, hybrid = tree_plan(how.shape, how.costs)
        inner = ModelDrafter(draft, vocab, tree=tree)
        # The lookup of a tree run stops at no EOS: as it always drafted (an EOS is still verified like any token).
        return HybridDrafter(inner, PromptLookupDrafter(vocab)) if hybrid else inner
    how = Chain(drafter=how) if isinstance(how, str) else how
    name, adaptive_threshold = how.drafter, how.adaptive_threshold
    if name not in DRAFTERS:
        raise ValueError(f"unknown drafter {name!r}; choose one of {', '.join(DRAFTERS)}")
    if is_drafter(draft):
        if adaptive_threshold is not None:
            raise ValueError("adaptive_threshold applies to a draft model; configure the drafter instead")
        if name != "model":
            raise ValueError(f"drafter {name!r} applies to a draft model; a Drafter is used as it is")
        return draft
    lookup = PromptLookupDrafter(vocab, eos_ids=eos_ids)
    if name == "ngram":
        if adaptive_threshold is not None:
            raise ValueError("adaptive_threshold applies to a draft model, not to the ngram drafter")
        return lookup
    if draft is None:
        raise ValueError(f"the {name} drafter needs a draft model")
    subset = (_trimmed_subset(draft, vocab, trim_size, tokenizer, table, eos_ids)
              if name in ("trimmed", "hybrid_trimmed") else None)
    model = ModelDrafter(draft, vocab, adaptive_threshold, cache_options, vocab_subset=subset)
    return model if name in ("model", "trimmed") else HybridDrafter(model, lookup, model_k=how.k)


def _trimmed_subset(draft_model, vocab: int, size: int | None, tokenizer, table, eos_ids) -> torch.Tensor | None:
    """The sorted subset of the "trimmed" drafter: the table checked against this pair, EOS always in.

    None (the full head) when the whole vocabulary fits in N: nothing to trim, no table needed.
    """
    size = size or vocab_trim.DEFAULT_SIZE
    if size >= vocab:
        return None
    table = table if isinstance(table, vocab_trim.VocabTable) else vocab_trim.load_table(
        table or vocab_trim.DEFAULT_TABLE)
    vocab_trim.check_model_vocab(table, vocab)
    if tokenizer is not None:
        vocab_trim.check_tokenizer(table, tokenizer)
    config_eos = getattr(getattr(draft_model, "generation_config", None), "eos_token_id", None)
    config_eos = [] if config_eos is None else [config_eos] if isinstance(config_eos, int) else list(config_eos)
    return vocab_trim.vocab_subset(table, size, [*eos_ids, *config_eos])
