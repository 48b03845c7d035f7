"""A tree round's tensors -> its `Round` record: every node with its numbers, the path as `drafted`."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..limits import TOP_N
from .recording import RoundRecorder, RoundTensors, unrecorded_token
from ..engine.rule import Settled
from .records import Choice, DraftToken, Round, TreeNode
from ..engine.tree_drafter import TreeProposal
from ..engine.tree import TreeShape
from ..engine import tree_rule
from ..engine.tree_rule import TreeVerdict


@dataclass
class TreeRoundTensors:
    """What one tree round computed for B rows, still on the device (the decoder's B is 1)."""

    proposal: TreeProposal
    p_logits: torch.Tensor   # [B, N+1, V] the target's raw logits: after the root, then after each node
    P: torch.Tensor          # [B, N+1, V] p after the sampling transform
    verdict: TreeVerdict

    def first_row(self) -> tuple[list[int], list[int], int, int]:
        """(accepted path's node ids, drafts shown, accepted count, next token) of row 0 in one transfer.

        The drafts shown are the path's tokens and, after a rejection, the first child rejected at its end.
        """
        v, shape = self.verdict, self.proposal.shape
        m, y, *rest = torch.cat([v.n_accepted[:1], v.next_token[:1], v.path[0], self.proposal.ids[0]]).tolist()
        path, ids = rest[:m], rest[shape.max_depth:]
        shown = [ids[node] for node in path]
        stop = shape.children[path[-1] + 1 if path else 0]
        if stop:   # the walk stopped at a node with children: all of them were rejected
            shown.append(ids[stop[0]])
        return path, shown, m, y


def tested_against(shape: TreeShape, P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """[N, V] the distribution each node is tested against if it is tried: p after its parent for a first
    child, then the residual `sibling_residual` leaves after each earlier sibling's rejection (a node is
    tried only when every earlier sibling was rejected, so for a tried node this is the rule's own r)."""
    out = torch.empty_like(Q)
    for e, kids in enumerate(shape.children):
        r = P[e]
        for j, node in enumerate(kids):
            out[node] = r
            if j + 1 < len(kids):
                r = tree_rule.sibling_residual(r, Q[node])
    return out


class TreeRecorder(RoundRecorder):
    """`RoundRecorder` for tree rounds (and the budget's last, draft-free round, recorded as a chain's)."""

    def record(self, index: int, t, outcome: Settled, marks: tuple[float, float, float]) -> Round:
        if isinstance(t, RoundTensors):
            return super().record(index, t, outcome, "tree", marks)
        started, drafted_at, verified_at = marks
        nodes, correction, bonus = self._tree_numbers(t, outcome) if self.record_numbers else (None, None, None)
        shown = outcome.drafted
        if nodes is None:
            drafted = [unrecorded_token(tok, i < outcome.n_accepted, t.proposal.source) for i, tok in enumerate(shown)]
        else:
            drafted = self._path_tokens(t, nodes, outcome)
        return Round(index=index, drafted=drafted, rejected_at=outcome.rejected_at, correction=correction,
                     bonus=bonus, emitted=outcome.emitted, draft_seconds=drafted_at - started,
                     verify_seconds=verified_at - drafted_at, eos=outcome.eos, drafter="tree", tree=nodes,
                     seconds=(self.clock() if self.clock else verified_at) - started)

    def _path_tokens(self, t: TreeRoundTensors, nodes: list[TreeNode], outcome: Settled) -> list[DraftToken]:
        """The drafts shown as chain tokens: the accepted path, then the first rejected child at its end."""
        shape = t.proposal.shape
        path = [i for i, node in enumerate(nodes) if node.status == "accepted"]
        stop = shape.children[path[-1] + 1 if path else 0]
        order = (path + [stop[0]] if stop else path)[:len(outcome.drafted)]
        source = t.proposal.source
        q_conf, p_conf = self._confidences(t, order)
        return [DraftToken(token_id=nodes[i].token_id, text=nodes[i].text, q=nodes[i].q, p=nodes[i].p,
                           accept_prob=nodes[i].accept_prob, u=nodes[i].u, accepted=j < outcome.n_accepted,
                           q_confidence=q_conf[j], p_confidence=p_conf[j], source=source)
                for j, i in enumerate(order)]

    @staticmethod
    def _confidences(t: TreeRoundTensors, order: list[int]) -> tuple[list[float], list[float]]:
        """The path's untempered softmax confidences (draft, target), as a chain round shows them: a greedy
        tree's q and p are one-hot. A proposer without logits (lookup) is as sure as its q says."""
        if not order:
            return [], []
        ids, shape = t.proposal.ids[0], t.proposal.shape
        at = torch.tensor(order, device=ids.device)
        tokens = ids[at][:, None]
        after = torch.tensor([shape.parents[i] + 1 for i in order], device=ids.device)
        p_conf = torch.softmax(t.p_logits[0, after].float(), -1).gather(-1, tokens)[:, 0]
        logits = t.proposal.logits
        q_conf = (t.proposal.q[0, at] if logits is None else torch.softmax(logits[0, at].float(), -1)).gather(-1, tokens)
        flat = torch.cat([q_conf.reshape(-1), p_conf]).cpu().tolist()
        return flat[:len(order)], flat[len(order):]

    def _node_tops(self, tops: list[float], i: int, N: int, n: int) -> dict:
        """Node i's top_r and top_q from the flat [r values, r ids, q values, q ids] blocks of [N, n] each."""
        block = [tops[b * N * n + i * n:b * N * n + (i + 1) * n] for b in range(4)]
        return {"top_r": self._alts(block[0], block[1]), "top_q": self._alts(block[2], block[3])}

    def _next_top(self, t: TreeRoundTensors, nodes: torch.Tensor, n: int):
        """The top-n alternatives of the correction or bonus: the distribution the token was drawn from, except a
        greedy bonus's, which shows the untempered softmax at the end of the accepted path as a chain's greedy
        bonus does (the one-hot p there listed one token at 1.00 and n - 1 fillers at 0.00, issue 30)."""
        if not self.sampling.greedy or not bool(t.verdict.bonus[0]):
            return t.verdict.next_dist[0].topk(n)
        # Accepted nodes form one path, parents before children: the deepest has the largest index.
        row = (t.verdict.accepted[0].long() * (nodes + 1)).max()
        return torch.softmax(t.p_logits[0, row].float(), -1).topk(n)

    def _tree_numbers(self, t: TreeRoundTensors, outcome: Settled):
        """Every node's numbers and the correction or bonus, in ONE transfer (ids ride along as floats)."""
        shape, v, y = t.proposal.shape, t.verdict, outcome.next_token
        ids, Q, P = t.proposal.ids[0], t.proposal.q[0], t.P[0]
        nodes = torch.arange(shape.size, device=ids.device)
        parents = torch.tensor(shape.parents, device=ids.device) + 1
        status = v.tried[0].float() + v.accepted[0].float()    # 0 untried, 1 rejected, 2 accepted
        n = min(TOP_N, P.shape[-1])
        top = self._next_top(t, nodes, n)
        parts = [ids.float(), Q[nodes, ids], P[parents, ids], v.accept_prob[0], v.u[0], status,
                 top.values, top.indices.float(), v.next_dist[0, y].reshape(1) if y is not None else top.values[:1]]
        N = shape.size
        R = tested_against(shape, P, Q)
        top_r, top_q = R.topk(n), Q.topk(n)
        parts += [R[nodes, ids], top_r.values.flatten(), top_r.indices.flatten().float(), top_q.values.flatten(),
                  top_q.indices.flatten().float()]
        flat = torch.cat(parts).cpu().tolist()
        cols = [flat[i * N:(i + 1) * N] for i in range(6)]
        values, indices, (prob,) = flat[6 * N:6 * N + n], flat[6 * N + n:6 * N + 2 * n], flat[6 * N + 2 * n:][:1]
        r_at, tops = flat[6 * N + 2 * n + 1:7 * N + 2 * n + 1], flat[7 * N + 2 * n + 1:]
        names = ("untried", "rejected", "accepted")
        tree = [TreeNode(token_id=int(tok), text=self.text_of(int(tok)), parent=shape.parents[i], q=cols[1][i],
                         p=cols[2][i], accept_prob=cols[3][i], u=cols[4][i], status=names[int(cols[5][i])],
                         **(self._node_tops(tops, i, N, n) | {"r": r_at[i]} if cols[5][i] > 0 else {}))
                for i, tok in enumerate(cols[0])]
        if y is None:
            return tree, None, None
        choice = Choice(y, self.text_of(y), prob, self._alts(values, indices))
        return (tree, choice, None) if outcome.rejected_at is not None else (tree, None, choice)
