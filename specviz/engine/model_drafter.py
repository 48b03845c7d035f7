"""The one draft-model drafter: a tree a round, a chain being the width-one tree.

`ModelDrafter` drafts a `TreeShape` level by level: the round's first draft forward reads what its cache lacks,
then one forward per depth reads that depth's nodes that have children, and each node's children are drawn from the
draft's logits after it. A chain (no tree given: `TreeShape.chain(k)` for the round's k) is the width-one case of
that one loop, and keeps what only a chain can have: each of its nodes is read causally right behind its parent (a
static cache, CUDA graphs, a trimmed output layer) and drawn as a one-token step draws it (`sampling.draw`), and
the adaptive stop may end it early. A tree's nodes are read under the tree mask (each sees the prefix and its
ancestors) on a dynamic cache and drawn as siblings (specviz.engine.tree_drafter.draw_children). EAGLE-2's dynamic
tree is a growth policy the drafter consults each round (tree_drafter.DynamicTree), not another drafter.
"""
from __future__ import annotations

import torch

from ..limits import MAX_K
from ..runtime.decoding import KVCache, forward_hidden, forward_logits, input_device, prefill, warm_up
from ..runtime.masked import forward_masked, keep_path
from .proposal import Proposal
from .sampling import SamplingConfig, confidence, draw
from .tree import TreeShape
from .tree_drafter import DynamicTree, draw_children
from .vocab_trim import trimmed_head


