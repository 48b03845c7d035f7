"""The exact rule for a draft tree: recursive rejection sampling over each node's children, batched over rows.

Walk down from the root. At the current node the target's distribution is
p = P[node]. Its children x_1, x_2, ... are tried in order, child j against the
residual r_j left by the siblings rejected before it:

    r_1 = p,   accept x_j iff u_j < min(1, r_j(x_j) / q_j(x_j)),   r_{j+1} = norm(max(0, r_j - q_j)),

where q_j is the distribution child j was drawn from given the siblings drawn
before it. The first accepted child becomes the current node and the walk goes
on; when every child is rejected the next token is drawn from the last residual
(the correction); at a leaf it is drawn from p there (the bonus).

This is SpecInfer's multi-step speculative sampling (Miao et al., "SpecInfer:
Accelerating Large Language Model Serving with Tree-based Speculative Inference
and Verification", ASPLOS 2024, §4 "token tree verification", the stochastic
verification algorithm and its theorem that the output follows the target),
written per child with its own q_j as in recursive rejection sampling (Jeon et al.,
"Recursive Speculative Decoding: Accelerating LLM Inference via Sampling
Without Replacement", 2024). Why it is exact: by induction from the last child,
the token this node emits given the history h_{j-1} of earlier siblings follows
r_j, because P(emit y) = min(r_j, q_j)(y) + (1 - Σ min(r_j, q_j)) r_{j+1}(y) = r_j(y)
and r_{j+1} does not depend on x_j. That needs only x_j ~ q_j(· | h_{j-1}):
children drawn i.i.d. (with replacement, q_j = q), drawn without replacement
(q_j = q with the earlier siblings removed and renormalised, the tree drafter's
choice), or chosen deterministically (q_j one-hot, the greedy top-k children).
With one-hot p (greedy) the walk is "the longest path whose every node is the
target's argmax".

`sibling_residual` is looked up at call time: the tests replace it with a broken
rule (every child against the untouched p) to show that they catch it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import rule
from .sampling import sample
from .tree import TreeShape


def sibling_residual(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """r_{j+1} = norm(max(0, r_j - q_j)): what is left of the target after child j's rejection."""
    return rule.residual(r, q)


@dataclass
class TreeVerdict:
    """The outcome of verifying B rows of one tree shape; every tensor stays on the device."""

    accept_prob: torch.Tensor   # [B, N] min(1, r(x)/q(x)) of each tried node (0 where never tried)
    u: torch.Tensor             # [B, N] the uniform draws
    tried: torch.Tensor         # [B, N] the node was tested (accepted or rejected)
    path: torch.Tensor          # [B, D] accepted node ids in depth order, -1 after the last
    n_accepted: torch.Tensor    # [B] length of the accepted path
    next_dist: torch.Tensor     # [B, V] the residual (after rejecting every child) or p at a leaf (bonus)
    next_token: torch.Tensor    # [B]
    bonus: torch.Tensor         # [B] True where the path ended at a leaf

    @property
    def accepted(self) -> torch.Tensor:
        """[B, N] the node is on the accepted path."""
        N = self.u.shape[1]
        hits = torch.zeros(self.u.shape[0], N + 1, dtype=torch.bool, device=self.u.device)
        hits.scatter_(1, torch.where(self.path >= 0, self.path, N), True)
        return hits[:, :N]


def child_table(shape: TreeShape, device) -> torch.Tensor:
    """[N + 1, W] children of the root (row 0) and of each node (row i + 1), padded with -1."""
    width = max(len(c) for c in shape.children)
    table = torch.full((shape.size + 1, max(width, 1)), -1, dtype=torch.long)
    for e, kids in enumerate(shape.children):
        table[e, :len(kids)] = torch.tensor(kids, dtype=torch.long)
    return table.to(device)


def verify_tree(P: torch.Tensor, Q: torch.Tensor, ids: torch.Tensor, shape: TreeShape,
                generator: torch.Generator | None, greedy: bool, u: torch.Tensor | None = None) -> TreeVerdict:
    """Walk B rows down the tree: P [B, N+1, V] (row 0 at the root, row i+1 after node i), Q [B, N, V], ids [B, N].

    `u` [B, N] replaces the uniform draws (the exact enumeration and a replay pass them; the decoder never does).
    """
    B, N = ids.shape
    device = P.device
    rows = torch.arange(B, device=device)
    table = child_table(shape, device)
    u = torch.rand(B, N, generator=generator, device=device) if u is None else u.to(device)
    accept_prob = torch.zeros(B, N, device=device)
    tried = torch.zeros(B, N, dtype=torch.bool, device=device)
    path = torch.full((B, shape.max_depth), -1, dtype=torch.long, device=device)
    here = torch.zeros(B, dtype=torch.long, device=device)      # current node + 1 (0 = the root)
    walking = torch.ones(B, dtype=torch.bool, device=device)
    r = P[:, 0]
    for depth in range(shape.max_depth):
        r = torch.where(walking[:, None], P[rows, here], r)     # a fresh p at the node just reached
        moved = torch.zeros(B, dtype=torch.bool, device=device)
        for slot in range(table.shape[1]):
            child = table[here, slot]
            trying = walking & ~moved & (child >= 0)
            node = child.clamp_min(0)
            q = Q[rows, node]
            x = ids[rows, node][:, None]
            a = rule.acceptance_prob(r.gather(-1, x).squeeze(-1), q.gather(-1, x).squeeze(-1))
            accepted = trying & (u[rows, node] < a)
            accept_prob[rows, node] = torch.where(trying, a, accept_prob[rows, node])
            tried[rows, node] |= trying
            r = torch.where((trying & ~accepted)[:, None], sibling_residual(r, q), r)
            moved |= accepted
            here = torch.where(accepted, child + 1, here)
            path[:, depth] = torch.where(accepted, child, path[:, depth])
        walking &= moved
    bonus = table[here, 0] < 0                                  # the walk ended at a leaf: nothing was rejected there
    next_dist = torch.where(bonus[:, None], P[rows, here], r)
    next_token = sample(next_dist, generator, greedy)
    n_accepted = (path >= 0).sum(-1)
    return TreeVerdict(accept_prob, u, tried, path, n_accepted, next_dist, next_token, bonus)


def tree_emitted(ids: torch.Tensor, verdict: TreeVerdict) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, D+1] tokens each row emits (the accepted path, then the next token; padded with -1) and [B] lengths."""
    B = ids.shape[0]
    rows = torch.arange(B, device=ids.device)
    path = verdict.path
    tokens = torch.where(path >= 0, ids.gather(1, path.clamp_min(0)), -1)
    out = torch.cat([tokens, tokens.new_full((B, 1), -1)], dim=1)
    out[rows, verdict.n_accepted] = verdict.next_token
    return out, verdict.n_accepted + 1
