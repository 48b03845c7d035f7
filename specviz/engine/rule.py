"""The modified rejection rule (Leviathan et al. 2023), batched over rows, for any draft tree; notation of
docs/design.md. A chain is the width-one tree and keeps its own fast path inside `verify`.

A chain: a drafted token x is accepted iff u < a = min(1, p(x)/q(x)); at the first
rejection the next token is drawn from the residual max(0, p - q) normalised;
if every draft passes, the bonus is drawn from p at the position after them.
Together: P(emit x) = min(p, q)(x) + (p - min(p, q))(x) = p(x), so the output is
exactly the target's.

A tree: walk down from the root. At the current node the target's distribution is
p = P[node]. Its children x_1, x_2, ... are tried in order, child j against the
residual r_j left by the siblings rejected before it:

    r_1 = p,   accept x_j iff u_j < min(1, r_j(x_j) / q_j(x_j)),   r_{j+1} = norm(max(0, r_j - q_j)),

where q_j is the distribution child j was drawn from given the siblings drawn
before it. The first accepted child becomes the current node and the walk goes
on; when every child is rejected the next token is drawn from the last residual
(the correction); at a leaf it is drawn from p there (the bonus). With one child
per node this is the chain's rule, step for step.

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

Everything here works on any number of rows at once: the decoder calls it with
one row per round, the statistical tests with thousands of seeds in one call,
so the tests sample through the very code the app runs. `acceptance_prob`,
`residual` and `sibling_residual` are looked up at call time: the tests swap them
for broken rules to prove that they can catch one.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .proposal import Proposal
from .sampling import sample
from .tree import TreeShape


def acceptance_prob(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x)/q(x)) for drafted tokens x (q(x) > 0 since x was drawn from q)."""
    return torch.clamp(p_x / q_x, max=1.0)