class ModelDrafter:
    """A small causal LM drafts a tree a round from q = the sampling transform of its logits; `tree` None drafts
    the chain of each round's k (the width-one tree), a `TreeShape` that tree (cut to the round's k deep), a
    `DynamicTree` the tree its growth policy picks each round.

    `adaptive_threshold=t` (a chain) stops drafting once the draft's confidence in its own token (q(x); the
    untempered softmax when greedy) falls below t, so k becomes a maximum. The stop depends only on the draft's own
    samples: still exact.

    `vocab_subset` (a chain; sorted token ids, see specviz.engine.vocab_trim) trims the draft's output layer: each
    step multiplies the final hidden state by the subset's rows only, the other logits are -inf, and q is the
    sampling transform of those full-width logits, so q(x) = 0 outside the subset and is exactly the distribution
    the token was drawn from. The target is untouched: tokens outside the subset still come out through the residual
    and the bonus.
    """

    def __init__(self, model, vocab: int, adaptive_threshold: float | None = None, cache_options: dict | None = None,
                 vocab_subset: torch.Tensor | None = None, tree: TreeShape | DynamicTree | None = None):
        if adaptive_threshold is not None and not 0.0 <= adaptive_threshold <= 1.0:
            raise ValueError(f"adaptive_threshold must be in [0, 1], got {adaptive_threshold}")
        self.model, self.vocab, self.threshold = model, vocab, adaptive_threshold
        self.growth = tree if isinstance(tree, DynamicTree) else None
        self.shape = tree.shape if self.growth is not None else tree   # None: the chain of each round's k
        # A chain (a width-one shape too) reads each draft causally behind its parent, as the static cache, the
        # graphs, a trimmed head and the adaptive stop need; a tree reads under its mask.
        self.chain = self.growth is None and (self.shape is None or self.shape.is_chain())
        self.cache_options = cache_options or {}   # static / max_len / compiled, see decoding.KVCache
        if not self.chain and (adaptive_threshold is not None or vocab_subset is not None
                               or self.cache_options.get("static") or self.cache_options.get("compiled")):
            raise ValueError("a tree is drafted by the draft model's whole output layer, without adaptive_threshold, "
                             "on a dynamic cache")
        self.name = "model" if self.chain else "tree"   # what a Round records as its drafter
        self.cache = KVCache(model)
        self.prefix = 0   # the sequence's length at the last propose: the drafts' slots start there
        self.slots: dict[int, int] = {}       # node key -> its slot in the draft cache (the nodes the draft read)
        self.key_of: list[int] | None = None  # the last proposal's node -> its key (None: the node's own index)
        self.subset = self.head = None
        if vocab_subset is not None:
            self._trim(vocab_subset)
        if self.cache_options.get("compiled"):   # capture the draft's graphs now, before any timed work
            warm_up(model, [1, 2], self.cache_options["max_len"], verify=False, hidden=self.subset is not None,
                    backend=self.cache_options.get("backend", "inductor"), stop=self.cache_options.get("stop"))

    def _trim(self, subset: torch.Tensor) -> None:
        subset = torch.as_tensor(subset, dtype=torch.long).flatten()
        if not len(subset) or bool((subset[1:] <= subset[:-1]).any()) or not 0 <= int(subset[0]) \
                or int(subset[-1]) >= self.vocab:
            raise ValueError(f"vocab_subset must be distinct ids in [0, {self.vocab}) in ascending order")
        self.head = trimmed_head(self.model, subset)
        self.name = "trimmed"   # what a Round records as its drafter
        self.subset = subset.to(input_device(self.model))   # moved to the head's device when it differs

    @property
    def max_depth(self) -> int:
        """The deepest draft this drafter proposes: a tree's (the decoder caps it by the tokens left); a chain drafts
        what each round asks, at most the longest chain."""
        if self.growth is not None:
            return self.growth.max_depth
        return MAX_K if self.shape is None else self.shape.max_depth

    def begin(self, tokens: torch.Tensor) -> None:
        self.cache = prefill(self.model, tokens, **self.cache_options)

    def commit(self, path: list[int]) -> None:
        """After a round: keep the prefix and the accepted path's nodes that the draft has read (a chain's path is
        in place behind the prefix: a crop, the static cache's bookkeeping)."""
        slots = []
        for node in path:
            key = self.key_of[node] if self.key_of is not None else node
            if key not in self.slots:   # only the path's last node can be unread (a leaf): the cache lags
                break
            slots.append(self.slots[key])
        keep_path(self.cache, self.prefix, slots)

    def propose(self, tokens: torch.Tensor, k: int, sampling: SamplingConfig,
                generator: torch.Generator | None) -> Proposal:
        B = tokens.shape[0]
        if k < 1:   # the last token of the budget: nothing to draft, the cache stays as it is
            self.prefix, self.slots, self.key_of = self.cache.get_seq_length(), {}, None
            return Proposal(tokens.new_empty(B, 0), torch.empty(B, 0, self.vocab, device=tokens.device))
        if self.growth is not None and self.growth.grows(sampling, B):
            proposal, self.key_of = self.growth.grow(self, tokens, k)
            return proposal
        return self._draft(tokens, TreeShape.chain(k) if self.shape is None else self.shape.truncated(k), sampling,
                           generator)

    def _draft(self, tokens: torch.Tensor, shape: TreeShape, sampling: SamplingConfig,
               generator: torch.Generator | None) -> Proposal:
        """Draft `shape` after `tokens` [B, T], depth by depth (a chain: each token after its parent, until the
        adaptive stop ends it)."""
        B, T = tokens.shape
        chain = shape.is_chain()
        stop = AdaptiveStop(self.threshold, B, tokens.device) if self.threshold is not None else None
        ids: list = [None] * shape.size
        qs: list = [None] * shape.size
        logits_at = {-1: self.root(tokens)}   # node -> the draft's logits [B, V] after it
        drafted = shape.max_depth
        for depth in range(1, shape.max_depth + 1):
            level = [i for i, d in enumerate(shape.depths) if d == depth]
            for parent in dict.fromkeys(shape.parents[i] for i in level):
                kids = shape.children[parent + 1]
                if chain:   # the width-one tree: its one child drawn as a one-token step draws it
                    q, token = draw(logits_at[parent], sampling, generator)
                    drawn, q_kids = [token], [q]
                else:
                    drawn, q_kids = draw_children(logits_at[parent], len(kids), sampling, generator)
                for node, token, q in zip(kids, drawn, q_kids):
                    ids[node], qs[node] = token, q
            if stop is not None and stop.stops(logits_at[shape.parents[level[0]]], qs[level[0]], ids[level[0]],
                                               sampling):
                drafted = depth
                break
            readers = [i for i in level if shape.children[i + 1]]
            if readers:
                logits_at.update(zip(readers, self._read_level(readers, ids, shape, T - 1 + depth).unbind(1)))
        shape = shape.truncated(drafted)
        logits = torch.stack([logits_at[p] for p in shape.parents], 1)
        n_drafted = stop.n_drafted if stop is not None and B > 1 else None
        return Proposal(torch.stack(ids[:shape.size], 1), torch.stack(qs[:shape.size], 1), logits, n_drafted,
                        "model", shape)

    def _read_level(self, readers: list[int], ids: list, shape: TreeShape, position: int) -> torch.Tensor:
        """The draft's logits [B, n, V] after the `readers` (nodes of one depth; `ids[i]` [B] node i's token): a
        chain's one node read causally behind its parent, a tree's under the tree mask."""
        device = ids[readers[0]].device
        if shape.is_chain():
            self.slots[readers[0]] = self.cache.get_seq_length()
            return self._step_logits(ids[readers[0]][:, None], device)[:, None]
        ancestors = [[a for a in shape.ancestry[i].nonzero().flatten().tolist() if a != i] for i in readers]
        return self.read(readers, torch.stack([ids[i] for i in readers], 1), ancestors, position).to(device)

    def _step_logits(self, pending: torch.Tensor, device) -> torch.Tensor:
        """[B, V] draft logits after `pending` [B, n]; with a subset, -inf outside it (no full head computed)."""
        if self.subset is None:
            return forward_logits(self.model, pending, self.cache, 1)[:, -1, :self.vocab].to(device)
        hidden = forward_hidden(self.model, pending, self.cache, 1)[:, -1]
        sub = self.head(hidden)
        full = sub.new_full((sub.shape[0], self.vocab), float("-inf"))
        return full.scatter_(-1, self.subset.to(sub.device).expand(sub.shape[0], -1), sub).to(device)

    def root(self, tokens: torch.Tensor) -> torch.Tensor:
        """Read the tokens [B, T] the cache lacks (after a bonus, more than one: one forward); the draft's logits
        [B, V] after the last one. Starts a round."""
        root = self._step_logits(tokens[:, self.cache.get_seq_length():], tokens.device)
        self.prefix, self.slots, self.key_of = tokens.shape[1], {}, None
        return root

    def read(self, keys: list, new: torch.Tensor, ancestors: list[list], position: int) -> torch.Tensor:
        """One draft forward over new nodes [B, n] of one depth under the tree mask: their logits [B, n, V].

        Node `keys[i]` sees the prefix, the slots of `ancestors[i]` (keys read before) and itself.
        """
        past, T = self.cache.get_seq_length(), self.prefix
        allowed = torch.zeros(len(keys), past + len(keys), dtype=torch.bool)
        allowed[:, :T] = True
        for row, (key, above) in enumerate(zip(keys, ancestors)):
            allowed[row, [self.slots[a] for a in above]] = True
            allowed[row, past + row] = True
            self.slots[key] = past + row   # the node's cache slot
        positions = torch.full((len(keys),), position)
        return forward_masked(self.model, new, self.cache, positions, allowed, len(keys))[..., :self.vocab]


class AdaptiveStop:
    """A chain's adaptive stop over B rows: a row stops once the draft's confidence in its drafted token falls below
    `threshold`; the chain ends when every row has stopped. Only this tracks rows: no extra launches otherwise."""

    def __init__(self, threshold: float, rows: int, device):
        self.threshold = threshold
        self.active = torch.ones(rows, dtype=torch.bool, device=device)      # [B] rows still drafting
        self.n_drafted = torch.zeros(rows, dtype=torch.long, device=device)  # [B] each row's drafts so far

    def stops(self, logits: torch.Tensor, q: torch.Tensor, token: torch.Tensor, sampling: SamplingConfig) -> bool:
        """After a depth drafted `token` [B] from `logits` [B, V] (q [B, V]): whether every row has stopped (a host
        sync per draft token: the price of stopping early)."""
        self.n_drafted += self.active
        sure = confidence(logits) if sampling.greedy else q
        self.active &= sure.gather(-1, token[:, None]).squeeze(-1) >= self.threshold
        return not bool(self.active.any())
