"""The drafter seam: any proposer with an exact q plugs into the decoder and keeps it lossless."""
import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.engine.tree import TreeShape
from specviz.engine.drafters import LookupRule, Lookups, ModelDrafter, Proposal, make_drafter
from specviz.engine.options import Chain
from tiny import noisy_copy, tiny_model

GREEDY = SamplingConfig(temperature=0)


class EchoDrafter:
    """Proposes the last token again, K times, with a one-hot q (a deterministic proposer)."""

    def __init__(self, vocab):
        self.vocab, self.calls, self.kept, self.prefix = vocab, 0, [], 0

    def begin(self, tokens):
        self.calls = 0

    def propose(self, tokens, k, sampling, generator):
        self.calls += 1
        self.prefix = tokens.shape[1]
        ids = tokens[:, -1:].expand(-1, k)
        return Proposal(ids, torch.nn.functional.one_hot(ids, self.vocab).float())

    def commit(self, path):
        self.kept.append(self.prefix + len(path))


def test_a_custom_drafter_keeps_greedy_output_identical():
    target = tiny_model(11)
    drafter = EchoDrafter(16)
    rounds = list(speculative_generate(target, drafter, [1, 2, 3], k=3, sampling=GREEDY, max_new_tokens=25))
    out = [t for r in rounds for t in r.emitted]
    assert out == [s.token_id for s in autoregressive_generate(target, [1, 2, 3], sampling=GREEDY,
                                                               max_new_tokens=25)]
    assert drafter.calls == len(rounds)
    # after each round the drafter is told how many tokens are final: the sequence minus its newest token
    lengths = [3 + sum(len(r.emitted) for r in rounds[: i + 1]) - 1 for i in range(len(rounds))]
    assert drafter.kept == lengths


def test_a_one_hot_q_accepts_with_probability_p_in_sampled_runs():
    target = tiny_model(11)
    rounds = list(speculative_generate(target, EchoDrafter(16), [1, 2], k=2, sampling=SamplingConfig(1.0),
                                       max_new_tokens=30, seed=3))
    for r in rounds:
        for t in r.drafted:
            assert t.q == 1.0 and t.accept_prob == pytest.approx(t.p)


def test_model_drafter_proposes_k_tokens_with_the_q_it_sampled_from():
    draft = tiny_model(2)
    d = ModelDrafter(draft, 16)
    tokens = torch.tensor([[1, 2, 3]])
    d.begin(tokens)
    assert d.cache.get_seq_length() == 2
    prop = d.propose(tokens, 4, SamplingConfig(0.8), torch.Generator().manual_seed(0))
    assert prop.ids.shape == (1, 4) and prop.q.shape == (1, 4, 16)
    assert torch.allclose(prop.q.sum(-1), torch.ones(1, 4)) and (prop.q.gather(-1, prop.ids[..., None]) > 0).all()
    assert d.cache.get_seq_length() == 2 + 4 - 1 + 1  # the prompt's last token and 3 drafts were read
    d.commit([])   # none of the 4 drafts kept: the 3 tokens proposed after
    assert d.cache.get_seq_length() == 3


def test_model_drafter_batches_rows_and_reports_early_stops():
    target = tiny_model(11)
    d = ModelDrafter(noisy_copy(target, 4, 0.5), 16, adaptive_threshold=0.1)  # its q tops out near 0.13
    prop = d.propose(torch.tensor([[1, 2]] * 64), 5, SamplingConfig(1.0), torch.Generator().manual_seed(0))
    assert prop.ids.shape[0] == 64 and prop.n_drafted is not None
    assert (prop.n_drafted >= 1).all() and (prop.n_drafted <= prop.ids.shape[1]).all()
    assert len(set(prop.n_drafted.tolist())) > 1   # rows stop at different points


@pytest.mark.parametrize("sampling", [GREEDY, SamplingConfig(0.8, top_p=0.9)], ids=["greedy", "sampled"])
def test_a_width_one_tree_drafts_as_the_chain_bit_for_bit(sampling):
    """The chain is the width-one case of the model drafter's one loop: given as a tree, the same reads, the same
    random draws, the same q, the same cache kept."""
    tokens = torch.tensor([[1, 2, 3]])
    proposals = []
    for tree in (TreeShape.chain(4), None, TreeShape.from_widths((1, 2, 1))):
        d = ModelDrafter(tiny_model(2), 16, tree=tree)
        d.begin(tokens)
        proposals.append(d.propose(tokens, 4, sampling, torch.Generator().manual_seed(5)))
        d.commit([0, 1])
        assert d.cache.get_seq_length() == 5   # the prompt and the two kept drafts
    as_tree, chain, wider = proposals
    for name in ("ids", "q", "logits"):
        assert torch.equal(getattr(as_tree, name), getattr(chain, name)), name
    assert as_tree.shape == chain.shape == TreeShape.chain(4) and wider.shape.size == 5
    with pytest.raises(ValueError):
        ModelDrafter(tiny_model(2), 16, adaptive_threshold=0.5, tree=TreeShape.from_widths((2,)))


