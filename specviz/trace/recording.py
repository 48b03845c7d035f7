"""Turn one round's device tensors into the `Round` record every view, JSON file and bench reads, chain or tree.

Kept apart from the decoder loop so the loop stays readable and so the trace's
cost (extra softmaxes, top-5 lists, token texts) sits in one place that can be
measured and switched off (`record=False` keeps only tokens, verdicts, times).

A chain is the width-one tree: one packer (`round_numbers`) gathers on the device
every number a round's record needs, its drafts' numbers being the numbers of
its nodes, and they come back in ONE host transfer (`transfer`), read by name.
"""
from __future__ import annotations

import functools

import torch

from ..runtime.token_text import decode_tokens
from ..limits import TOP_N
from ..engine import rule
from ..engine.rule import Settled
from ..engine.sampling import SamplingConfig
from ..engine.speculative import RoundTensors
from ..engine.tree import TreeShape
from .records import Alt, Choice, DraftToken, Round

STATUSES = ("untried", "rejected", "accepted")   # a node's status as the packer counts it: tried + accepted


def unrecorded_token(token_id: int, accepted: bool, source: str) -> DraftToken:
    """A drafted token whose numbers were not recorded (record=False): NaN everywhere but the verdict."""
    nan = float("nan")
    return DraftToken(token_id=token_id, text="", q=nan, p=nan, accept_prob=nan, u=nan, accepted=accepted,
                      q_confidence=nan, p_confidence=nan, source=source)


class RoundRecorder:
    """Builds each round's `Round` from its tensors and its settled outcome, chain or tree; caches token texts
    across rounds. `drafter` is the run's drafting method as a Round records it ("model", "ngram", ..., "tree");
    `trees`: the run drafts trees, so a round whose tree came out one node wide is recorded node by node too (a
    chain run's rounds list their drafts only)."""

    def __init__(self, tokenizer, sampling: SamplingConfig, record: bool = True, clock=None, drafter: str = "model",
                 trees: bool = False):
        self.tokenizer, self.sampling, self.record_numbers, self.clock = tokenizer, sampling, record, clock
        self.drafter, self.trees = drafter, trees
        self._texts: dict[int, str] = {}

    def text_of(self, token_id: int) -> str:
        if token_id not in self._texts:
            self._texts[token_id] = decode_tokens(self.tokenizer, [token_id])[0]
        return self._texts[token_id]

    def alts(self, values: list[float], ids: list[float]) -> list[Alt]:
        """The top-n as alternatives, those of probability 0 left out: a one-hot (greedy) residual or a truncated
        (top-k, top-p) p has fewer than n, and topk's fillers at 0.00 are no alternatives."""
        return [Alt(int(i), self.text_of(int(i)), v) for v, i in zip(values, ids) if v > 0]

    def record(self, index: int, t: RoundTensors, outcome: Settled, marks: tuple[float, float, float]) -> Round:
        """The round's record; `marks` are the clock's readings at its start, after drafting, after verifying.

        A tree round records every node (`tree`) and its path as `drafted`. Its `seconds` run until the record is
        built, so the trace's own cost is counted.
        """
        started, drafted_at, verified_at = marks
        nodes = correction = bonus = None
        if not self.record_numbers:
            drafted = [unrecorded_token(tok, i < outcome.n_accepted, t.proposal.source)
                       for i, tok in enumerate(outcome.drafted)]
        else:
            shape = t.proposal.shape
            as_tree = not shape.is_chain() or self.trees and shape.size > 0
            got = transfer(round_numbers(t, outcome, self.sampling.greedy, as_tree))   # the round's one transfer
            nodes = self._nodes(got, shape) if as_tree else None
            drafted = self._drafted(got, outcome, t.proposal.source, as_tree)
            correction, bonus = self._next(got, outcome)
        return Round(index=index, drafted=drafted, rejected_at=outcome.rejected_at, correction=correction,
                     bonus=bonus, emitted=outcome.emitted, draft_seconds=drafted_at - started,
                     verify_seconds=verified_at - drafted_at, eos=outcome.eos, drafter=self.drafter, tree=nodes,
                     seconds=(self.clock() if self.clock else verified_at) - started)

    def _top(self, got: dict, name: str, row: int | None = None) -> list[Alt]:
        values, ids = got[name], got[name + "_ids"]
        return self.alts(values, ids) if row is None else self.alts(values[row], ids[row])

    def _nodes(self, got: dict, shape: TreeShape) -> list[DraftToken]:
        """Every node of a tree round with where it hangs and its status; a tried node with the r it was tested
        against and the tops of r and of its q (the classroom walks them)."""
        out = []
        for i, parent in enumerate(shape.parents):
            status = STATUSES[int(got["status"][i])]
            tried = {} if status == "untried" else \
                {"r": got["r"][i], "top_r": self._top(got, "r_top", i), "top_q": self._top(got, "q_top", i)}
            tok = int(got["ids"][i])
            out.append(DraftToken(token_id=tok, text=self.text_of(tok), q=got["q"][i], p=got["p"][i],
                                  accept_prob=got["a"][i], u=got["u"][i], parent=parent, status=status, **tried))
        return out

    def _drafted(self, got: dict, outcome: Settled, source: str, as_tree: bool) -> list[DraftToken]:
        """The drafts the chain's views read: a node's numbers, its confidences and (a chain's) its alternatives."""
        out = []
        for j, i in enumerate(got["shown"]):
            i, tok = int(i), outcome.drafted[j]
            tops = {} if as_tree else \
                {"top_q": self._top(got, "shown_q_top", j), "top_p": self._top(got, "shown_p_top", j)}
            out.append(DraftToken(token_id=tok, text=self.text_of(tok), q=got["q"][i], p=got["p"][i],
                                  accept_prob=got["a"][i], u=got["u"][i], accepted=j < outcome.n_accepted,
                                  q_confidence=got["q_conf"][j], p_confidence=got["p_conf"][j], source=source, **tops))
        return out

    def _next(self, got: dict, outcome: Settled) -> tuple[Choice | None, Choice | None]:
        """(correction, bonus), at most one of them: neither when an accepted EOS draft ended the round first."""
        y = outcome.next_token
        if y is None:
            return None, None
        choice = Choice(y, self.text_of(y), got["next_prob"][0], self._top(got, "next_top"))
        return (choice, None) if outcome.rejected_at is not None else (None, choice)


