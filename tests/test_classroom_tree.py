"""The classroom's walk of a draft tree: its stops (specviz.classroom.steps), its numbers and residuals
(decisions, masses) and their drawing (specviz.viz.classroom_stage), the code a chain goes through as a tree of
one branch.

A hand-built round goes through the decoder's own rule (rule.verify) and
recorder (recording.RoundRecorder, a tree round) over a 5-token vocabulary, so the recorded
top-5 lists are whole distributions and the walk's residual can be compared with
`rule.sibling_residual` itself. Tiny models over 5 tokens do the same through
the decoder's loop; the prepared tree lesson is checked for the round it promises.
"""
import pytest
import torch

from specviz import SamplingConfig, speculative_generate
from specviz.engine import rule
from specviz.classroom import lessons
from specviz.classroom.state import StepState
from specviz.classroom.decisions import decision, stop_decision
from specviz.classroom.masses import changes, rejection_mass, what_is_left
from specviz.classroom.steps import accepted_path, node_states, stops, tree_order
from specviz.engine.rule import settle
from specviz.engine.sampling import SamplingConfig as Sampling
from specviz.engine.tree import TreeShape
from specviz.engine.drafters import Proposal
from specviz.engine.speculative import RoundTensors
from specviz.trace.recording import RoundRecorder
from specviz.viz.classroom_stage import stage_html
from tiny import noisy_copy, tiny_model

TREE_LESSON = "tree-second-branch"
HOSTILE = ["<script>alert(0)</script>", "<b>pwn</b>", "\" onmouseover=\"x", "&amp;", "<img src=x>"]

# parents: node 0 and node 1 hang from the root, node 2 from node 0, node 3 from node 1.
SHAPE = TreeShape((-1, -1, 0, 1))
P_ROOT = [0.1, 0.4, 0.3, 0.15, 0.05]
Q_FIRST = [0.6, 0.1, 0.1, 0.1, 0.1]                # node 0 (token 0) is drawn from it ...
Q_SECOND = [0.0, 0.25, 0.25, 0.25, 0.25]           # ... node 1 (token 2) without token 0
P_AFTER_1 = [0.2, 0.2, 0.2, 0.2, 0.2]
Q_AFTER_1 = [0.1, 0.1, 0.1, 0.6, 0.1]              # node 3 (token 3)


class Hostile:
    """A tokenizer whose every token is markup."""

    def batch_decode(self, ids):
        return [HOSTILE[i[0] % len(HOSTILE)] for i in ids]


def hand_built_round(tokenizer=None, u=(0.5, 0.3, 0.0, 0.9)):
    """Node 0 rejected (a = 0.1/0.6), node 1 accepted against the residual, node 3 rejected: a correction."""
    P = torch.tensor([[P_ROOT, [0.2] * 5, P_AFTER_1, [0.2] * 5, [0.2] * 5]])
    Q = torch.tensor([[Q_FIRST, Q_SECOND, [0.2] * 5, Q_AFTER_1]])
    ids = torch.tensor([[0, 2, 1, 3]])
    proposal = Proposal(ids=ids, q=Q, shape=SHAPE)
    verdict = rule.verify(P, proposal, torch.Generator().manual_seed(0), False, u=torch.tensor([u]))
    t = RoundTensors(proposal, P.log(), P, verdict)
    path, shown, m, y = t.first_row()
    outcome = settle(shown, m, y, frozenset())
    return RoundRecorder(tokenizer, Sampling(1.0), drafter="tree").record(0, t, outcome, (0.0, 0.0, 0.0)), P, Q


def full(alts, size=5):
    out = torch.zeros(size)
    for a in alts:
        out[a.token_id] = a.prob
    return out


# ---------------------------------------------------------------- the hand-built round
def test_the_walk_of_a_hand_built_round_has_a_stop_per_decision():
    rnd, _, _ = hand_built_round()
    assert [(s.kind, s.pos) for s in stops(rnd)] == [("tree", None), ("node", 0), ("residual", 0), ("node", 1),
                                                     ("node", 3), ("correction", None)]
    assert tree_order(rnd.tree) == [0, 1, 3]
    assert [rnd.tree[i].token_id for i in accepted_path(rnd)] == [tk.token_id for tk in rnd.drafted
                                                                  if tk.accepted] == rnd.emitted[:1] == [2]


