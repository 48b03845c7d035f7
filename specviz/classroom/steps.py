"""The step mode's walk: the stops of a round, where each node stands at a stop, and moving through a trace.

Pure functions of the recorded `Round`s (specviz.trace.records); no Gradio, no torch.
A round is read as a draft tree of nodes (`nodes`): a tree round's own nodes, and a
chain's drafted tokens as a tree of one branch, each token hanging from the one
before it. One walk then serves both (docs/design.md, "One round", "Draft trees"):

    opening    a chain: the K drafted tokens with q (draft), p for each (verify);
               a tree: the whole tree
    test       one stop per node the rule tried, in the order it tried them: the children
               of the current node one after the other until one is accepted, then that
               one's children; a = min(1, r/q) against the residual r the node's rejected
               elder siblings left (p for a first child: every token of a chain)
    residual   after a rejected node that has a next sibling, the residual that sibling
               faces (a chain has no siblings, so no such stop)
    ending     the correction after a rejection, or the bonus after an accepted leaf

A chain's and a tree's stops keep their own names ("test"/"node", ...): the page
says "position" on a chain and "node" on a tree. The numbers at each stop are
`decisions`; the mass picture at a rejection `masses`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..trace.records import Round

KINDS = ("draft", "verify", "test", "correction", "bonus", "tree", "node", "residual")


@dataclass(frozen=True)
class Stop:
    kind: str                # one of KINDS
    pos: int | None = None   # 0-based index into nodes(round): the node a "test", "node" or "residual" stop is at


# ---------------------------------------------------------------- the nodes of a round
@dataclass(frozen=True)
class ChainNode:
    """A chain's drafted token read as a node of a one-branch tree: it hangs from the token before it and was
    tested against p itself. Every other attribute is the token's own. Its one job is to give a chain's record
    the node's parent, status, r and top_r; it goes once the recorder writes those on a chain's tokens."""

    token: Any               # the DraftToken
    parent: int
    status: str              # "accepted", "rejected" or "untried", as the walk reads it

    def __getattr__(self, name: str):
        if name.startswith("__"):   # copy and pickle probe for these before `token` is set
            raise AttributeError(name)
        return getattr(self.token, name)

    @property
    def r(self) -> float:
        return self.token.p

    @property
    def top_r(self) -> list:
        return self.token.top_p


def tested(rnd: Round) -> int:
    """How many drafted tokens of a chain were tested: all up to and including the first rejection."""
    return rnd.k if rnd.rejected_at is None else rnd.rejected_at + 1


def chain_nodes(rnd: Round) -> list[ChainNode]:
    """A chain round's drafted tokens as nodes: tested ones accepted up to the rejected one, the rest untried
    (a token tested and passed but cut after an end of sequence counts as tested: the chain showed its test)."""
    def status(i: int) -> str:
        if i >= tested(rnd):
            return "untried"
        return "rejected" if i == rnd.rejected_at else "accepted"

    return [ChainNode(tk, i - 1, status(i)) for i, tk in enumerate(rnd.drafted)]


def nodes(rnd: Round) -> list:
    """The round's nodes, read by attribute (token_id, text, q, p, accept_prob, u, status, parent, r, top_r,
    top_q): a tree's own, or a chain as its one branch."""
    return rnd.tree if rnd.tree else chain_nodes(rnd)


def verdicts(rnd: Round) -> list[str]:
    """What each node became, as the page names it: a tree's status, a chain's verdict (a token after the
    rejection is "discarded" there, "untried" in a tree)."""
    return [n.status for n in rnd.tree] if rnd.tree else [rnd.verdict(i) for i in range(rnd.k)]


def children(tree: list, parent: int) -> list[int]:
    """The nodes hanging from `parent` (-1: the root), in the order the rule tries them."""
    return [i for i, node in enumerate(tree) if node.parent == parent]


def tree_order(tree: list) -> list[int]:
    """The nodes the rule tried, in the order it tried them: the children of the current node one after the
    other until one is accepted, then that one's children; the walk ends where every child was rejected."""
    out, here = [], -1
    while True:
        tried = [i for i in children(tree, here) if tree[i].status != "untried"]
        out += tried
        accepted = [i for i in tried if tree[i].status == "accepted"]
        if not accepted:
            return out
        here = accepted[0]


