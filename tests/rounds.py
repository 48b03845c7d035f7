"""Hand-made rounds with known numbers, for the classroom's tests (importable as `rounds`, like `tiny`)."""
from __future__ import annotations

from specviz.trace.records import Alt, Choice, DraftToken, Round


def tok(i, p, q, u, accepted, top_p=(), top_q=()):
    return DraftToken(token_id=i, text=f"t{i}", q=q, p=p, accept_prob=min(1.0, p / q), u=u, accepted=accepted,
                      q_confidence=q, p_confidence=p, top_q=list(top_q), top_p=list(top_p))


def rejected_round():
    """K = 4: drafts 1 and 2 pass, 3 fails (p 0.10 < q 0.40, u 0.9 ≥ a 0.25), 4 is discarded; correction t9."""
    top_p = [Alt(9, "t9", 0.5), Alt(3, "t3", 0.1)]
    top_q = [Alt(3, "t3", 0.4), Alt(9, "t9", 0.1)]
    drafted = [tok(1, 0.31, 0.44, 0.62, True), tok(2, 0.9, 0.5, 0.3, True),
               tok(3, 0.10, 0.40, 0.9, False, top_p, top_q), tok(4, 0.2, 0.3, 0.1, False)]
    corr = Choice(9, "t9", 0.8, [Alt(9, "t9", 0.8), Alt(5, "t5", 0.2)])
    return Round(0, drafted, 2, corr, None, [1, 2, 9], 0.01, 0.02)


def bonus_round(index=1):
    drafted = [tok(5, 0.5, 0.5, 0.2, True), tok(6, 0.9, 0.8, 0.95, True)]
    return Round(index, drafted, None, None, Choice(7, "t7", 0.6, [Alt(7, "t7", 0.6)]), [5, 6, 7], 0.01, 0.02)
