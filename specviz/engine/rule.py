"""The modified rejection rule (Leviathan et al. 2023), batched over rows; notation of docs/design.md.

A drafted token x is accepted iff u < a = min(1, p(x)/q(x)); at the first
rejection the next token is drawn from the residual max(0, p - q) normalised;
if every draft passes, the bonus is drawn from p at the position after them.
Together: P(emit x) = min(p, q)(x) + (p - min(p, q))(x) = p(x), so the output is
exactly the target's.

Everything here works on any number of rows at once: the decoder calls it with
one row per round, the statistical tests with thousands of seeds in one call,
so the tests sample through the very code the app runs. `acceptance_prob` and
`residual` are looked up at call time: the tests swap them for broken rules to
prove that they can catch one.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .sampling import sample


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


_RULES_RESIDUAL = residual   # the shortcut below holds for this residual only, not for a test's broken one


@dataclass
class Verdict:
    """The outcome of verifying B rows of K drafts; every tensor stays on the device."""

    accept_prob: torch.Tensor   # [B, K] min(1, p/q) of each drafted token
    u: torch.Tensor             # [B, K] the uniform draws
    n_accepted: torch.Tensor    # [B] drafts accepted before the first rejection
    next_dist: torch.Tensor     # [B, V] the residual (after a rejection) or p (bonus)
    next_token: torch.Tensor    # [B] the correction or the bonus, drawn from next_dist
    bonus: torch.Tensor         # [B] True where every draft of the row was accepted


def verify(P: torch.Tensor, Q: torch.Tensor, draft_ids: torch.Tensor, generator: torch.Generator | None,
           greedy: bool, n_drafted: torch.Tensor | None = None, *, accept_fn=None, residual_fn=None) -> Verdict:
    """Apply the rule to B rows: P [B, K+1, V] (target), Q [B, K, V] (draft), draft_ids [B, K].

    `greedy`: P and Q are greedy's one-hot rows (`sampling.probabilities`, `draw`, a lookup's one-hot q), and a
    correction is p's own row (below). `n_drafted` [B] gives rows that drafted fewer than K tokens (the adaptive
    stop); their later columns are ignored and their bonus comes from p at
    position n_drafted (causal attention makes P[:, :n+1] independent of the rest).
    `accept_fn` / `residual_fn` replace the two rules: only the classroom's teaching
    variants pass them (the decoder never does).
    """
    accept_fn = accept_fn or acceptance_prob
    residual_fn = residual_fn or residual
    B, K = draft_ids.shape
    rows = torch.arange(B, device=P.device)
    n_drafted = torch.full((B,), K, device=P.device) if n_drafted is None else n_drafted
    p_x = P[:, :K].gather(-1, draft_ids[..., None]).squeeze(-1)
    q_x = Q.gather(-1, draft_ids[..., None]).squeeze(-1)
    accept_prob = accept_fn(p_x, q_x)
    u = torch.rand(B, K, generator=generator, device=P.device)
    drafted = torch.arange(K, device=P.device) < n_drafted[:, None]
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
    return Verdict(accept_prob, u, n_accepted, next_dist, next_token, bonus)


def emitted_tokens(draft_ids: torch.Tensor, verdict: Verdict) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, K+1] tokens each row emits (accepted drafts, then the next token; padded with -1) and [B] lengths."""
    B, K = draft_ids.shape
    out = torch.cat([draft_ids, draft_ids.new_full((B, 1), -1)], dim=1)
    cols = torch.arange(K + 1, device=draft_ids.device)
    out = torch.where(cols < verdict.n_accepted[:, None], out, -1)
    out[torch.arange(B, device=draft_ids.device), verdict.n_accepted] = verdict.next_token
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
