"""The mass picture of a rejection: where the mass of r (p for a chain's token) and q goes, and what is left.

Pure functions of the recorded `Round`s (specviz.trace.records); no Gradio, no torch.
A rejected node's picture is r and q over the recorded top tokens, min(r, q) (what
leaves as accepted drafts) and max(0, r − q), and below it the residual
norm(max(0, r − q)) as the decoder computed it: the correction's top on a chain or
after a tree's last child; the next sibling's recorded `top_r` after a rejected
child with a next sibling, which is then tested against it (specviz.engine.rule says
why this keeps the target's distribution).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..trace.records import Choice, Round
from .decisions import top_lists
from .steps import next_sibling, nodes


@dataclass(frozen=True)
class Mass:
    """p and q over the recorded top tokens of a position, split into min(p, q) and max(0, p − q)."""

    ids: list[int]
    texts: list[str]
    p: list[float]
    q: list[float]
    overlap: list[float]          # min(p, q): what leaves as accepted drafts
    residual: list[float]         # max(0, p − q): what the correction must add back
    r: list[float | None]         # the residual normalised (recorded where the decoder kept it, else estimated)
    reject_chance: float          # 1 − Σ min(p, q): P(the test fails) over the whole vocabulary (estimated)
    drawn: int | None             # index into ids of the correction, if any
    exact_r: bool                 # r came from the decoder's own residual top-5


def mass(node, correction: Choice | None, exact_r: bool = True) -> Mass:
    """The mass picture of a tested node (r in the place of p); `exact_r` False for an approximate (re-drawn)
    correction."""
    p, q, texts = top_lists(node)
    rec = {a.token_id: a.prob for a in correction.top} if correction is not None else {}
    if correction is not None:
        texts.setdefault(correction.token_id, correction.text)
        rec.setdefault(correction.token_id, correction.prob)
    ids = sorted(texts, key=lambda i: -max(p.get(i, 0.0), q.get(i, 0.0)))
    pv, qv = [p.get(i, 0.0) for i in ids], [q.get(i, 0.0) for i in ids]
    overlap = [min(a, b) for a, b in zip(pv, qv)]
    resid = [max(0.0, a - b) for a, b in zip(pv, qv)]
    # P(reject) = Σ max(0, p − q) over the vocabulary. The decoder's exact r at the drawn token gives it
    # as (p − q)/r; without that, the shown tokens' residual is the best (lower) estimate.
    reject = sum(resid)
    if correction is not None and exact_r:
        c = ids.index(correction.token_id)
        if resid[c] > 0 and correction.prob > 0:
            reject = max(reject, resid[c] / correction.prob)
    r = [rec.get(i) if exact_r and i in rec else (m / reject if reject > 0 else None) for i, m in zip(ids, resid)]
    drawn = ids.index(correction.token_id) if correction is not None else None
    return Mass(ids, [texts[i] for i in ids], pv, qv, overlap, resid, r, min(1.0, reject), drawn, exact_r)


def what_is_left(rnd: Round, node: int) -> Choice | None:
    """The residual after `node`'s rejection as the decoder kept it: the next sibling's tested-against top
    (its own token at the front of the mind: `prob` is r(sibling)), or after the last child the correction's."""
    tree = nodes(rnd)
    sibling = next_sibling(tree, node)
    if sibling is None:
        return rnd.correction
    s = tree[sibling]
    if not s.top_r:
        return None
    return Choice(s.token_id, s.text, s.r if s.r is not None else 0.0, list(s.top_r))


def rejection_mass(rnd: Round, node: int, exact_r: bool = True) -> Mass | None:
    """The mass picture of `node`'s rejection: r and q before it, the residual after it. A chain's rejection is
    the correction's picture as the page has always drawn it. On a tree: None without the recorded top lists
    (an older trace); the rejection chance exact where one token was recorded in all three lists
    (`mass_left`); at a residual stop nothing is drawn from it yet: the next sibling is tested against it, so
    no token is marked as drawn; after the last child the correction is."""
    tn = nodes(rnd)[node]
    left = what_is_left(rnd, node)
    if not rnd.tree:
        return mass(tn, left, exact_r)
    if not tn.top_r or left is None:
        return None
    m = mass(tn, left)
    z = mass_left(tn, left)
    if z is not None:   # exact: the estimated residuals of the tokens outside r′'s recorded top follow it too
        after = {a.token_id for a in left.top} | {left.token_id}
        r = [v if i in after else resid / z for i, v, resid in zip(m.ids, m.r, m.residual)]
        m = replace(m, r=r, reject_chance=min(1.0, z))
    if next_sibling(nodes(rnd), node) is not None:
        m = replace(m, drawn=None)
    return m


def mass_left(node, left: Choice) -> float | None:
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


# ---------------------------------------------------------------- what a rejection moved
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


def changes(rnd: Round, node: int) -> list[Change]:
    """The tokens whose probability a rejection moved: r before it against the residual after it, over the
    recorded top tokens of both, the rejected token first."""
    tn = nodes(rnd)[node]
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
