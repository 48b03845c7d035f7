"""What a drafter proposes (`Proposal`: nodes of a tree, a chain being the width-one tree) and the three things the
decoder asks of any drafter (`Drafter`).

The decoder only ever asks a drafter three things: read the prompt (`begin`),
propose up to K tokens deep after the current sequence (`propose`), and keep what the
round accepted, forgetting the rest (`commit(path)`). Any proposer fits, as
long as `Proposal.q` is exactly the distribution each token was drawn from (a
deterministic proposer has a one-hot q): the rejection rule is exact for any q.
Shapes are batched ([B, ...]); the decoder uses B = 1, the statistical tests
B = thousands of seeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from .sampling import SamplingConfig
from .tree import TreeShape


@dataclass
class Proposal:
    """What a drafter proposes: the N nodes of a tree (`shape`, breadth first), K drafts of a chain.

    A chain is the width-one tree (draft i's parent is draft i - 1, `TreeShape.chain(K)`, the shape given when none
    is); the decoder verifies it on its fast path: causal attention, no mask, the static cache and its graphs
    (specviz.engine.speculative), with the rule's own fast path (specviz.engine.rule.verify)."""

    ids: torch.Tensor                      # [B, K] drafted tokens (a tree: [B, N] nodes)
    q: torch.Tensor                        # [B, K, V] the distribution each was drawn from
    logits: torch.Tensor | None = None     # [B, K, V] raw draft logits (for the confidence display)
    n_drafted: torch.Tensor | None = None  # [B] per-row draft length where rows stopped early, else None
    source: str = "model"                  # "model" or "ngram": what produced the (first row's) drafts
    shape: TreeShape | None = None         # the tree's topology; None given: the chain of K

    def __post_init__(self):
        if self.shape is None:
            self.shape = TreeShape.chain(self.ids.shape[1])


class Drafter(Protocol):
    def begin(self, tokens: torch.Tensor) -> None:
        """Start a sequence: read the prompt tokens [B, T] (all but the last may be cached)."""

    def propose(self, tokens: torch.Tensor, k: int, sampling: SamplingConfig,
                generator: torch.Generator | None) -> Proposal:
        """Propose up to k tokens after `tokens` [B, T] (the whole sequence so far)."""

    def commit(self, path: list[int]) -> None:
        """The last proposal's drafts `path` (node ids in depth order; a chain's accepted drafts are 0..m-1) are
        final after the sequence it was proposed after: forget anything else read."""