def test_the_residual_after_a_rejected_sibling_is_the_rules_own():
    rnd, P, Q = hand_built_round()
    expected = rule.sibling_residual(P[0, 0], Q[0, 0])          # norm(max(0, p − q)) after node 0
    m = rejection_mass(rnd, 0)
    shown = torch.zeros(5)
    for i, r in zip(m.ids, m.r):
        shown[i] = r
    assert torch.allclose(shown, expected, atol=1e-6)
    assert not torch.allclose(expected, P[0, 0], atol=0.05)             # it really differs from p
    # node 1 is tested against that residual, and its a is the rule's own
    d = decision(rnd.tree[1])
    assert d.p == pytest.approx(expected[2].item(), abs=1e-6) and d.a == pytest.approx(1.0)
    assert torch.allclose(full(rnd.tree[1].top_r), expected, atol=1e-6)
    assert m.reject_chance == pytest.approx(1 - torch.minimum(P[0, 0], Q[0, 0]).sum().item(), abs=1e-6)
    assert m.drawn is None      # nothing is drawn from it: the next sibling is tested against it


def test_the_correction_is_drawn_from_the_last_residual():
    rnd, P, Q = hand_built_round()
    assert rnd.correction is not None
    last = rule.sibling_residual(P[0, 2], Q[0, 3])
    m = rejection_mass(rnd, 3)
    shown = torch.zeros(5)
    for i, r in zip(m.ids, m.r):
        shown[i] = r or 0.0
    assert torch.allclose(shown, last, atol=1e-6)
    assert m.ids[m.drawn] == rnd.correction.token_id


def test_the_changed_probabilities_put_the_rejected_token_first_at_zero():
    rnd, P, Q = hand_built_round()
    rows = changes(rnd, 0)
    assert rows[0].token_id == 0 and rows[0].before == pytest.approx(0.1) and rows[0].after == 0.0
    moved = {c.token_id: (c.before, c.after) for c in rows if c.changed}
    assert moved[1][1] == pytest.approx(0.3 / 0.55, abs=1e-6) and 4 not in {c.token_id for c in rows if c.after}


def test_states_appear_as_the_walk_reaches_them():
    rnd, _, _ = hand_built_round()
    all_stops = stops(rnd)
    assert node_states(rnd, all_stops[0]) == ["pending"] * 4
    assert node_states(rnd, all_stops[3]) == ["rejected", "accepted", "pending", "pending"]
    assert node_states(rnd, all_stops[3], revealed=False) == ["rejected", "pending", "pending", "pending"]
    assert node_states(rnd, all_stops[-1]) == ["rejected", "accepted", "untried", "rejected"]


def test_predict_mode_hides_a_nodes_u_and_scores_the_guess():
    rnd, _, _ = hand_built_round()
    state = StepState(round=0, stop=1)
    assert state.view([rnd], 0, predict=True).hidden
    after, right = state.guess([rnd], 0, accept=False)      # node 0 is rejected
    assert right is True and after.revealed
    assert stop_decision(rnd, stops(rnd)[1]).accepted is False


@pytest.mark.parametrize("lang", ["en", "es"])
def test_every_stop_is_drawn_in_both_languages(lang):
    rnd, _, _ = hand_built_round()
    pages = [stage_html(rnd, 1, i, False, lang=lang) for i in range(len(stops(rnd)))]
    words = {"en": ("what is left after a rejection", "candidate 2 of 2"),
             "es": ("lo que queda tras un rechazo", "candidato 2 de 2")}[lang]
    assert words[0] in pages[2] and words[1] in pages[3]
    assert 'data-kind="residual"' in pages[2] and "r′ = norm(max(0, r − q))" in pages[2]
    assert "min(1, 0.364/0.250)" in pages[3]          # r after the rejection, q without the first token
    assert pages[3].count('data-state="accepted"') == 1 and 'sv-cls-current" data-node="2"' in pages[3]