def test_make_drafter_wraps_models_and_refuses_a_threshold_for_a_drafter():
    model = tiny_model(2)
    assert isinstance(make_drafter("model", model, 16), ModelDrafter)
    echo = EchoDrafter(16)
    assert make_drafter("model", echo, 16) is echo
    with pytest.raises(ValueError):
        make_drafter(Chain(adaptive_threshold=0.5), echo, 16)
    with pytest.raises(ValueError):
        ModelDrafter(model, 16, adaptive_threshold=2.0)


@pytest.mark.parametrize("method", ["ngram", "hybrid"])
@pytest.mark.parametrize("static", [False, True])
def test_lookup_methods_give_the_target_alone_output(method, static):
    """speculative_generate(drafter=...) with prompt lookup: greedy output is the target's, token for token."""
    target = tiny_model(11)
    prompt = [1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    draft = None if method == "ngram" else noisy_copy(target, 3, 0.5)
    rounds = list(speculative_generate(target, draft, prompt, k=4, sampling=GREEDY, max_new_tokens=30,
                                       drafter=method, static_cache=static))
    assert [t for r in rounds for t in r.emitted] == [
        s.token_id for s in autoregressive_generate(target, prompt, sampling=GREEDY, max_new_tokens=30)]
    assert all(r.drafter == method for r in rounds)
    assert any(t.source == "ngram" for r in rounds for t in r.drafted)


@pytest.mark.parametrize("static", [False, True])
def test_long_lookup_rounds_give_the_target_alone_output_over_many_prompts(static):
    """Hybrid with K=2 and lookup rounds of up to 7 tokens: greedy output is the target's, token for token, and the
    lookup rounds do draft past K (the decoder gave them the room)."""
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    longest = {"ngram": 0, "model": 0}
    for seed in range(8):
        phrase = torch.randint(0, 16, (5,), generator=torch.Generator().manual_seed(seed)).tolist()
        prompt = phrase * 3 + phrase[:3]
        rounds = list(speculative_generate(target, draft, prompt, k=2, lookup_k=7, drafter="hybrid", sampling=GREEDY,
                                           max_new_tokens=24, static_cache=static))
        assert [t for r in rounds for t in r.emitted] == [
            s.token_id for s in autoregressive_generate(target, prompt, sampling=GREEDY, max_new_tokens=24)], seed
        for r in rounds:
            if r.drafted:
                source = r.drafted[0].source
                longest[source] = max(longest[source], len(r.drafted))
    assert longest["model"] == 2 and longest["ngram"] > 2, longest


def test_the_hybrid_uses_a_lookup_only_on_a_match_of_three_tokens():
    """The tuned default (scripts/hybrid_policy.py): a 2-token match still drafts with the model."""
    hybrid = make_drafter("hybrid", tiny_model(2), 16)
    two = torch.tensor([[5, 1, 2, 9, 7, 1, 2]])          # "1 2" recurs: the lookup would propose "9 7 1"
    three = torch.tensor([[5, 1, 2, 9, 7, 5, 1, 2]])     # "5 1 2" recurs: the lookup proposes "9 7 5"
    for tokens, source in ((two, "model"), (three, "ngram")):
        hybrid.begin(tokens)
        prop = hybrid.propose(tokens, 3, GREEDY, None)
        assert prop.source == source
    assert prop.ids.tolist() == [[9, 7, 5]]


def test_the_hybrids_lookup_rounds_go_to_lookup_k_and_its_model_rounds_stay_at_k():
    hybrid = make_drafter(Chain(2, drafter="hybrid", lookup_k=6), tiny_model(2), 16)
    repeat = torch.tensor([[5, 1, 2, 9, 7, 3, 4, 6, 8, 5, 1, 2]])   # "5 1 2" recurs: "9 7 3 4 6 8" followed it
    fresh = torch.tensor([[5, 1, 2, 9, 7, 3]])                      # no match: the model drafts
    for tokens, source, n in ((repeat, "ngram", 6), (fresh, "model", 2)):
        hybrid.begin(tokens)
        prop = hybrid.propose(tokens, 6, GREEDY, None)   # the decoder asks for the chain's depth, 6
        assert prop.source == source and prop.ids.shape[1] == n
    hybrid.begin(repeat)
    assert hybrid.propose(repeat, 4, GREEDY, None).ids.tolist() == [[9, 7, 3, 4]]   # never past the round's ask


def test_the_lookup_rule_wants_both_a_long_enough_match_and_continuation():
    found = Lookups(ids=torch.zeros(4, 3, dtype=torch.long), lengths=torch.tensor([2, 5, 1, 3]),
                    ngram=torch.tensor([3, 2, 3, 1]))
    assert LookupRule().takes(found).tolist() == [True, False, False, False]
    assert LookupRule(min_match=1, min_tokens=1).takes(found).tolist() == [True, True, True, True]
    hybrid = make_drafter("hybrid", tiny_model(2), 16)
    assert hybrid.rule == LookupRule(min_match=3, min_tokens=2)       # the tuned default (scripts/hybrid_policy.py)