def next_sibling(tree: list, node: int) -> int | None:
    """The child tried after `node` at the same parent (None: it was the last one)."""
    kids = children(tree, tree[node].parent)
    at = kids.index(node)
    return kids[at + 1] if at + 1 < len(kids) else None


# ---------------------------------------------------------------- the stops
def stops(rnd: Round) -> list[Stop]:
    """The stops of one round, in the order the decoder took the decisions."""
    tree = nodes(rnd)
    if rnd.tree:
        out, test = [Stop("tree")], "node"
    else:
        out, test = ([Stop("draft"), Stop("verify")] if rnd.drafted else []), "test"
    for i in tree_order(tree):
        out.append(Stop(test, i))
        if tree[i].status == "rejected" and next_sibling(tree, i) is not None:
            out.append(Stop("residual", i))
    if rnd.correction is not None:
        out.append(Stop("correction", None if rnd.tree else rnd.rejected_at))
    elif rnd.bonus is not None:
        out.append(Stop("bonus"))
    return out or [Stop("verify")]


def node_states(rnd: Round, stop: Stop, revealed: bool = True) -> list[str]:
    """Each node's state as far as the walk has got: its verdict once tested (the current node's only when
    `revealed`), after the walk's end also for the nodes it never reached, else 'pending'."""
    order = tree_order(nodes(rnd))
    if stop.kind in ("correction", "bonus"):
        done = set(order)
    elif stop.kind in ("tree", "draft", "verify"):
        done = set()
    else:
        at = order.index(stop.pos)
        done = set(order[:at + (stop.kind == "residual" or revealed)])
    over = stop == stops(rnd)[-1] and stop.kind in ("correction", "bonus")
    return [v if i in done or over else "pending" for i, v in enumerate(verdicts(rnd))]


def accepted_path(rnd: Round) -> list[int]:
    """The accepted nodes from the root down."""
    tree = nodes(rnd)
    return [i for i in tree_order(tree) if tree[i].status == "accepted"]


def level(rnd: Round, node: int) -> int:
    """How deep a node hangs (1 for the root's children)."""
    tree, depth = nodes(rnd), 1
    while tree[node].parent >= 0:
        node, depth = tree[node].parent, depth + 1
    return depth


def sibling_rank(rnd: Round, node: int) -> int:
    """1 for its parent's first child, 2 for the second ..."""
    tree = nodes(rnd)
    return children(tree, tree[node].parent).index(node) + 1


def last_rejected(rnd: Round) -> int | None:
    """The last node the walk rejected (the correction is drawn from the residual it left)."""
    tree = nodes(rnd)
    rejected = [i for i in tree_order(tree) if tree[i].status == "rejected"]
    return rejected[-1] if rejected else None


# ---------------------------------------------------------------- walking a trace
@dataclass(frozen=True)
class Cursor:
    round: int = 0           # 0-based index into the trace's rounds
    stop: int = 0            # 0-based index into stops(round)


def clamp(rounds: list[Round], cur: Cursor) -> Cursor:
    if not rounds:
        return Cursor()
    r = max(0, min(cur.round, len(rounds) - 1))
    return Cursor(r, max(0, min(cur.stop, len(stops(rounds[r])) - 1)))


def move(rounds: list[Round], cur: Cursor, delta: int) -> Cursor:
    """One decision forward (delta=+1) or back (-1), across round boundaries; stays put at either end."""
    cur = clamp(rounds, cur)
    if not rounds:
        return cur
    n = len(stops(rounds[cur.round]))
    if delta > 0:
        if cur.stop + 1 < n:
            return Cursor(cur.round, cur.stop + 1)
        return Cursor(cur.round + 1, 0) if cur.round + 1 < len(rounds) else cur
    if cur.stop > 0:
        return Cursor(cur.round, cur.stop - 1)
    if cur.round > 0:
        return Cursor(cur.round - 1, len(stops(rounds[cur.round - 1])) - 1)
    return cur


def at_end(rounds: list[Round], cur: Cursor) -> bool:
    return not rounds or move(rounds, cur, +1) == clamp(rounds, cur)