def test_hostile_token_text_is_escaped():
    rnd, _, _ = hand_built_round(Hostile())
    for i in range(len(stops(rnd))):
        for lang in ("en", "es"):
            html = stage_html(rnd, 1, i, False, lang=lang)
            assert "<script" not in html and "<img" not in html and "<b>pwn" not in html
            assert "&lt;script&gt;" in html


# ---------------------------------------------------------------- through the decoder, tiny models
def test_tiny_model_tree_rounds_record_the_rules_residuals():
    """Over 5 tokens the recorded top lists are whole distributions: every residual stop's r′ is
    sibling_residual of the recorded r and q, and every node's a is min(1, r/q)."""
    target = tiny_model(51, vocab=5, scale=0.6)
    draft = noisy_copy(target, 7, 0.8)
    seen = 0
    for seed in range(12):
        for rnd in speculative_generate(target, draft, [1, 2], tree="3x1", seed=seed, sampling=SamplingConfig(1.0),
                                        max_new_tokens=6):
            if not rnd.tree:
                continue
            for s in stops(rnd):
                if s.kind == "node":
                    d = decision(rnd.tree[s.pos])
                    assert d.a == pytest.approx(min(1.0, d.p / d.q), abs=1e-6)
                if s.kind == "residual":
                    node = rnd.tree[s.pos]
                    expected = rule.sibling_residual(full(node.top_r), full(node.top_q))
                    m = rejection_mass(rnd, s.pos)
                    got = torch.zeros(5)
                    for i, r in zip(m.ids, m.r):
                        got[i] = r
                    assert torch.allclose(got, expected, atol=1e-6)
                    seen += 1
            assert [rnd.tree[i].token_id for i in accepted_path(rnd)][:rnd.n_accepted] == \
                rnd.emitted[:rnd.n_accepted]
    assert seen >= 5


# ---------------------------------------------------------------- the prepared lesson
def second_child_wins(rnd) -> bool:
    return bool(rnd.tree) and any(n.status == "accepted" and i > 0 and rnd.tree[i - 1].parent == n.parent
                                  for i, n in enumerate(rnd.tree))


def test_the_tree_lesson_has_a_round_where_a_later_child_wins():
    lesson, trace = lessons.load(TREE_LESSON)
    assert any(second_child_wins(r) for r in trace.rounds), "the tree lesson became a chain lesson"
    state = lesson.opening(trace.rounds)
    v = state.view(trace.rounds, 0)
    assert v.stop.kind == "residual" and second_child_wins(v.round)
    nxt = stops(v.round)[v.pos + 1]
    assert nxt.kind == "node" and v.round.tree[nxt.pos].status == "accepted"


def test_the_tree_lessons_walk_matches_its_rounds():
    _, trace = lessons.load(TREE_LESSON)
    checked = 0
    for rnd in (r for r in trace.rounds if r.tree):
        order = tree_order(rnd.tree)
        rejected_with_sibling = [s for s in stops(rnd) if s.kind == "residual"]
        ending = int(rnd.correction is not None or rnd.bonus is not None)
        assert len(stops(rnd)) == 1 + len(order) + len(rejected_with_sibling) + ending
        assert [rnd.tree[i].token_id for i in accepted_path(rnd)][:rnd.n_accepted] == rnd.emitted[:rnd.n_accepted]
        for i in order:
            d = decision(rnd.tree[i])
            assert d.a == pytest.approx(min(1.0, d.p / d.q), abs=1e-5)
        for s in rejected_with_sibling:
            m = rejection_mass(rnd, s.pos)
            assert m is not None and 0 < m.reject_chance <= 1 + 1e-6
            # r′ = max(0, r − q) / Σ: the same Σ, the rejection chance shown, at every token whose r, q and r′
            # were all recorded
            node, left = rnd.tree[s.pos], what_is_left(rnd, s.pos)
            r, q = {a.token_id: a.prob for a in node.top_r}, {a.token_id: a.prob for a in node.top_q}
            ratios = [(r[a.token_id] - q[a.token_id]) / a.prob for a in left.top
                      if a.token_id in r and a.token_id in q and a.prob > 1e-3 and r[a.token_id] > q[a.token_id]]
            assert all(x == pytest.approx(m.reject_chance, rel=1e-3) for x in ratios)
            checked += len(ratios)
    assert checked >= 1
