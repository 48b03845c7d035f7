"""The step mode's logic: the stops of a round, the numbers at each stop, re-drawn u, the round's summary.

Pure functions of the recorded `Round`s (specviz.trace.records); no Gradio, no torch.
A round is walked as the decoder ran it (docs/design.md, "One round"):

    draft      the K drafted tokens with q
    verify     p for each of them (one target forward)
    test i     one stop per drafted token that was tested, up to the first rejection:
               a = min(1, p/q); accepted iff u < a
    correction after a rejection: drawn from the residual max(0, p − q) normalised
    bonus      after K acceptances: one more token from p at position K+1

Re-drawing u replays a round with fresh uniforms from a shown seed. Only the
verdicts can be recomputed exactly (the recorded p and q are exact); a
correction at a *new* rejection point can only be approximated from the
recorded top-5 lists, and a bonus that the recorded run never drew is unknown.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ..trace.records import Alt, Choice, DraftToken, Round

KINDS = ("draft", "verify", "test", "correction", "bonus", "tree", "node", "residual")


@dataclass(frozen=True)
class Stop:
    kind: str                # one of KINDS
    pos: int | None = None   # 0-based index into Round.drafted, for "test" stops


@dataclass(frozen=True)
class Decision:
    """The numbers of one acceptance test: a = min(1, p/q); accepted iff u < a."""

    p: float
    q: float
    a: float
    u: float

    @property
    def accepted(self) -> bool:
        return self.u < self.a


def tested(rnd: Round) -> int:
    """How many drafted tokens were tested: all up to and including the first rejection."""
    return rnd.k if rnd.rejected_at is None else rnd.rejected_at + 1


def stops(rnd: Round) -> list[Stop]:
    """The stops of one round, in the order the decoder took the decisions."""
    if rnd.tree:
        return tree_stops(rnd)
    out = [Stop("draft"), Stop("verify")] if rnd.drafted else []
    out += [Stop("test", i) for i in range(tested(rnd))]
    if rnd.correction is not None:
        out.append(Stop("correction", rnd.rejected_at))
    elif rnd.bonus is not None:
        out.append(Stop("bonus"))
    return out or [Stop("verify")]


def decision(tk: DraftToken) -> Decision:
    """The recorded test of a drafted token (a as the decoder computed it, not re-rounded)."""
    return Decision(p=tk.p, q=tk.q, a=tk.accept_prob, u=tk.u)


# ---------------------------------------------------------------- a draft tree, node by node
def children(tree: list[DraftToken], parent: int) -> list[int]:
    """The nodes hanging from `parent` (-1: the root), in the order the rule tries them."""
    return [i for i, node in enumerate(tree) if node.parent == parent]


def tree_order(tree: list[DraftToken]) -> list[int]:
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


def next_sibling(tree: list[DraftToken], node: int) -> int | None:
    """The child tried after `node` at the same parent (None: it was the last one)."""
    kids = children(tree, tree[node].parent)
    at = kids.index(node)
    return kids[at + 1] if at + 1 < len(kids) else None


def tree_stops(rnd: Round) -> list[Stop]:
    """The stops of a tree round: the tree whole, each tried node's test, after each rejected node that has a
    next sibling the residual that sibling is tested against, then the correction or the bonus."""
    out = [Stop("tree")]
    for node in tree_order(rnd.tree):
        out.append(Stop("node", node))
        if rnd.tree[node].status == "rejected" and next_sibling(rnd.tree, node) is not None:
            out.append(Stop("residual", node))
    if rnd.correction is not None:
        out.append(Stop("correction"))
    elif rnd.bonus is not None:
        out.append(Stop("bonus"))
    return out


def node_decision(node: DraftToken) -> Decision:
    """A node's recorded test: against the residual r its earlier siblings left (p for a first child), so the
    formula's "p" is r. Older traces lack r: it is p for a first child, else a·q where a < 1 shows it."""
    r = node.r if node.r is not None else (node.accept_prob * node.q if node.accept_prob < 1 else node.p)
    return Decision(p=r, q=node.q, a=node.accept_prob, u=node.u)


def stop_decision(rnd: Round, stop: Stop) -> Decision | None:
    """The test a stop shows (a chain's drafted token or a tree's node), None at a stop without one."""
    if stop.kind == "test":
        return decision(rnd.drafted[stop.pos])
    return node_decision(rnd.tree[stop.pos]) if stop.kind == "node" else None


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


