"""The tree drafters' own choices: a dynamic tree read one row per depth, and the hybrid tree.

The rule they feed (specviz.engine.rule) is proven in tests/test_engine_tree.py; here: that these
drafters keep the output exactly the target's (greedy identity, chi-square through the
decoder's tree round with the lookup chain in it), and that they draft what they claim.
And the q each sampled child is recorded with: on fixed tables of p and q (tests/tiny.py
`fixed_model`), the real drafter's round is enumerated over every draw of its children and
sampled through the decoder; a drafter that records the plain q fails both, and a tree wider
than q's support (the drafter's fallback) stays exact.
"""
import itertools

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.engine import model_drafter, rule, tree_drafter
from specviz.engine.drafters import shared_vocab
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.engine.sampling import probabilities
from specviz.engine.speculative import Sides, decode_round
from specviz.engine.tree import TreeShape
from specviz.engine.drafters import HybridDrafter, make_drafter
from specviz.engine.options import Tree
from specviz.engine.model_drafter import ModelDrafter
from specviz.engine.tree_drafter import DynamicTree
from tiny import fixed_model, noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

GREEDY = SamplingConfig(temperature=0)
# Ends with a 3-gram (2, 3, 4) seen before: the lookup continues it with 5, 2, 3, ...
REPEATING = [2, 3, 4, 5, 2, 3, 4]


def baseline(target, prompt, n):
    return [s.token_id for s in autoregressive_generate(target, prompt, sampling=GREEDY, max_new_tokens=n)]


def emitted(rounds):
    return [t for r in rounds for t in r.emitted]


@pytest.mark.parametrize("tree", ["dynamic:6:6:2:1", "dynamic:4:4:3:1", "hybrid:6", "hybrid:4:4:2:1", "hybrid:1"])
@pytest.mark.parametrize("prompt", [[1, 2, 3], REPEATING])
@pytest.mark.parametrize("noise", [0.3, 1.0])
def test_greedy_frontier_and_hybrid_trees_match_target_alone(tree, prompt, noise):
    target = tiny_model(11, vocab=32)
    rounds = list(speculative_generate(target, noisy_copy(target, 3, noise), prompt, tree=tree, sampling=GREEDY,
                                       max_new_tokens=40))
    assert emitted(rounds) == baseline(target, prompt, 40)


def test_a_frontier_of_one_reads_one_node_per_depth_and_keeps_runner_ups_as_leaves():
    target = tiny_model(11, vocab=32)
    # 4 depths of 2 candidates for 6 nodes: at least two runner-ups join the spine of every full round.
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), [1, 2, 3], tree="dynamic:6:4:2:1",
                                       sampling=GREEDY, max_new_tokens=60))
    shapes = [TreeShape(tuple(n.parent for n in r.tree)) for r in rounds if r.tree]
    for shape in shapes:   # one node with children per depth: a spine, every other node a leaf
        inner = [i for i in range(shape.size) if shape.children[i + 1]]
        assert len({shape.depths[i] for i in inner}) == len(inner)
    assert all(not s.is_chain() for s in shapes if s.size == 6), "the runner-ups never made it into a tree"
    assert sum(s.size == 6 for s in shapes) > 3


def test_the_hybrid_tree_looks_up_when_the_text_repeats_and_grows_a_tree_otherwise():
    target = tiny_model(11, vocab=32)
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), REPEATING, tree="hybrid:5",
                                       sampling=GREEDY, max_new_tokens=40))
    first = rounds[0]
    assert [t.source for t in first.drafted] == ["ngram"] * len(first.drafted) and first.drafted
    assert TreeShape(tuple(n.parent for n in first.tree)).is_chain()
    assert first.drafted[0].token_id == 5   # what followed (2, 3, 4) earlier
    assert any(r.drafted and r.drafted[0].source == "model" for r in rounds[1:])


def test_tree_spellings_name_their_drafter():
    target = tiny_model(11, vocab=32)
    drafter = make_drafter(Tree("hybrid:8:6:3:1"), target, 32)
    assert isinstance(drafter, HybridDrafter) and isinstance(drafter.model, ModelDrafter)
    inner = drafter.model.growth
    assert isinstance(inner, DynamicTree) and drafter.model.shape == TreeShape.for_budget(8)
    assert (inner.nodes, inner.depth, inner.top_k, inner.frontier) == (8, 6, 3, 1)
    for bad in ("hybrid:", "hybrid:4:4:2:3", "hybrid:4:4:2:0", "dynamic:4:4:2:1:1", "dynamic:4:4:1:2"):
        with pytest.raises(ValueError):
            make_drafter(Tree(bad), target, 32)


