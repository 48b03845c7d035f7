"""A tree round's numbers at each stop of the step mode: which nodes are settled, the residuals.

Pure functions of the recorded `Round` (its `tree` of `DraftToken` nodes); no Gradio,
no torch. The stops themselves are `steps.tree_stops`: the tree whole, each
tried node's test a = min(1, r/q) against the residual r its earlier siblings
left, after each rejected node with a next sibling the residual that sibling
faces, then the correction or the bonus (specviz.engine.rule says why this keeps
the target's distribution).

A residual is shown as the chain's mass picture (`steps.Mass`) with r in the
place of p: r and q over the recorded top tokens, min(r, q) and max(0, r − q),
and below the next residual norm(max(0, r − q)) as the decoder computed it
(the next sibling's recorded `top_r`, or the correction's top after the last
child).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..trace.records import Choice, DraftToken, Round
from .steps import Mass, Stop, children, mass, next_sibling, tree_order, tree_stops


@dataclass(frozen=True)
class Change:
    """One token's probability before and after a rejection (None: outside the recorded top tokens)."""

    token_id: int
    text: str
    before: float | None
    after: float | None

    @property
    def changed(self) -> bool:
        return self.before is None or self.after is None or abs(self.after - self.before) > 5e-4


def node_states(rnd: Round, stop: Stop, revealed: bool = True) -> list[str]:
    """Each node's state as far as the walk has got: its verdict once tested (the current node's only when
    `revealed`), 'untried' for the nodes the walk never reached once it is over, else 'pending'."""
    order = tree_order(rnd.tree)
    all_stops = tree_stops(rnd)
    if stop.kind in ("correction", "bonus"):
        done = set(order)
    elif stop.kind == "tree":
        done = set()
    else:
        at = order.index(stop.pos)
        done = set(order[:at + (stop.kind == "residual" or revealed)])
    over = stop == all_stops[-1] and stop.kind in ("correction", "bonus")
    return [node.status if i in done else ("untried" if over else "pending") for i, node in enumerate(rnd.tree)]


def accepted_path(rnd: Round) -> list[int]:
    """The accepted nodes from the root down."""
    return [i for i in tree_order(rnd.tree) if rnd.tree[i].status == "accepted"]


def level(rnd: Round, node: int) -> int:
    """How deep a node hangs (1 for the root's children)."""
    depth = 1
    while rnd.tree[node].parent >= 0:
        node, depth = rnd.tree[node].parent, depth + 1
    return depth


def sibling_rank(rnd: Round, node: int) -> int:
    """1 for its parent's first child, 2 for the second ..."""
    return children(rnd.tree, rnd.tree[node].parent).index(node) + 1


def what_is_left(rnd: Round, node: int) -> Choice | None:
    """The residual after `node`'s rejection as the decoder kept it: the next sibling's tested-against top
    (its own token at the front of the mind: `prob` is r(sibling)), or after the last child the correction's."""
    sibling = next_sibling(rnd.tree, node)
    if sibling is None:
        return rnd.correction
    s = rnd.tree[sibling]
    if not s.top_r:
        return None
    return Choice(s.token_id, s.text, s.r if s.r is not None else 0.0, list(s.top_r))


def residual_mass(rnd: Round, node: int) -> Mass | None:
    """The mass picture of `node`'s rejection: r and q before it, the residual after it (None without the
    recorded top lists: an older trace). At a residual stop nothing is drawn from it yet: the next sibling
    is tested against it, so no token is marked as drawn; after the last child the correction is."""
    tn = rnd.tree[node]
    left = what_is_left(rnd, node)
    if not tn.top_r or left is None:
        return None
    m = mass(tn, left)
    z = mass_left(tn, left)
    if z is not None:   # exact: the estimated residuals of the tokens outside r′'s recorded top follow it too
        after = {a.token_id for a in left.top} | {left.token_id}
        r = [v if i in after else resid / z for i, v, resid in zip(m.ids, m.r, m.residual)]
        m = replace(m, r=r, reject_chance=min(1.0, z))
    if next_sibling(rnd.tree, node) is not None:
        m = replace(m, drawn=None)
    return m


def mass_left(node: DraftToken, left: Choice) -> float | None:
    """Σ max(0, r − q) over the vocabulary, the chance the node is rejected, from one token y recorded in all
    three lists (r, q and r′): r′(y) = (r(y) − q(y)) / Σ. The token with the largest r′ is used (the least
    rounding); None when no token was recorded in all three (the mass picture then estimates it)."""
    r = {a.token_id: a.prob for a in node.top_r}
    q = {a.token_id: a.prob for a in node.top_q}
    after = {a.token_id: a.prob for a in left.top} | {left.token_id: left.prob}
    known = [(v, r[i] - q[i]) for i, v in after.items() if i in r and i in q and v > 1e-6 and r[i] > q[i]]
    if not known:
        return None
    v, gap = max(known)
    return gap / v


def changes(rnd: Round, node: int) -> list[Change]:
    """The tokens whose probability a rejection moved: r before it against the residual after it, over the
    recorded top tokens of both, the rejected token first."""
    tn = rnd.tree[node]
    left = what_is_left(rnd, node)
    before = {a.token_id: a.prob for a in tn.top_r}
    if tn.r is not None:
        before.setdefault(tn.token_id, tn.r)
    after = {a.token_id: a.prob for a in (left.top if left else [])}
    if left is not None:
        after.setdefault(left.token_id, left.prob)
    texts = {a.token_id: a.text for a in [*tn.top_r, *(left.top if left else [])]} | {tn.token_id: tn.text}
    if left is not None:
        texts.setdefault(left.token_id, left.text)
    ids = sorted(texts, key=lambda i: (i != tn.token_id, -max(before.get(i, 0.0), after.get(i, 0.0))))
    # The rejected token leaves the residual whenever q covered it: max(0, r − q) at it is 0 when r(x) < q(x).
    if tn.token_id not in after and tn.r is not None and tn.r < tn.q:
        after[tn.token_id] = 0.0
    return [Change(i, texts[i], before.get(i), after.get(i)) for i in ids]


def last_rejected(rnd: Round) -> int | None:
    """The last node the walk rejected (the correction is drawn from the residual it left)."""
    rejected = [i for i in tree_order(rnd.tree) if rnd.tree[i].status == "rejected"]
    return rejected[-1] if rejected else None
