"""Draft trees: the shape, the tree-masked forward, the exact rule, and the decoder with a tree.

Proof that the tree rule keeps the target's distribution, three ways: exact
enumeration of every draw of a node's children on tiny models (the first
token's distribution equals p to float precision), the chi-square test through
the decoder's own tree round (specviz.engine.lossless.sample_prefixes), and greedy
token-for-token identity with the target alone. A broken variant (every child
tested against the untouched p) must fail both the enumeration and the
statistical test with p < 1e-6.
"""
import itertools
from functools import lru_cache

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.engine import rule
from specviz.engine.proposal import Proposal
from specviz.runtime.decoding import KVCache, forward_logits, prefill
from specviz.models.prepare import prepare_models
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.engine.sampling import probabilities
from specviz.trace.records import Trace
from specviz.engine.tree import TreeShape
from specviz.runtime.masked import forward_masked, keep_path, verify_mask, verify_positions
from specviz.engine.tree_drafter import without
from tiny import noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")
GREEDY = SamplingConfig(temperature=0)


def tiny_llama(seed: int, vocab: int = 16) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return prepare_models(LlamaForCausalLM(config).eval().float())


# ------------------------------------------------------------ the shape
def test_widths_build_a_breadth_first_tree():
    shape = TreeShape.from_widths((2, 2, 1))
    assert shape.parents == (-1, -1, 0, 0, 1, 1, 2, 3, 4, 5)
    assert shape.depths == (1, 1, 2, 2, 2, 2, 3, 3, 3, 3)
    assert shape.children[0] == (0, 1) and shape.children[1] == (2, 3) and shape.children[7] == ()
    assert shape.ancestry[6].nonzero().flatten().tolist() == [0, 2, 6]
    assert TreeShape.parse("2x2x1") == shape and shape.spelled() == "2x2x1"
    assert shape.truncated(2).parents == shape.parents[:6] and shape.truncated(5) is shape
    assert TreeShape.parse("1x1x1").is_chain() and not shape.is_chain()


@pytest.mark.parametrize("parents", [(0,), (-1, 1), (-1, 0, -1)])
def test_bad_shapes_are_refused(parents):
    with pytest.raises(ValueError):
        TreeShape(parents)


def test_no_node_is_the_empty_chain_and_no_spelling_gives_it():
    """The round at the budget's end drafts nothing: its proposal's shape is the chain of 0; a user never names it."""
    assert TreeShape(()) == TreeShape.chain(0) and TreeShape.chain(0).is_chain() and TreeShape.chain(0).max_depth == 0
    for text in ("", " "):
        with pytest.raises(ValueError):
            TreeShape.parse(text)


def test_a_tree_larger_than_the_limit_is_refused():
    with pytest.raises(ValueError, match="more than"):
        TreeShape.from_widths((4, 4, 4))


# ------------------------------------------------------------ one forward over the tree
@pytest.mark.parametrize("make", [tiny_model, tiny_llama], ids=["qwen2", "llama"])
@pytest.mark.parametrize("cached", [False, True])
def test_the_tree_forward_gives_each_node_the_logits_of_its_own_branch(make, cached):
    """Each node's logits under the tree mask equal a plain causal forward over prefix + its ancestors + itself."""
    model = make(5)
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    shape = TreeShape.from_widths((2, 2, 1))
    nodes = torch.tensor([[7, 9, 2, 8, 6, 2, 11, 12, 13, 3]])
    cache = prefill(model, prompt) if cached else None
    seen = cache.get_seq_length() if cached else 0
    pending = prompt[:, seen:]
    logits = forward_masked(model, torch.cat([pending, nodes], 1), cache,
                            verify_positions(shape.depths, seen, pending.shape[1]),
                            verify_mask(shape.ancestry, seen, pending.shape[1]), shape.size + 1)[0]
    plain_root = model(input_ids=prompt).logits[0, -1]
    torch.testing.assert_close(logits[0], plain_root, atol=1e-5, rtol=1e-4)
    for node in range(shape.size):
        branch = nodes[0, shape.ancestry[node]]
        plain = model(input_ids=torch.cat([prompt[0], branch])[None]).logits[0, -1]
        torch.testing.assert_close(logits[node + 1], plain, atol=1e-5, rtol=1e-4)