# ------------------------------------------------------------ statistical: the lookup chain in a tree round
N_SAMPLES, N_TOKENS = 20_000, 2


@pytest.fixture(scope="module")
def small():
    target = tiny_model(51, vocab=8, scale=0.6)
    return target, noisy_copy(target, 7, 0.8)


@pytest.mark.statistical
@pytest.mark.parametrize("cfg", [SamplingConfig(1.0), SamplingConfig(0.7, top_k=4)], ids=str)
def test_hybrid_tree_rounds_follow_the_target_distribution(small, cfg, monkeypatch):
    target, draft = small
    looked_up = []
    propose = HybridDrafter.propose

    def spy(self, tokens, k, sampling, generator):
        proposal = propose(self, tokens, k, sampling, generator)
        looked_up.append(proposal.source == "ngram")
        return proposal

    monkeypatch.setattr(HybridDrafter, "propose", spy)
    prompt = [2, 3, 4, 5, 2, 3, 4]
    counts = sample_prefixes(target, draft, prompt, N_TOKENS, N_SAMPLES,
                             decode_options(sampling=cfg, seed=3, tree="hybrid:3"))
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, prompt, N_TOKENS, cfg))
    assert any(looked_up) and not all(looked_up), "the lookup chain and the model tree must both be verified"
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"


# ------------------------------------------------------------ the node budget from measured costs
def test_costs_pick_fewer_nodes_where_a_wider_verify_is_dear():
    from specviz.engine.tree_drafter import TreeCosts

    probs = [0.9, 0.6, 0.3, 0.2, 0.1, 0.05]
    flat = TreeCosts(c=0.3, verify=(1.0,) * 7)                    # a GPU: rows are free
    cliff = TreeCosts(c=0.3, verify=(1.0, 1.1, 1.15, 1.2, 2.0, 2.0, 2.1))   # this CPU's int4 kernel at 5 rows
    assert flat.best_size(probs, reads=3) == 6
    assert cliff.best_size(probs, reads=3) == 3
    assert TreeCosts(c=0.3, verify=(1.0, 3.0, 1.2)).verify == (1.0, 3.0, 3.0)   # noisy timings made monotone
    with pytest.raises(ValueError):
        TreeCosts(c=0.3, verify=())


@pytest.mark.parametrize("tree", ["dynamic:8:8:2:1", "hybrid:8"])
def test_a_costed_tree_stays_exact_and_within_what_the_costs_allow(tree):
    from specviz.engine.tree_drafter import TreeCosts

    target = tiny_model(11, vocab=32)
    costs = TreeCosts(c=0.3, verify=(1.0, 1.1, 1.15, 1.2, 2.0, 2.0, 2.1, 2.2, 2.3))
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), REPEATING, tree=tree, sampling=GREEDY,
                                       max_new_tokens=40, tree_costs=costs))
    assert emitted(rounds) == baseline(target, REPEATING, 40)
    model_trees = [r.tree for r in rounds if r.tree and r.drafted and r.drafted[0].source == "model"]
    assert model_trees and all(len(t) <= 4 for t in model_trees)   # past 4 nodes (5 rows) the cliff never pays


