"""Draft trees: a tree's shape (a chain is the width-one tree) and keeping its accepted path.

A round with a tree drafts several possible futures at once: node i has a parent
(-1 for the root's children, i.e. the sequence's last token), a depth (1 for the
root's children) and a rank among its siblings. Nodes are numbered breadth first,
siblings contiguous in the order they were drawn, so a parent always comes before
its children and a chain of K nodes is 0 <- 1 <- ... <- K-1.

One forward reads every node: node i sits at position (last position + depth)
and sees the whole prefix, its ancestors and itself only (SpecInfer's tree
attention: specviz.runtime.masked, which reads a shape as its depths and
ancestry). Afterwards only the accepted path is kept in the KV cache.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property

import torch

from ..runtime.decoding import KVCache
from ..runtime.masked import keep_path
from ..limits import MAX_TREE_NODES


@dataclass(frozen=True)
class TreeShape:
    """A draft tree's topology: `parents[i]` is node i's parent (-1 = the root, the last token of the sequence)."""

    parents: tuple[int, ...]

    def __post_init__(self):
        # No node at all is the empty chain: the round at the end of the budget, which drafts nothing.
        if not 0 <= len(self.parents) <= MAX_TREE_NODES:
            raise ValueError(f"a draft tree has 1 to {MAX_TREE_NODES} nodes, got {len(self.parents)}")
        for i, parent in enumerate(self.parents):
            if not -1 <= parent < i:
                raise ValueError(f"node {i}'s parent must be -1 or an earlier node, got {parent}")
        if any(self.depths[i] < self.depths[i - 1] for i in range(1, len(self.parents))):
            raise ValueError("nodes must be numbered breadth first (depths never decrease)")

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def chain(length: int) -> "TreeShape":
        """The width-one tree of `length` nodes, 0 <- 1 <- ... <- length-1: a chain's drafts (one a round per
        length, so cached)."""
        return TreeShape(tuple(range(-1, length - 1)))

    @classmethod
    def from_widths(cls, widths) -> "TreeShape":
        """Every node at depth d (the root is depth 0) gets widths[d] children: (2, 2, 1) is 2 + 4 + 4 nodes."""
        if not widths or any(int(w) < 1 for w in widths):
            raise ValueError(f"tree widths must be whole numbers >= 1, got {widths!r}")
        parents, level = [], [-1]
        for width in widths:
            nxt = []
            for parent in level:
                for _ in range(int(width)):
                    nxt.append(len(parents))
                    parents.append(parent)
                    if len(parents) > MAX_TREE_NODES:
                        raise ValueError(f"tree widths {widths!r} make more than {MAX_TREE_NODES} nodes")
            level = nxt
        return cls(tuple(parents))

    @classmethod
    def spine(cls, length: int, branches: int) -> "TreeShape":
        """A chain of `length` (the draft's top choice at every depth) with the runner-up beside it as a
        leaf at the first `branches` depths: a second chance where the draft is least sure of the future."""
        if not 1 <= length or not 0 <= branches <= length:
            raise ValueError(f"a spine needs length >= 1 and 0 <= branches <= length, got {length}, {branches}")
        parents, main = [], -1
        for depth in range(length):
            parents.append(main)
            if depth < branches:
                parents.append(main)
            main = len(parents) - (2 if depth < branches else 1)
        return cls(tuple(parents))

    @classmethod
    def for_budget(cls, nodes: int) -> "TreeShape":
        """The bench's tree of `nodes` nodes: a spine with a runner-up at its first nodes // 3 depths."""
        branches = nodes // 3
        return cls.spine(nodes - branches, branches)

    @classmethod
    def parse(cls, text: str) -> "TreeShape":
        """'2x2x1x1' -> from_widths((2, 2, 1, 1)); '-1,-1,0' -> the parent list itself (as `spelled` writes it)."""
        text = str(text).strip().lower()
        if not text:
            raise ValueError("a tree is written as widths per depth (2x2x1) or parents (-1,-1,0), got ''")
        try:
            if "," in text:
                return cls(tuple(int(p) for p in text.split(",")))
            return cls.from_widths([int(w) for w in text.split("x")])
        except ValueError as e:
            if "tree" in str(e) or "node" in str(e):
                raise
            raise ValueError(f"a tree is written as widths per depth (2x2x1) or parents (-1,-1,0), got {text!r}") \
                from None

    @property
    def size(self) -> int:
        return len(self.parents)

    @cached_property
    def depths(self) -> tuple[int, ...]:
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent < 0 else depths[parent] + 1)
        return tuple(depths)

    @property
    def max_depth(self) -> int:
        return max(self.depths, default=0)

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """children[0] are the root's children, children[i + 1] node i's (node ids, in rank order)."""
        out: list[list[int]] = [[] for _ in range(self.size + 1)]
        for i, parent in enumerate(self.parents):
            out[parent + 1].append(i)
        return tuple(tuple(c) for c in out)

    @cached_property
    def ancestry(self) -> torch.Tensor:
        """[N, N] bool: row i is True at node i and at each of its ancestors."""
        anc = torch.eye(self.size, dtype=torch.bool)
        for i, parent in enumerate(self.parents):
            if parent >= 0:
                anc[i] |= anc[parent]
        return anc

    def is_chain(self) -> bool:
        """One child per node: the width-one tree, verified on the chain's fast path (causal, no mask)."""
        return self._chain

    @cached_property
    def _chain(self) -> bool:
        return all(parent == i - 1 for i, parent in enumerate(self.parents))

    def truncated(self, max_depth: int) -> "TreeShape":
        """The nodes at depth <= max_depth (a round near the token budget drafts less deep); same numbering."""
        keep = sum(1 for d in self.depths if d <= max_depth)
        return self if keep == self.size else TreeShape(self.parents[:keep])

    def spelled(self) -> str:
        """'2x2x1' when the tree is uniform by depth, else its parent list."""
        widths = []
        for depth in range(self.max_depth):
            level = [i + 1 for i, d in enumerate(self.depths) if d == depth] if depth else [0]
            counts = {len(self.children[e]) for e in level}
            if len(counts) != 1:
                return ",".join(map(str, self.parents))
            widths.append(counts.pop())
        return "x".join(map(str, widths)) if TreeShape.from_widths(widths) == self else ",".join(map(str, self.parents))


def commit(cache: KVCache, prefix: int, path: list[int]) -> None:
    """After a verify forward that read the proposal's nodes right after `prefix` (node i at prefix + i): keep the
    prefix and the accepted `path` only. A chain's path 0..m-1 is already in place, so it is a crop (the static
    cache's and the graphs' bookkeeping: only the position moves); a tree's is copied down first."""
    keep_path(cache, prefix, [prefix + node for node in path])