def test_keeping_a_path_leaves_the_cache_of_that_branch():
    """After gathering a path's keys, the next forward reads as if only that branch had been fed."""
    model = tiny_model(6)
    prompt = torch.tensor([[3, 1, 4]])
    shape = TreeShape.from_widths((2, 2))
    nodes = torch.tensor([[7, 9, 2, 8, 6, 5]])
    cache = prefill(model, prompt)
    forward_masked(model, torch.cat([prompt[:, 2:], nodes], 1), cache, verify_positions(shape.depths, 2, 1),
                   verify_mask(shape.ancestry, 2, 1), 1)
    keep_path(cache, 3, [3 + 1, 3 + 5])        # the second root child (9), then its second child (5)
    assert cache.get_seq_length() == 5
    after = forward_logits(model, torch.tensor([[0]]), cache, 1)[0, -1]
    plain = model(input_ids=torch.tensor([[3, 1, 4, 9, 5, 0]])).logits[0, -1]
    torch.testing.assert_close(after, plain, atol=1e-5, rtol=1e-4)


# ------------------------------------------------------------ exact enumeration of the rule
@torch.no_grad()
def _node_dists(target, draft, prompt, cfg):
    ids = torch.tensor([prompt])
    return (probabilities(target(input_ids=ids).logits[0, -1], cfg),
            probabilities(draft(input_ids=ids).logits[0, -1], cfg))


def exact_first_token(p: torch.Tensor, q: torch.Tensor, width: int) -> torch.Tensor:
    """P(first emitted token) of a root with `width` children drawn without replacement, over every draw.

    For each tuple of children (with its probability under the drafter's sequential q_j), the rule runs
    once with u = 1 (everything rejected): it reports each child's acceptance probability a_j and the
    final residual, and the walk's structure gives P(emit y) = Σ_j Π_{i<j}(1-a_i) a_j [x_j = y] + Π(1-a_j) r(y).
    """
    V = p.shape[0]
    shape = TreeShape.from_widths((width,))
    out = torch.zeros(V, dtype=torch.float64)
    for kids in itertools.product(range(V), repeat=width):
        qs, weight = [], 1.0
        for j, x in enumerate(kids):
            q_j = without(q[None], [torch.tensor([k]) for k in kids[:j]])[0]
            weight *= float(q_j[x])
            qs.append(q_j)
        if weight == 0.0:
            continue
        P = torch.stack([p] + [p] * width)[None]
        proposal = Proposal(torch.tensor([kids]), torch.stack(qs)[None], shape=shape)
        verdict = rule.verify(P, proposal, None, False, u=torch.ones(1, width))
        a, still = verdict.accept_prob[0].double(), 1.0
        for j, x in enumerate(kids):
            out[x] += weight * still * float(a[j])
            still *= 1.0 - float(a[j])
        out += weight * still * verdict.next_dist[0].double()
    return out