# ------------------------------------------------------------ the q each child is recorded with
# Children drawn without replacement keep the rule exact only if each child is verified against the q it
# was really drawn from (q with its earlier siblings removed). A drafter that draws them so but records
# the plain q is wrong, and on this case visibly so. p = (0, .5, .5), q = (.75, 0, .25), two children:
#   x1 = 0 (prob .75): a1 = min(1, 0/.75) = 0, rejected; r2 = norm(max(0, p - q)) = (0, 2/3, 1/3);
#       x2 is then 2 for sure (q without 0). Recorded as drawn, q2 = (0, 0, 1): a2 = 1/3, else the
#       correction r3 = norm(max(0, r2 - q2)) = (0, 1, 0) emits 1. Recorded as the plain q: a2 =
#       min(1, (1/3)/.25) = 1, so 2 is always accepted and 1 never comes out.
#   x1 = 2 (prob .25): a1 = min(1, .5/.25) = 1, accepted: 2.
# Correct: P(1) = .75 * 2/3 = .5 = p(1). Broken: P(1) = 0, P(2) = 1.
P_CASE, Q_CASE = (0.0, 0.5, 0.5), (0.75, 0.0, 0.25)
# Width 3 over a q that top-k 2 leaves two tokens: the third child finds no token left and is drawn from q
# itself (the drafter's fallback). The top-2 of p and of q share token 2 only, so the plain-q bug shows here too.
P_WIDE, Q_WIDE, TOP2 = (0.05, 0.45, 0.4, 0.1), (0.6, 0.05, 0.3, 0.05), SamplingConfig(1.0, top_k=2)
FIXED_PROMPT = [0]


_draw_children = tree_drafter.draw_children   # the real one, kept before any test replaces it


def records_plain_q(logits, width, sampling, generator):
    """Broken: the children drawn without replacement exactly as the drafter draws them, each recorded as q."""
    tokens, _ = _draw_children(logits, width, sampling, generator)
    return tokens, [probabilities(logits, sampling)] * width


class ScriptedDraws:
    """The drafter's sampler, replaced: hands out a script of tokens and keeps the probability of the
    script under the distributions they were really drawn from (its argument, whatever the drafter records)."""

    def start(self, script):
        self.script, self.weight, self.drawn_from = list(script), 1.0, []

    def __call__(self, probs, generator=None, greedy=False):
        token = self.script.pop(0)
        self.weight *= float(probs[0, token])
        self.drawn_from.append(probs[0].clone())
        return torch.tensor([token], device=probs.device)


@torch.inference_mode()
def enumerated_round(target, draft, width, cfg, monkeypatch):
    """P(first emitted token) of a round with `width` root children, over every draw of the children.

    Each script of child tokens runs the decoder's real tree round (the drafter, the target's tree
    forward, specviz.engine.rule.verify) once with u = 1, so every child is tried and rejected: that
    reports each child's acceptance probability a_j and the last residual, and
    P(emit y) = Σ_j Π_{i<j}(1 - a_i) a_j [x_j = y] + Π_j(1 - a_j) r(y), weighted by the script's probability.
    Returns the distribution and, per script of positive weight, (script, drawn-from q's, recorded q's, a).
    """
    vocab = shared_vocab(target, draft)
    draws = ScriptedDraws()
    monkeypatch.setattr(tree_drafter, "sample", draws)
    verify = rule.verify
    monkeypatch.setattr(rule, "verify", lambda P, proposal, generator, greedy:
                        verify(P, proposal, generator, greedy, u=torch.ones(proposal.ids.shape)))
    out, seen = torch.zeros(vocab, dtype=torch.float64), []
    for script in itertools.product(range(vocab), repeat=width):
        draws.start(script)
        drafter = ModelDrafter(draft, vocab, tree=TreeShape.from_widths((width,)))
        state, _ = decode_round(Sides(target, None, drafter, vocab), torch.tensor([FIXED_PROMPT]), 1, cfg, None)
        if draws.weight == 0.0:
            continue
        assert state.proposal.ids[0].tolist() == list(script)
        a, still = state.verdict.accept_prob[0].double(), 1.0
        for j, x in enumerate(script):
            out[x] += draws.weight * still * float(a[j])
            still *= 1.0 - float(a[j])
        out += draws.weight * still * state.verdict.next_dist[0].double()
        seen.append((script, draws.drawn_from, list(state.proposal.q[0]), a))
    return out, seen


def fixed_p(target, cfg):
    with torch.inference_mode():
        return probabilities(target(input_ids=torch.tensor([FIXED_PROMPT])).logits[0, -1], cfg).double()