def residual(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """Rows of max(0, p - q), normalised: where the correction is drawn after a rejection."""
    r = torch.clamp(P - Q, min=0.0)
    mass = r.sum(-1, keepdim=True)
    # p == q leaves no residual mass; such a row is never used (a rejection needs
    # p(x) < q(x)), but it must still be a valid distribution to index into.
    return torch.where(mass > 0, r / mass.clamp_min(1e-30), P)


def sibling_residual(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """r_{j+1} = norm(max(0, r_j - q_j)): what is left of the target after child j's rejection."""
    return residual(r, q)


_RULES_RESIDUAL = residual   # the shortcut below holds for this residual only, not for a test's broken one


@dataclass
class Verdict:
    """The outcome of verifying B rows of N drafted nodes (a chain: its K drafts); every tensor stays on the device."""

    accept_prob: torch.Tensor   # [B, N] min(1, r(x)/q(x)) of each tried node (a chain: of every draft)
    u: torch.Tensor             # [B, N] the uniform draws
    tried: torch.Tensor         # [B, N] the node was tested (accepted or rejected)
    path: torch.Tensor          # [B, D] accepted node ids in depth order, -1 after the last
    n_accepted: torch.Tensor    # [B] length of the accepted path
    next_dist: torch.Tensor     # [B, V] the residual (after a rejection) or p at the path's end (bonus)
    next_token: torch.Tensor    # [B] the correction or the bonus, drawn from next_dist
    bonus: torch.Tensor         # [B] True where the path ended at a leaf: nothing was rejected there

    @property
    def accepted(self) -> torch.Tensor:
        """[B, N] the node is on the accepted path."""
        N = self.u.shape[1]
        hits = torch.zeros(self.u.shape[0], N + 1, dtype=torch.bool, device=self.u.device)
        hits.scatter_(1, torch.where(self.path >= 0, self.path, N), True)
        return hits[:, :N]


def verify(P: torch.Tensor, proposal: Proposal, generator: torch.Generator | None, greedy: bool, *,
           u: torch.Tensor | None = None, accept_fn=None, residual_fn=None) -> Verdict:
    """Apply the rule to B rows of one proposal: P [B, N+1, V] (row 0 at the root, row i+1 after node i; a chain's
    row i+1 is after draft i), the proposal's q [B, N, V], ids [B, N] and shape.

    `greedy`: P and Q are greedy's one-hot rows (`sampling.probabilities`, `draw`, a lookup's one-hot q), and a
    chain's correction is p's own row (below). The proposal's `n_drafted` [B] (a chain only) gives rows that
    drafted fewer than N tokens (the adaptive stop); their later columns are ignored and their bonus comes from p
    at position n_drafted (causal attention makes P[:, :n+1] independent of the rest). `u` [B, N] replaces the uniform draws
    (the exact enumeration and a replay pass them; the decoder never does). `accept_fn` / `residual_fn` replace
    the chain's two rules: only the classroom's teaching variants pass them (the decoder never does).
    """
    Q, ids, shape, n_drafted = proposal.q, proposal.ids, proposal.shape, proposal.n_drafted
    if u is None:
        u = torch.rand(*ids.shape, generator=generator, device=P.device)
    if shape.is_chain():
        return _verify_chain(P, Q, ids, u, generator, greedy, n_drafted,
                             (accept_fn or acceptance_prob, residual_fn or residual))
    if n_drafted is not None or accept_fn is not None or residual_fn is not None:
        raise ValueError("a tree is verified by the rule as it is, every node drafted")
    return _verify_tree(P, Q, ids, shape, u, generator, greedy)


def _verify_chain(P, Q, draft_ids, u, generator, greedy, n_drafted, rules) -> Verdict:
    """The width-one tree on its fast path: every draft's ratio at once, the first rejection by a cumulative
    product, no walk. `rules`: (acceptance, residual)."""
    accept_fn, residual_fn = rules
    B, K = draft_ids.shape
    rows = torch.arange(B, device=P.device)
    n_drafted = torch.full((B,), K, device=P.device) if n_drafted is None else n_drafted
    p_x = P[:, :K].gather(-1, draft_ids[..., None]).squeeze(-1)
    q_x = Q.gather(-1, draft_ids[..., None]).squeeze(-1)
    accept_prob = accept_fn(p_x, q_x)
    cols = torch.arange(K, device=P.device)
    drafted = cols < n_drafted[:, None]
    n_accepted = ((u < accept_prob) & drafted).long().cumprod(-1).sum(-1)
    bonus = n_accepted == n_drafted
    if greedy and residual_fn is _RULES_RESIDUAL:
        # One-hot p and q: a rejected x_j has p(x_j) = 0 and q = its one-hot, so max(0, p - q) = p, normalised by 1:
        # the residual is p_j itself, bit for bit (the [K, V] residual it saves is ~1 % of a CPU round).
        next_dist = P[rows, n_accepted]
    else:
        # Row j < K of `after` is the residual after rejecting x_j; row K is p_{K+1}.
        after = torch.cat([residual_fn(P[:, :K], Q), P[:, K:]], dim=1)
        next_dist = torch.where(bonus[:, None], P[rows, n_accepted], after[rows, n_accepted])
    next_token = sample(next_dist, generator, greedy)
    path = torch.where(cols < n_accepted[:, None], cols, -1)
    tried = drafted & (cols <= n_accepted[:, None])
    return Verdict(accept_prob, u, tried, path, n_accepted, next_dist, next_token, bonus)


def child_table(shape: TreeShape, device) -> torch.Tensor:
    """[N + 1, W] children of the root (row 0) and of each node (row i + 1), padded with -1."""
    width = max(len(c) for c in shape.children)
    table = torch.full((shape.size + 1, max(width, 1)), -1, dtype=torch.long)
    for e, kids in enumerate(shape.children):
        table[e, :len(kids)] = torch.tensor(kids, dtype=torch.long)
    return table.to(device)


def _verify_tree(P, Q, ids, shape: TreeShape, u, generator, greedy) -> Verdict:
    """Walk B rows down the tree, one depth at a time, each node's children in rank order."""
    B, N = ids.shape
    device = P.device
    rows = torch.arange(B, device=device)
    table = child_table(shape, device)
    u = u.to(device)
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
            a = acceptance_prob(r.gather(-1, x).squeeze(-1), q.gather(-1, x).squeeze(-1))
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
    return Verdict(accept_prob, u, tried, path, n_accepted, next_dist, next_token, bonus)


def emitted_tokens(ids: torch.Tensor, verdict: Verdict) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, D+1] tokens each row emits (the accepted path, then the next token; padded with -1) and [B] lengths."""
    B = ids.shape[0]
    rows = torch.arange(B, device=ids.device)
    path = verdict.path
    tokens = torch.where(path >= 0, ids.gather(1, path.clamp_min(0)), -1)
    out = torch.cat([tokens, tokens.new_full((B, 1), -1)], dim=1)
    out[rows, verdict.n_accepted] = verdict.next_token
    return out, verdict.n_accepted + 1


@dataclass(frozen=True)
class Settled:
    """One row's verdict read on the host, with EOS applied: what the round shows and emits."""

    drafted: list[int]          # the drafts shown: all of them, or those up to an accepted EOS draft
    n_accepted: int             # m: the caches keep the sequence up to the m accepted drafts
    emitted: list[int]          # the accepted drafts, then the next token, cut after the first EOS
    next_token: int | None      # the correction or bonus; None when an accepted EOS draft ended the round first
    eos: bool                   # the round emitted an end-of-sequence token

    @property
    def rejected_at(self) -> int | None:
        return self.n_accepted if self.next_token is not None and self.n_accepted < len(self.drafted) else None


def settle(drafted: list[int], n_accepted: int, next_token: int, eos: set[int] | frozenset[int]) -> Settled:
    """Settle a round (pure): the accepted drafts and the next token, cut after the first EOS among them."""
    emitted = drafted[:n_accepted] + [next_token]
    cut = next((i + 1 for i, tok in enumerate(emitted) if tok in eos), len(emitted))
    if cut <= n_accepted:   # the stream ended inside the accepted drafts: the next token is never used
        return Settled(drafted[:cut], n_accepted, emitted[:cut], None, True)
    return Settled(drafted, n_accepted, emitted, next_token, next_token in eos)