CONFIGS = [SamplingConfig(1.0), SamplingConfig(0.7), SamplingConfig(1.0, top_k=3), SamplingConfig(0.7, top_p=0.8)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("width", [2, 3])
def test_every_draw_of_the_children_together_emits_exactly_p(cfg, width):
    target = tiny_model(51, vocab=8, scale=0.6)
    p, q = _node_dists(target, noisy_copy(target, 7, 0.8), [1, 2], cfg)
    torch.testing.assert_close(exact_first_token(p, q, width), p.double(), atol=1e-6, rtol=0)


def test_exact_enumeration_catches_children_tested_against_the_untouched_p(monkeypatch):
    target = tiny_model(51, vocab=8, scale=0.6)
    p, q = _node_dists(target, noisy_copy(target, 7, 0.8), [1, 2], SamplingConfig(1.0))
    monkeypatch.setattr(rule, "sibling_residual", _untouched_p)
    assert (exact_first_token(p, q, 2) - p.double()).abs().sum() > 0.02


def _untouched_p(r, q):
    return r


# ------------------------------------------------------------ statistical: through the decoder's tree round
N_SAMPLES, N_TOKENS, PROMPT, FLOOR = 20_000, 2, [1, 2], 1e-3


@pytest.fixture(scope="module")
def models():
    target = tiny_model(51, vocab=8, scale=0.6)
    return target, noisy_copy(target, 7, 0.8)


@lru_cache(maxsize=None)
def _exact(target, cfg):
    return exact_prefixes(target, PROMPT, N_TOKENS, cfg)


def tree_fit(models, tree, cfg, seed=0):
    target, draft = models
    counts = sample_prefixes(target, draft, PROMPT, N_TOKENS, N_SAMPLES,
                             decode_options(sampling=cfg, seed=seed, tree=tree))
    assert sum(counts.values()) == N_SAMPLES
    return chi_square_fit(counts, _exact(target, cfg))


@pytest.mark.statistical
@pytest.mark.parametrize("tree", ["2x2", "3x1x1"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_tree_rounds_follow_the_target_distribution(models, tree, cfg):
    impossible, p_value = tree_fit(models, tree, cfg)
    assert not impossible, f"sampled sequences the target gives probability 0: {impossible}"
    assert p_value > FLOOR, f"chi-square p = {p_value:.2e}"


@pytest.mark.statistical
def test_the_statistical_test_catches_children_tested_against_the_untouched_p(models, monkeypatch):
    monkeypatch.setattr(rule, "sibling_residual", _untouched_p)
    _, p_value = tree_fit(models, "3x1", SamplingConfig(1.0))
    assert p_value < 1e-6, f"a broken tree rule went unnoticed (p = {p_value:.2e})"


def test_the_tree_models_exercise_every_branch(models):
    """Guard for the cases above: second and third children win, and whole levels get rejected."""
    target, draft = models
    rounds = [r for s in range(60) for r in speculative_generate(target, draft, PROMPT, tree="3x1", seed=s,
                                                                  sampling=SamplingConfig(1.0), max_new_tokens=6)]
    first_level = [[n.status for n in r.tree if n.parent == -1] for r in rounds if r.tree]
    assert any(s[1] == "accepted" for s in first_level) and any(s[2] == "accepted" for s in first_level)
    assert any(all(x == "rejected" for x in s) for s in first_level)


# ------------------------------------------------------------ greedy: token for token the target alone
def baseline(target, prompt, **kw):
    return [s.token_id for s in autoregressive_generate(target, prompt, sampling=GREEDY, **kw)]


@pytest.mark.parametrize("tree", ["1x1x1", "2x2x1", "3x1x1x1", "2x2x2x2", "4"])
@pytest.mark.parametrize("prompt", [[3], [5, 9, 1, 0, 7, 7, 2]])
@pytest.mark.parametrize("noise", [0.0, 0.5, None])
def test_greedy_tree_decoding_matches_target_alone(tree, prompt, noise):
    target = tiny_model(11)
    draft = tiny_model(12) if noise is None else noisy_copy(target, 3, noise)
    rounds = list(speculative_generate(target, draft, prompt, tree=tree, sampling=GREEDY, max_new_tokens=30))
    assert [t for r in rounds for t in r.emitted] == baseline(target, prompt, max_new_tokens=30)
    if noise == 0.0:   # an identical draft: its top child is always the target's choice
        assert all(r.bonus is not None for r in rounds[:-1])


def test_greedy_trees_on_llama_and_with_eos_match_target_alone():
    target = tiny_llama(21)
    draft = tiny_llama(22)
    assert [t for r in speculative_generate(target, draft, [1, 2], tree="2x2x1", sampling=GREEDY,
                                            max_new_tokens=25) for t in r.emitted] == \
        baseline(target, [1, 2], max_new_tokens=25)
    target = tiny_model(11, eos_token_id=4)
    out = [t for r in speculative_generate(target, noisy_copy(target, 3, 0.3), [3], tree="2x2", sampling=GREEDY,
                                           max_new_tokens=60) for t in r.emitted]
    assert out == baseline(target, [3], max_new_tokens=60)


def test_a_wider_tree_needs_fewer_target_passes_than_its_chain():
    target = tiny_model(11, vocab=32)
    draft = noisy_copy(target, 3, 0.9)
    passes = {tree: len(list(speculative_generate(target, draft, [1, 2, 3], tree=tree, sampling=GREEDY,
                                                   max_new_tokens=60))) for tree in ("1x1x1", "3x2x1")}
    assert passes["3x2x1"] < passes["1x1x1"]


# ------------------------------------------------------------ trees in the trace
def test_tree_rounds_are_recorded_and_survive_a_trace_file(models):
    target, draft = models
    rounds = list(speculative_generate(target, draft, PROMPT, tree="2x2", seed=3, sampling=SamplingConfig(1.0),
                                       max_new_tokens=12))
    for r in rounds:
        if r.tree is None:      # the budget's last token: the target alone
            continue
        path = [i for i, n in enumerate(r.tree) if n.status == "accepted"]
        assert [r.tree[i].token_id for i in path] == [t.token_id for t in r.drafted[:r.n_accepted]]
        assert all(r.tree[i].parent == (path[j - 1] if j else -1) for j, i in enumerate(path))
        assert all((n.u < n.accept_prob) == (n.status == "accepted") for n in r.tree if n.status != "untried")
    assert any(r.correction for r in rounds) and any(r.bonus for r in rounds)
    trace = Trace(prompt="", prompt_ids=PROMPT, draft_model="d", target_model="t", k=2, max_new_tokens=12, seed=3,
                  sampling=SamplingConfig(1.0).to_dict(), rounds=rounds)
    again = Trace.from_json(trace.to_json())
    assert again.rounds == rounds and again.rounds[0].tree[0].status in ("accepted", "rejected")


def test_the_decoder_refuses_trees_it_cannot_run(models):
    target, draft = models
    for kwargs in (dict(drafter="ngram"), dict(compile="on"), dict(static_cache=True), dict(adaptive_threshold=0.5)):
        with pytest.raises(ValueError):
            list(speculative_generate(target, draft, PROMPT, tree="2x2", **kwargs))
    assert KVCache(target).get_seq_length() == 0


def _trace(rounds, k=4, max_new_tokens=40):
    return Trace(prompt="", prompt_ids=PROMPT, draft_model="d", target_model="t", k=k,
                 max_new_tokens=max_new_tokens, seed=0, sampling=SamplingConfig(1.0).to_dict(), rounds=rounds)


def test_tree_traces_with_eos_inside_the_path_load_back():
    target = tiny_model(51, vocab=8, scale=0.6, eos_token_id=3)
    draft = noisy_copy(target, 7, 0.3)
    for seed in range(40):
        rounds = list(speculative_generate(target, draft, PROMPT, tree="2x2x1", seed=seed, max_new_tokens=40,
                                           sampling=SamplingConfig(1.0)))
        assert Trace.from_json(_trace(rounds, 3).to_json()).rounds == rounds


@pytest.mark.parametrize("field, value, key", [("status", "maybe", "tracefile.tree_status"),
                                                 ("parent", 7, "tracefile.tree_parent"),   # in words
                                                 ("parent", -2, "tracefile.tree_root"),
                                                 ("u", 1.5, "tracefile.probability")])
def test_a_tampered_tree_is_refused(models, field, value, key):
    from specviz.trace.records import TraceFormatError

    target, draft = models
    rounds = list(speculative_generate(target, draft, PROMPT, tree="2x2", seed=1, max_new_tokens=8,
                                       sampling=SamplingConfig(1.0)))
    data = _trace(rounds, 2, 8).to_dict()
    data["rounds"][0]["tree"][1][field] = value
    with pytest.raises(TraceFormatError) as err:
        Trace.from_dict(data)
    assert err.value.key == key


def test_a_tree_whose_accepted_nodes_are_not_one_path_is_refused(models):
    from specviz.trace.records import TraceFormatError

    target, draft = models
    rounds = list(speculative_generate(target, draft, PROMPT, tree="3x1", seed=2, max_new_tokens=8,
                                       sampling=SamplingConfig(1.0)))
    data = _trace(rounds, 2, 8).to_dict()
    tree = data["rounds"][0]["tree"]
    for node in tree[:3]:   # two accepted siblings: not a path (u < a keeps the verdicts consistent)
        node.update(status="accepted", u=0.0, accept_prob=1.0)
    with pytest.raises(TraceFormatError) as err:
        Trace.from_dict(data)
    assert err.value.key == "tracefile.tree_path"


# ------------------------------------------------------------ EAGLE-2's dynamic tree (greedy)
@pytest.mark.parametrize("tree", ["dynamic:6", "dynamic:4:3:3", "dynamic:8:8:1", "dynamic:1"])
@pytest.mark.parametrize("noise", [0.3, 1.0])
def test_greedy_dynamic_trees_match_target_alone(tree, noise):
    target = tiny_model(11, vocab=32)
    draft = noisy_copy(target, 3, noise)
    rounds = list(speculative_generate(target, draft, [1, 2, 3], tree=tree, sampling=GREEDY, max_new_tokens=40))
    assert [t for r in rounds for t in r.emitted] == baseline(target, [1, 2, 3], max_new_tokens=40)


def test_a_dynamic_tree_changes_shape_with_the_draft_and_keeps_its_budget():
    """The shape follows the draft's confidence round by round; every untruncated round has 6 nodes."""
    from specviz.engine.tree import TreeShape

    target = tiny_model(11, vocab=32)
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), [1, 2, 3], tree="dynamic:6",
                                       sampling=GREEDY, max_new_tokens=60))
    shapes = {TreeShape(tuple(n.parent for n in r.tree)) for r in rounds[:-2] if r.tree}
    assert len(shapes) > 2 and all(s.size == 6 for s in shapes)
    assert max(s.max_depth for s in shapes) >= 3 and max(len(s.children[0]) for s in shapes) == 2