def test_children_recorded_with_the_q_they_were_drawn_from_emit_exactly_p(monkeypatch):
    target, draft = fixed_model(P_CASE), fixed_model(Q_CASE)
    cfg = SamplingConfig(1.0)
    out, seen = enumerated_round(target, draft, 2, cfg, monkeypatch)
    torch.testing.assert_close(fixed_p(target, cfg), torch.tensor(P_CASE, dtype=torch.float64), atol=1e-7, rtol=0)
    torch.testing.assert_close(out, torch.tensor(P_CASE, dtype=torch.float64), atol=1e-6, rtol=0)
    assert sorted(s for s, *_ in seen) == [(0, 2), (2, 0)]     # without replacement: never a repeat
    for _, drawn_from, recorded, _ in seen:
        for d, r in zip(drawn_from, recorded):
            assert torch.equal(d, r)


def test_children_recorded_with_the_plain_q_never_emit_token_1(monkeypatch):
    """The broken drafter, enumerated: token 1 (half of p's mass) never comes out, token 2 always does."""
    monkeypatch.setattr(model_drafter, "draw_children", records_plain_q)
    out, seen = enumerated_round(fixed_model(P_CASE), fixed_model(Q_CASE), 2, SamplingConfig(1.0), monkeypatch)
    assert out[1] == 0.0 and abs(float(out[2]) - 1.0) < 1e-6
    assert sorted(s for s, *_ in seen) == [(0, 2), (2, 0)]     # the same draws: only the record differs


@pytest.mark.parametrize("broken", [False, True], ids=["as-drawn", "plain-q"])
def test_a_tree_wider_than_what_q_leaves_falls_back_to_q_and_stays_exact(broken, monkeypatch):
    """top-k 2, width 3: the third child is drawn from q itself, recorded so, and the round still emits p."""
    if broken:
        monkeypatch.setattr(model_drafter, "draw_children", records_plain_q)
    target, draft = fixed_model(P_WIDE), fixed_model(Q_WIDE)
    p = fixed_p(target, TOP2)
    q = fixed_p(draft, TOP2)
    assert int((p > 0).sum()) == int((q > 0).sum()) == 2
    out, seen = enumerated_round(target, draft, 3, TOP2, monkeypatch)
    if broken:
        assert (out - p).abs().sum() > 0.1
        return
    torch.testing.assert_close(out, p, atol=1e-6, rtol=0)
    assert len(seen) == 4     # 2 first children x the one left x 2 fallbacks
    for script, drawn_from, recorded, a in seen:
        assert script[2] in script[:2]                          # nothing was left to draw without replacement
        assert torch.equal(drawn_from[2], q.float()) and torch.equal(recorded[2], drawn_from[2])
        # Reached (both siblings rejected with some probability), it repeats a rejected sibling, where the
        # residual is 0: the fallback child is never accepted. It costs a node and changes nothing.
        assert (1 - float(a[0])) * (1 - float(a[1])) * float(a[2]) == 0.0


# ------------------------------------------------------------ the same, through the decoder's own tree round
def fixed_fit(p, q, tree, cfg, monkeypatch, broken):
    if broken:
        monkeypatch.setattr(model_drafter, "draw_children", records_plain_q)
    target, draft = fixed_model(p), fixed_model(q)
    counts = sample_prefixes(target, draft, FIXED_PROMPT, N_TOKENS, N_SAMPLES, decode_options(sampling=cfg, tree=tree))
    assert sum(counts.values()) == N_SAMPLES
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, FIXED_PROMPT, N_TOKENS, cfg))
    return counts, impossible, p_value


CASES = {"p=(0,.5,.5) width 2": (P_CASE, Q_CASE, "2", SamplingConfig(1.0)),
         "top-k 2 width 3": (P_WIDE, Q_WIDE, "3", TOP2)}


@pytest.mark.statistical
@pytest.mark.parametrize("case", CASES)
def test_the_fixed_tables_follow_the_target_distribution(case, monkeypatch):
    _, impossible, p_value = fixed_fit(*CASES[case], monkeypatch, broken=False)
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
@pytest.mark.parametrize("case", CASES)
def test_the_statistical_test_catches_children_recorded_with_the_plain_q(case, monkeypatch):
    counts, _, p_value = fixed_fit(*CASES[case], monkeypatch, broken=True)
    if CASES[case][0] == P_CASE:
        assert not any(seq[0] == 1 for seq in counts), "the broken drafter emitted token 1 first"
    assert p_value < 1e-6, f"a drafter recording the plain q went unnoticed (p = {p_value:.2e})"