# ---------------------------------------------------------------- re-drawing u
@dataclass(frozen=True)
class Redrawn:
    """A round replayed with fresh uniforms; `round` carries the new u, verdicts and what follows them."""

    round: Round
    changed: bool            # the rejection point moved (or appeared / disappeared)
    approximate: bool        # the correction comes from the top-5 lists, not the full residual
    bonus_unknown: bool      # every draft now passes, but the recorded run never drew a bonus


def uniforms(seed: int, round_index: int, draw: int, k: int) -> list[float]:
    """The u of draw `draw` (≥ 1) of a round: reproducible from the seed shown on the page."""
    rng = random.Random(f"specviz-classroom:{seed}:{round_index}:{draw}")
    return [rng.random() for _ in range(k)]


def approximate_residual(tk: DraftToken) -> list[Alt]:
    """max(0, p − q) over the recorded top tokens of a position, normalised: the residual as far as it was recorded.

    Tokens outside both top-5 lists are missing, so this is an approximation;
    the decoder draws from the residual over the whole vocabulary.
    """
    p = {a.token_id: a.prob for a in tk.top_p}
    q = {a.token_id: a.prob for a in tk.top_q}
    p.setdefault(tk.token_id, tk.p)
    q.setdefault(tk.token_id, tk.q)
    texts = {a.token_id: a.text for a in [*tk.top_p, *tk.top_q]} | {tk.token_id: tk.text}
    mass = {i: max(0.0, p.get(i, 0.0) - q.get(i, 0.0)) for i in texts}
    total = sum(mass.values())
    if total <= 0:
        return []
    alts = [Alt(i, texts[i], m / total) for i, m in mass.items() if m > 0]
    return sorted(alts, key=lambda a: -a.prob)


def redraw(rnd: Round, seed: int, draw: int) -> Redrawn:
    """The round with u from `uniforms(seed, rnd.index, draw)`; draw 0 is the recorded round."""
    if draw <= 0 or not rnd.drafted or rnd.tree:   # a tree's re-draw would re-walk the tree: not offered
        return Redrawn(rnd, False, False, False)
    us = uniforms(seed, rnd.index, draw, rnd.k)
    drafted, rejected_at = [], None
    for i, (tk, u) in enumerate(zip(rnd.drafted, us)):
        ok = rejected_at is None and u < tk.accept_prob
        if rejected_at is None and not ok:
            rejected_at = i
        drafted.append(replace(tk, u=u, accepted=ok))
    changed = rejected_at != rnd.rejected_at
    correction, bonus, approximate, unknown = rnd.correction, rnd.bonus, False, False
    if changed and rejected_at is not None:
        correction, bonus, approximate = _approximate_correction(rnd.drafted[rejected_at], seed, rnd.index, draw), \
            None, True
    elif changed:
        correction, unknown = None, True
    kept = [tk.token_id for tk in drafted if tk.accepted]
    tail = [c.token_id for c in (correction, bonus) if c is not None]
    new = replace(rnd, drafted=drafted, rejected_at=rejected_at, correction=correction, bonus=bonus,
                  emitted=kept + tail)
    return Redrawn(new, changed, approximate, unknown)


def _approximate_correction(tk: DraftToken, seed: int, round_index: int, draw: int) -> Choice | None:
    top = approximate_residual(tk)
    if not top:
        return None
    rng = random.Random(f"specviz-classroom-correction:{seed}:{round_index}:{draw}")
    pick = rng.choices(top, weights=[a.prob for a in top])[0]
    return Choice(pick.token_id, pick.text, pick.prob, top[:5])


# ---------------------------------------------------------------- the mass picture at a rejection
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


def mass(tk: DraftToken, correction: Choice | None, exact_r: bool = True) -> Mass:
    """The mass picture of a drafted position (a tree's node: r, what it was tested against, in p's place);
    `exact_r` False for an approximate (re-drawn) correction."""
    p = {a.token_id: a.prob for a in tk.tested_top}
    q = {a.token_id: a.prob for a in tk.top_q}
    p.setdefault(tk.token_id, tk.tested_prob)
    q.setdefault(tk.token_id, tk.q)
    texts = {a.token_id: a.text for a in [*tk.tested_top, *tk.top_q]} | {tk.token_id: tk.text}
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