def test_a_dynamic_tree_of_one_branch_is_the_chain():
    """top_k = 1 grows one path: the same rounds as the chain of the same K (tokens and passes)."""
    target = tiny_model(11, vocab=32)
    draft = noisy_copy(target, 3, 0.9)
    chain = list(speculative_generate(target, draft, [1, 2, 3], k=5, sampling=GREEDY, max_new_tokens=40))
    tree = list(speculative_generate(target, draft, [1, 2, 3], tree="dynamic:5:5:1", sampling=GREEDY,
                                     max_new_tokens=40))
    assert [r.emitted for r in tree] == [r.emitted for r in chain]


@pytest.mark.parametrize("tree", ["dynamic:", "dynamic:0", "dynamic:4:5", "dynamic:4:2:0", "dynamic:99", "2y2"])
def test_bad_tree_spellings_are_refused(models, tree):
    target, draft = models
    with pytest.raises(ValueError):
        list(speculative_generate(target, draft, PROMPT, tree=tree, max_new_tokens=4))


def test_a_sampled_dynamic_tree_drafts_the_static_budget_shape(models):
    from specviz.engine.tree import TreeShape

    target, draft = models
    rounds = list(speculative_generate(target, draft, PROMPT, tree="dynamic:6", sampling=SamplingConfig(1.0),
                                       max_new_tokens=10, seed=4))
    assert all(tuple(n.parent for n in r.tree) == TreeShape.for_budget(6).parents[:len(r.tree)]
               for r in rounds if r.tree)


