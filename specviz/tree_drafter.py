"""A draft model that drafts a tree: several children per node, each with the q it was drawn from.

Greedy, a node's children are the draft's top-w tokens (most confident first),
each with a one-hot q: deterministic proposals. Sampling, the w children are
drawn WITHOUT replacement: child j from q with children 1..j-1 removed and
renormalised, and that distribution is recorded as child j's q (specviz.tree_rule
explains why this keeps the rule exact). Where q has fewer than w tokens left,
the child is drawn from q itself (with replacement), still recorded as drawn.

Drafting goes level by level: one draft forward per depth reads every node of
that depth that has children, under the tree mask (each node sees the prefix
and its ancestors), so a tree of depth D costs D draft forwards like a chain of D.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .decoding import KVCache, forward_logits, prefill
from .drafters import Proposal
from .sampling import SamplingConfig, probabilities, sample
from .tree import TreeShape, forward_masked, keep_path


@dataclass
class TreeProposal(Proposal):
    """A Proposal whose ids [B, N] and q [B, N, V] are the nodes of `shape` (breadth first), not a chain."""

    shape: TreeShape | None = None


def without(q: torch.Tensor, drawn: list[torch.Tensor]) -> torch.Tensor:
    """q [B, V] with the tokens drawn so far removed and renormalised; q itself in rows with nothing left."""
    rest = q.clone()
    for token in drawn:
        rest.scatter_(-1, token[:, None], 0.0)
    mass = rest.sum(-1, keepdim=True)
    return torch.where(mass > 0, rest / mass.clamp_min(1e-30), q)


def draw_children(logits: torch.Tensor, width: int, sampling: SamplingConfig,
                  generator: torch.Generator | None) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """`width` children of one node for B rows: ([B] token per child, [B, V] the q each was drawn from)."""
    q = probabilities(logits, sampling)
    if sampling.greedy:   # the most confident tokens, each a deterministic (one-hot) proposal
        tops = logits.float().topk(width, dim=-1).indices.unbind(-1)
        return list(tops), [torch.nn.functional.one_hot(t, q.shape[-1]).to(q.dtype) for t in tops]
    tokens, qs = [], []
    for _ in range(width):
        q_child = without(q, tokens)
        tokens.append(sample(q_child, generator, False))
        qs.append(q_child)
    return tokens, qs


class TreeDrafter:
    """Drafts `shape` with a draft model; `propose`'s k caps the tree's depth (the decoder's token budget)."""

    name = "tree"

    def __init__(self, model, vocab: int, shape: TreeShape):
        self.model, self.vocab, self.shape = model, vocab, shape
        self.cache = KVCache(model)
        self.prefix = 0            # the sequence length at the last propose: the cache's tree slots start there
        self.slots: dict[int, int] = {}

    def begin(self, tokens: torch.Tensor) -> None:
        self.cache = prefill(self.model, tokens)

    def rollback(self, n_kept: int) -> None:
        """A chain-style rollback: keep the sequence's first n_kept positions (no tree node)."""
        keep_path(self.cache, min(n_kept, self.prefix), [])

    def keep(self, path: list[int]) -> None:
        """After a tree round: keep the prefix and the accepted path's nodes that the draft has read."""
        slots = []
        for node in path:
            if node not in self.slots:   # only the path's last node can be unread (a leaf): the cache lags
                break
            slots.append(self.slots[node])
        keep_path(self.cache, self.prefix, slots)

    def propose(self, tokens: torch.Tensor, k: int, sampling: SamplingConfig,
                generator: torch.Generator | None) -> Proposal:
        B, T = tokens.shape
        if k < 1:   # the last token of the budget: nothing to draft, the cache stays as it is
            self.prefix, self.slots = self.cache.get_seq_length(), {}
            return Proposal(tokens.new_empty(B, 0), torch.empty(B, 0, self.vocab, device=tokens.device))
        shape = self.shape.truncated(k)
        root = forward_logits(self.model, tokens[:, self.cache.get_seq_length():], self.cache, 1)[:, -1, :self.vocab]
        self.prefix, self.slots = T, {}
        ids: list = [None] * shape.size
        qs: list = [None] * shape.size
        logits_at = {-1: root.to(tokens.device)}     # node -> the draft's logits after it
        for depth in range(1, shape.max_depth + 1):
            level = [i for i, d in enumerate(shape.depths) if d == depth]
            for parent in dict.fromkeys(shape.parents[i] for i in level):
                kids = shape.children[parent + 1]
                drawn, q_kids = draw_children(logits_at[parent], len(kids), sampling, generator)
                for node, token, q in zip(kids, drawn, q_kids):
                    ids[node], qs[node] = token, q
            readers = [i for i in level if shape.children[i + 1]]
            if readers:
                logits_at.update(zip(readers, self._read(tokens, shape, readers, ids).unbind(1)))
        logits = torch.stack([logits_at[p] for p in shape.parents], 1)
        return TreeProposal(torch.stack(ids, 1), torch.stack(qs, 1), logits, None, "model", shape)

    def _read(self, tokens: torch.Tensor, shape: TreeShape, nodes: list[int], ids: list) -> torch.Tensor:
        """One draft forward over `nodes` (one depth) under the tree mask: their logits [B, n, V]."""
        past, T = self.cache.get_seq_length(), self.prefix
        allowed = torch.zeros(len(nodes), past + len(nodes), dtype=torch.bool)
        allowed[:, :T] = True
        for row, node in enumerate(nodes):
            ancestors = shape.ancestry[node].nonzero().flatten().tolist()
            allowed[row, [self.slots[a] for a in ancestors if a != node]] = True
            allowed[row, past + row] = True
            self.slots[node] = past + row   # the node's cache slot
        positions = torch.full((len(nodes),), T - 1 + shape.depths[nodes[0]])
        new = torch.stack([ids[n] for n in nodes], 1)
        return forward_masked(self.model, new, self.cache, positions, allowed, len(nodes))[..., :self.vocab].to(
            tokens.device)
