"""How a draft model drafts a tree (specviz.engine.model_drafter.ModelDrafter, the one model drafter, draws and
reads it): several children per node, each with the q it was drawn from; EAGLE-2's growth; the tree spellings.

Greedy, a node's children are the draft's top-w tokens (most confident first),
each with a one-hot q: deterministic proposals. Sampling, the w children are
drawn WITHOUT replacement: child j from q with children 1..j-1 removed and
renormalised, and that distribution is recorded as child j's q (specviz.engine.rule
explains why this keeps the rule exact). Where q has fewer than w tokens left,
the child is drawn from q itself (with replacement), still recorded as drawn.

Drafting goes level by level: one draft forward per depth reads every node of
that depth that has children, under the tree mask (each node sees the prefix
and its ancestors), so a tree of depth D costs D draft forwards like a chain of D.
A chain's tokens are not drawn here: each is drawn as a one-token step draws it
(the width-one case of the drafter's one loop).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .proposal import Proposal
from .sampling import SamplingConfig, probabilities, sample
from ..limits import MAX_TREE_NODES
from .tree import TreeShape


@dataclass(frozen=True)
class TreeCosts:
    """What a round costs on this machine, in one-token target forwards (measured: specviz.bench.costs).

    `c` is a draft forward; `verify[n]` a target forward over n + 1 rows (the pending token and n
    nodes), verify[0] = 1. A node whose path the draft gives probability π adds about π expected
    tokens (for a calibrated draft), so a round of n nodes makes about 1 + Σπ tokens for
    reads·c + verify[n]: the way Sequoia sizes trees to hardware, here re-chosen every round.
    """

    c: float
    verify: tuple[float, ...]

    def __post_init__(self):
        if not self.verify or self.c < 0 or any(v <= 0 for v in self.verify):
            raise ValueError(f"tree costs need c >= 0 and positive verify costs, got {self.c}, {self.verify}")
        # Timings are noisy: a verify over more rows is never cheaper than over fewer.
        object.__setattr__(self, "verify", tuple(itertools.accumulate(self.verify, max)))

    def best_size(self, path_probs: list[float], reads: int) -> int:
        """How many of the nodes (most probable first) to verify: the count with the most tokens per cost."""
        best, best_rate, gain = 1, -1.0, 1.0
        for n, prob in enumerate(path_probs[:len(self.verify) - 1], 1):
            gain += prob
            rate = gain / (reads * self.c + self.verify[n])
            if rate > best_rate:
                best, best_rate = n, rate
        return best


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



@dataclass(frozen=True)
class DynamicTree:
    """EAGLE-2's dynamic draft tree (Li et al., "EAGLE-2: Faster Inference of Language Models with Dynamic
    Draft Trees", EMNLP 2024, §4.2 expansion and §4.3 reranking), greedy: grown where the draft is sure. A growth
    policy: the model drafter (specviz.engine.model_drafter.ModelDrafter) asks it for each round's tree.

    A node's value is the draft's log-confidence of its whole path (the sum of its tokens' untempered
    log-softmax along it). Each depth, every frontier node offers its top `top_k` tokens; the `frontier`
    (default `top_k`) best of these by value become the next frontier and are read by the draft (one
    forward per depth over `frontier` rows). `frontier=1` reads one row per depth, like a chain, and
    keeps the runner-ups as leaves only where they score: the cheapest tree for a CPU draft.
    After `depth` (default `nodes`) levels the `nodes` best candidates by value form the tree: a value never
    exceeds its parent's, so the chosen set keeps every node's ancestors. The tree's shape therefore changes every
    round: a deep chain where the draft is confident, branches where it hesitates. `costs` trims each tree to the
    node count they favour (`TreeCosts.best_size`).

    Greedy only: the children are deterministic (one-hot q), so the rule stays exact. Sampling (and
    batches of several rows) draft the static `shape`, `TreeShape.for_budget(nodes)`, whose children are
    drawn without replacement as any tree's.
    """

    nodes: int
    depth: int | None = None
    top_k: int = 2
    frontier: int | None = None
    costs: TreeCosts | None = None

    def __post_init__(self):
        depth, frontier = self.depth or self.nodes, self.top_k if self.frontier is None else self.frontier
        if not 1 <= depth <= self.nodes or self.top_k < 1 or not 1 <= frontier <= self.top_k:
            raise ValueError(f"a dynamic tree needs 1 <= depth <= nodes, top_k >= 1 and 1 <= frontier <= top_k, "
                             f"got {self.depth}, {self.top_k}, {self.frontier}")
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "frontier", frontier)

    @property
    def shape(self) -> TreeShape:
        """The static tree drafted where the tree is not grown (sampling, several rows)."""
        return TreeShape.for_budget(self.nodes)

    @property
    def max_depth(self) -> int:
        return max(self.depth, self.shape.max_depth)

    def grows(self, sampling: SamplingConfig, rows: int) -> bool:
        """Whether this round's tree is grown (greedy, one row) rather than the static `shape`."""
        return sampling.greedy and rows == 1

    def grow(self, drafter, tokens: torch.Tensor, k: int) -> tuple[Proposal, list[int]]:
        """The round's tree after `tokens` [1, T], at most `k` deep, read by `drafter` (its `root` and `read`): the
        proposal and each node's key (the candidate the drafter read it as)."""
        root = drafter.root(tokens)
        T, depth = tokens.shape[1], min(k, self.depth)
        value, token, parent, level = [], [], [], []   # every candidate, by id
        logits_of, frontier = {-1: root[0]}, [-1]
        for d in range(1, depth + 1):
            scores = torch.stack([torch.log_softmax(logits_of[f].float(), -1) for f in frontier])
            top = scores.topk(min(self.top_k, scores.shape[-1]), dim=-1)
            base = [0.0 if f < 0 else value[f] for f in frontier]
            new = []
            for f, b, vals, toks in zip(frontier, base, top.values.tolist(), top.indices.tolist()):   # host sync
                for v, t in zip(vals, toks):
                    new.append(len(value))
                    value.append(b + v), token.append(t), parent.append(f), level.append(d)
            if d == depth:
                break
            frontier = sorted(new, key=lambda c: (-value[c], c))[:self.frontier]
            above = [ancestors(c, parent) for c in frontier]
            read = drafter.read(frontier, torch.tensor([[token[c] for c in frontier]], device=tokens.device), above,
                                T - 1 + d)
            logits_of.update(zip(frontier, read[0].to(tokens.device)))
        ranked = sorted(range(len(value)), key=lambda c: (-value[c], c))[:self.nodes]   # ancestors first
        if self.costs is not None:   # reads: the root's forward and one per depth after it
            ranked = ranked[:self.costs.best_size([math.exp(value[c]) for c in ranked], d)]
        chosen = sorted(ranked, key=lambda c: (level[c], c))
        index = {c: i for i, c in enumerate(chosen)}
        shape = TreeShape(tuple(index[parent[c]] if parent[c] >= 0 else -1 for c in chosen))
        ids = torch.tensor([[token[c] for c in chosen]], device=tokens.device)
        q = torch.nn.functional.one_hot(ids, drafter.vocab).float()
        logits = torch.stack([logits_of[parent[c]] for c in chosen])[None]
        return Proposal(ids, q, logits, None, "model", shape), chosen