def round_numbers(t: RoundTensors, outcome: Settled, greedy: bool, as_tree: bool) -> dict[str, torch.Tensor]:
    """Every number a round's record needs, on the device, by name (`transfer` brings them back in one go).

    Every node's token, q, p (after its parent), a and u: a chain's drafts are its nodes. Recorded `as_tree`, also
    each node's status, the r it was tested against and the tops of r and q. Then the drafts `Round.drafted`
    shows ("shown": a chain's all, a tree's path and the child rejected at its end) with their untempered
    confidences and, a chain's, their alternatives; last the correction's or the bonus's probability and top.
    """
    prop, v, y = t.proposal, t.verdict, outcome.next_token
    ids, Q, P, shape = prop.ids[0], prop.q[0], t.P[0], prop.shape   # [N], [N, V], [N+1, V]
    n, N, device = min(TOP_N, P.shape[-1]), shape.size, ids.device
    after, first = shape_index(shape, device)
    nodes = torch.arange(N, device=device)
    out = {"ids": ids, "q": Q[nodes, ids], "p": P[after, ids], "a": v.accept_prob[0], "u": v.u[0]}
    if as_tree:
        R = tested_against(shape, P, Q)
        out |= {"status": v.tried[0].float() + v.accepted[0].float(), "r": R[nodes, ids]}
        out |= _top("r_top", R, n) | _top("q_top", Q, n)
    m, shown = outcome.n_accepted, torch.arange(shown_count(outcome, as_tree), device=device)
    end = v.path[0, m - 1:m] + 1 if m else first.new_zeros(1)   # [1] the row of P after the accepted path
    if as_tree:   # the accepted path, then the first child of its end (all of them were rejected)
        shown = torch.cat([v.path[0, :m], first[end]])[:len(shown)]
    rows = after[shown]
    p_soft = torch.softmax(t.p_logits[0, rows].float(), -1)                                              # [S, V]
    # A proposer without logits (e.g. n-gram lookup) is as sure as its q says.
    q_soft = Q[shown] if prop.logits is None else torch.softmax(prop.logits[0, shown].float(), -1)      # [S, V]
    tokens = ids[shown][:, None]
    out |= {"shown": shown, "p_conf": p_soft.gather(-1, tokens)[:, 0], "q_conf": q_soft.gather(-1, tokens)[:, 0]}
    if not as_tree:   # greedy p and q are one-hot: a chain's drafts show the untempered softmax's alternatives
        out |= _top("shown_p_top", p_soft if greedy else P[rows], n)
        out |= _top("shown_q_top", q_soft if greedy else Q[shown], n)
    if y is not None:
        dist = v.next_dist[0]                                                              # [V]
        if greedy and outcome.rejected_at is None:   # a greedy bonus: the softmax after the path (one-hot p would
            dist = torch.softmax(t.p_logits[0, end].float(), -1)[0]   # list one token at 1.00 and fillers at 0.00)
        out |= {"next_prob": v.next_dist[0, y:y + 1]} | _top("next_top", dist, n)
    return out