# ------------------------------------------------------------ the picture
def test_a_tree_round_is_drawn_as_a_tree_escaped_in_both_languages(models):
    import dataclasses

    from specviz.viz.cards import round_card_html
    from specviz.viz.tree import tree_html

    target, draft = models
    rounds = list(speculative_generate(target, draft, PROMPT, tree="3x1", seed=5, sampling=SamplingConfig(1.0),
                                       max_new_tokens=30))
    rnd = next(r for r in rounds if r.tree and r.correction and any(n.status == "rejected" for n in r.tree))
    nodes = [dataclasses.replace(n, text="<b>x</b>&") for n in rnd.tree]
    html = tree_html(dataclasses.replace(rnd, tree=nodes), "en")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;&amp;" in html
    for status in ("accepted", "rejected", "untried"):
        assert html.count(f"sv-tn-{status}") == sum(n.status == status for n in rnd.tree)
    assert html.count("sv-correction") == 1 and "sv-bonus" not in html
    assert html.count("<ul") == html.count("</ul>") and html.count("<li") == html.count("</li>")
    es = tree_html(rnd, "es")
    assert "Árbol de borradores" in es and "Draft tree" in tree_html(rnd, "en")
    assert tree_html(rounds[-1] if rounds[-1].tree is None else dataclasses.replace(rnd, tree=None)) == ""
    card = round_card_html(rnd, False, "en")
    assert 'class="sv-tree"' in card and "draft tree" in card
