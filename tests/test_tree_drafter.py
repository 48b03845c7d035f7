"""The tree drafters' own choices: a dynamic tree read one row per depth, and the hybrid tree.

The rule they feed (specviz.tree_rule) is proven in tests/test_tree.py; here: that these
drafters keep the output exactly the target's (greedy identity, chi-square through the
decoder's tree round with the lookup chain in it), and that they draft what they claim.
"""
import pytest

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.tree import TreeShape
from specviz.tree_drafter import HybridTreeDrafter, make_tree_drafter
from tiny import noisy_copy, tiny_model

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
    drafter = make_tree_drafter(target, 32, "hybrid:8:6:3:1")
    assert isinstance(drafter, HybridTreeDrafter)
    assert (drafter.nodes, drafter.depth, drafter.top_k, drafter.frontier) == (8, 6, 3, 1)
    for bad in ("hybrid:", "hybrid:4:4:2:3", "hybrid:4:4:2:0", "dynamic:4:4:2:1:1", "dynamic:4:4:1:2"):
        with pytest.raises(ValueError):
            make_tree_drafter(target, 32, bad)


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
    propose = HybridTreeDrafter.propose

    def spy(self, tokens, k, sampling, generator):
        proposal = propose(self, tokens, k, sampling, generator)
        looked_up.append(proposal.source == "ngram")
        return proposal

    monkeypatch.setattr(HybridTreeDrafter, "propose", spy)
    prompt = [2, 3, 4, 5, 2, 3, 4]
    counts = sample_prefixes(target, draft, prompt, N_TOKENS, N_SAMPLES, 0, cfg, seed=3, tree="hybrid:3")
    impossible, p_value = chi_square_fit(counts, exact_prefixes(target, prompt, N_TOKENS, cfg))
    assert any(looked_up) and not all(looked_up), "the lookup chain and the model tree must both be verified"
    assert not impossible and p_value > 1e-3, f"chi-square p = {p_value:.2e}"


# ------------------------------------------------------------ the node budget from measured costs
def test_costs_pick_fewer_nodes_where_a_wider_verify_is_dear():
    from specviz.tree_drafter import TreeCosts

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
    from specviz.tree_drafter import TreeCosts

    target = tiny_model(11, vocab=32)
    costs = TreeCosts(c=0.3, verify=(1.0, 1.1, 1.15, 1.2, 2.0, 2.0, 2.1, 2.2, 2.3))
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), REPEATING, tree=tree, sampling=GREEDY,
                                       max_new_tokens=40, tree_costs=costs))
    assert emitted(rounds) == baseline(target, REPEATING, 40)
    model_trees = [r.tree for r in rounds if r.tree and r.drafted and r.drafted[0].source == "model"]
    assert model_trees and all(len(t) <= 4 for t in model_trees)   # past 4 nodes (5 rows) the cliff never pays