@functools.lru_cache(maxsize=256)
def shape_index(shape: TreeShape, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """What the host knows of a shape, on the device in one copy that waits for nothing queued there: [N] each
    node's row of P (after its parent) and [N+1] each row's first child (-1: none). Made once per shape and device
    (a chain's shape recurs every round; the tensors are only ever read)."""
    firsts = [kids[0] if kids else -1 for kids in shape.children]
    index = torch.tensor([parent + 1 for parent in shape.parents] + firsts, dtype=torch.long)
    return tuple(index.to(device, non_blocking=True).split([shape.size, shape.size + 1]))


def shown_count(outcome: Settled, as_tree: bool) -> int:
    """How many drafts `Round.drafted` lists: a chain's all (cut after an accepted EOS); recorded as a tree, the
    accepted path and the child rejected at its end only, though the round shows a chain's every draft."""
    drafted = len(outcome.drafted)
    return min(drafted, outcome.n_accepted + 1) if as_tree else drafted


def _top(name: str, dist: torch.Tensor, n: int) -> dict[str, torch.Tensor]:
    """The top-n of each row of `dist` [..., V]: values under `name`, token ids under name + "_ids"."""
    top = dist.topk(n, dim=-1)
    return {name: top.values, name + "_ids": top.indices}


def transfer(parts: dict[str, torch.Tensor]) -> dict[str, list]:
    """Every part in ONE device-to-host transfer (token ids ride along as floats: exact below 2^24), read back by
    name: a vector as a list, a matrix as its rows. The trace costs one host sync a round on a GPU, not one a list."""
    flat = torch.cat([(x if x.is_floating_point() else x.float()).reshape(-1) for x in parts.values()]).cpu().tolist()
    got, at = {}, 0
    for name, x in parts.items():
        values, at = flat[at:at + x.numel()], at + x.numel()
        cols = x.shape[-1] if x.dim() == 2 else 0
        got[name] = [values[r * cols:(r + 1) * cols] for r in range(x.shape[0])] if cols else values
    return got


def tested_against(shape: TreeShape, P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """[N, V] the distribution each node is tested against if it is tried: p after its parent for a first
    child, then the residual `sibling_residual` leaves after each earlier sibling's rejection (a node is
    tried only when every earlier sibling was rejected, so for a tried node this is the rule's own r).
    P [N+1, V] the target's rows (the root's, then after each node), Q [N, V] the q each node was drawn from."""
    out = torch.empty_like(Q)
    for e, kids in enumerate(shape.children):
        r = P[e]
        for j, node in enumerate(kids):
            out[node] = r
            if j + 1 < len(kids):
                r = rule.sibling_residual(r, Q[node])
    return out