def ancestors(c: int, parent: list[int]) -> list[int]:
    """Candidate `c`'s ancestors, nearest first (`parent[c]` -1: the root's child)."""
    out = []
    while parent[c] >= 0:
        c = parent[c]
        out.append(c)
    return out


def tree_plan(tree, costs: TreeCosts | None = None) -> tuple[TreeShape | DynamicTree, bool]:
    """(the tree a model drafter drafts, whether prompt lookup drafts before it) for a TreeShape, widths ("2x2x1"),
    a parent list ("-1,-1,0"), "dynamic:N" (EAGLE-2's tree of N nodes, optionally "dynamic:N:depth:top_k:frontier")
    or "hybrid:N[:...]" (prompt lookup, else that tree: specviz.engine.drafters.HybridDrafter over it).
    `costs` trims a dynamic tree to the node count they favour each round (static shapes ignore them)."""
    kind = tree.strip().lower().split(":")[0] if isinstance(tree, str) else ""
    if kind in ("dynamic", "hybrid"):
        try:
            numbers = [int(x) for x in tree.split(":")[1:]]
        except ValueError:
            raise ValueError(f"a dynamic tree is written {kind}:N[:depth[:top_k[:frontier]]], got {tree!r}") from None
        if not 1 <= len(numbers) <= 4 or not 1 <= numbers[0] <= MAX_TREE_NODES:
            raise ValueError(f"a dynamic tree is {kind}:N[:depth[:top_k[:frontier]]] with N in [1, {MAX_TREE_NODES}], "
                             f"got {tree!r}")
        given = dict(zip(("nodes", "depth", "top_k", "frontier"), numbers))
        return DynamicTree(costs=costs, **given), kind == "hybrid"
    return (tree if isinstance(tree, TreeShape) else TreeShape.parse(tree)), False
