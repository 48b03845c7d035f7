"""A tree round's numbers for its `Round` record: every node with its numbers, the path as `drafted`.

`specviz.trace.recording.RoundRecorder` calls these for a tree round, passing itself as `recorder` (token
texts, alternatives, the sampling), so token texts stay cached across rounds of either shape.
"""
from __future__ import annotations

import torch

from ..limits import TOP_N
from ..engine.rule import Settled
from .records import Choice, DraftToken, TreeNode
from ..engine.tree import TreeShape
from ..engine import rule


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
                r = rule.sibling_residual(r, Q[node])
    return out


def path_tokens(t, nodes: list[TreeNode], outcome: Settled) -> list[DraftToken]:
    """The drafts shown as chain tokens: the accepted path, then the first rejected child at its end."""
    shape = t.proposal.shape
    path = [i for i, node in enumerate(nodes) if node.status == "accepted"]
    stop = shape.children[path[-1] + 1 if path else 0]
    order = (path + [stop[0]] if stop else path)[:len(outcome.drafted)]
    source = t.proposal.source
    q_conf, p_conf = _confidences(t, order)
    return [DraftToken(token_id=nodes[i].token_id, text=nodes[i].text, q=nodes[i].q, p=nodes[i].p,
                       accept_prob=nodes[i].accept_prob, u=nodes[i].u, accepted=j < outcome.n_accepted,
                       q_confidence=q_conf[j], p_confidence=p_conf[j], source=source)
            for j, i in enumerate(order)]


def _confidences(t, order: list[int]) -> tuple[list[float], list[float]]:
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


def _node_tops(recorder, tops: list[float], i: int, N: int, n: int) -> dict:
    """Node i's top_r and top_q from the flat [r values, r ids, q values, q ids] blocks of [N, n] each."""
    block = [tops[b * N * n + i * n:b * N * n + (i + 1) * n] for b in range(4)]
    return {"top_r": recorder.alts(block[0], block[1]), "top_q": recorder.alts(block[2], block[3])}


def _next_top(greedy: bool, t, nodes: torch.Tensor, n: int):
    """The top-n alternatives of the correction or bonus: the distribution the token was drawn from, except a
    greedy bonus's, which shows the untempered softmax at the end of the accepted path as a chain's greedy
    bonus does (the one-hot p there listed one token at 1.00 and n - 1 fillers at 0.00)."""
    if not greedy or not bool(t.verdict.bonus[0]):
        return t.verdict.next_dist[0].topk(n)
    # Accepted nodes form one path, parents before children: the deepest has the largest index.
    row = (t.verdict.accepted[0].long() * (nodes + 1)).max()
    return torch.softmax(t.p_logits[0, row].float(), -1).topk(n)


def tree_numbers(recorder, t, outcome: Settled):
    """Every node's numbers and the correction or bonus, in ONE transfer (ids ride along as floats)."""
    shape, v, y = t.proposal.shape, t.verdict, outcome.next_token
    ids, Q, P = t.proposal.ids[0], t.proposal.q[0], t.P[0]
    nodes = torch.arange(shape.size, device=ids.device)
    parents = torch.tensor(shape.parents, device=ids.device) + 1
    status = v.tried[0].float() + v.accepted[0].float()    # 0 untried, 1 rejected, 2 accepted
    n = min(TOP_N, P.shape[-1])
    top = _next_top(recorder.sampling.greedy, t, nodes, n)
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
    statuses = ("untried", "rejected", "accepted")
    tree = [TreeNode(token_id=int(tok), text=recorder.text_of(int(tok)), parent=shape.parents[i], q=cols[1][i],
                     p=cols[2][i], accept_prob=cols[3][i], u=cols[4][i], status=statuses[int(cols[5][i])],
                     **(_node_tops(recorder, tops, i, N, n) | {"r": r_at[i]} if cols[5][i] > 0 else {}))
            for i, tok in enumerate(cols[0])]
    if y is None:
        return tree, None, None
    choice = Choice(y, recorder.text_of(y), prob, recorder.alts(values, indices))
    return (tree, choice, None) if outcome.rejected_at is not None else (tree, None, choice)
