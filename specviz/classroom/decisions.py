"""The step mode's numbers at a test: a = min(1, r/q) against u, and the round replayed with re-drawn u.

Pure functions of the recorded `Round`s (specviz.trace.records); no Gradio, no torch.
Every node is tested against the residual r its rejected elder siblings left, which
is p for a first child: every token of a chain (`steps.nodes` reads a chain as a tree
of one branch), so the chain's formula says p where a tree's says r.

Re-drawing u replays a chain's round with fresh uniforms from a shown seed. Only
the verdicts can be recomputed exactly (the recorded p and q are exact); a
correction at a *new* rejection point can only be approximated from the recorded
top-5 lists, and a bonus that the recorded run never drew is unknown. A tree's
re-draw would re-walk the tree: it is not offered.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ..trace.records import Alt, Choice, Round
from .steps import Stop, nodes


@dataclass(frozen=True)
class Decision:
    """The numbers of one acceptance test: a = min(1, p/q); accepted iff u < a (p: what the node was tested
    against, r on a tree)."""

    p: float
    q: float
    a: float
    u: float

    @property
    def accepted(self) -> bool:
        return self.u < self.a


def decision(node) -> Decision:
    """A node's recorded test, a as the decoder computed it (not re-rounded), against r (p for a first child).
    Older tree traces lack r: it is p where a = 1, else a·q (a < 1 shows r = a·q)."""
    r = node.r if node.r is not None else (node.accept_prob * node.q if node.accept_prob < 1 else node.p)
    return Decision(p=r, q=node.q, a=node.accept_prob, u=node.u)


def stop_decision(rnd: Round, stop: Stop) -> Decision | None:
    """The test a stop shows (a chain's drafted token or a tree's node), None at a stop without one."""
    return decision(nodes(rnd)[stop.pos]) if stop.kind in ("test", "node") else None


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


def top_lists(node) -> tuple[dict, dict, dict]:
    """r and q over a node's recorded top tokens (its own token always among them) and every such token's text."""
    r = {a.token_id: a.prob for a in node.top_r}
    q = {a.token_id: a.prob for a in node.top_q}
    r.setdefault(node.token_id, node.r if node.r is not None else node.p)
    q.setdefault(node.token_id, node.q)
    texts = {a.token_id: a.text for a in [*node.top_r, *node.top_q]} | {node.token_id: node.text}
    return r, q, texts


def approximate_residual(node) -> list[Alt]:
    """max(0, r − q) over the recorded top tokens of a node, normalised: the residual as far as it was recorded.

    Tokens outside both top-5 lists are missing, so this is an approximation;
    the decoder draws from the residual over the whole vocabulary.
    """
    r, q, texts = top_lists(node)
    mass = {i: max(0.0, r.get(i, 0.0) - q.get(i, 0.0)) for i in texts}
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
        node = nodes(rnd)[rejected_at]
        correction, bonus, approximate = _approximate_correction(node, seed, rnd.index, draw), None, True
    elif changed:
        correction, unknown = None, True
    kept = [tk.token_id for tk in drafted if tk.accepted]
    tail = [c.token_id for c in (correction, bonus) if c is not None]
    new = replace(rnd, drafted=drafted, rejected_at=rejected_at, correction=correction, bonus=bonus,
                  emitted=kept + tail)
    return Redrawn(new, changed, approximate, unknown)


def _approximate_correction(node, seed: int, round_index: int, draw: int) -> Choice | None:
    top = approximate_residual(node)
    if not top:
        return None
    rng = random.Random(f"specviz-classroom-correction:{seed}:{round_index}:{draw}")
    pick = rng.choices(top, weights=[a.prob for a in top])[0]
    return Choice(pick.token_id, pick.text, pick.prob, top[:5])
