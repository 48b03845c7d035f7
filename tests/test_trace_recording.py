"""What the recorder (specviz.trace.recording) keeps of a round, chain or tree: one host transfer a round; a tree's
path shows the confidences a chain round shows, not the greedy one-hot q and p."""
from collections import Counter

import pytest
import torch

from specviz import SamplingConfig, speculative_generate
from specviz.trace.recording import RoundRecorder
from tiny import noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_greedy_tree_path_shows_softmax_confidences_like_a_chain():
    target = tiny_model(11, vocab=32)
    draft = noisy_copy(target, 3, 0.9)
    prompt = [1, 2, 3]
    rounds = list(speculative_generate(target, draft, prompt, tree="dynamic:4", sampling=SamplingConfig(0),
                                       max_new_tokens=12))
    first = rounds[0]
    assert all(node.q in (0.0, 1.0) for node in first.tree)          # the rule's numbers stay one-hot
    token = first.drafted[0]
    with torch.no_grad():
        expect_q = torch.softmax(draft(torch.tensor([prompt])).logits[0, -1].float(), -1)[token.token_id].item()
        expect_p = torch.softmax(target(torch.tensor([prompt])).logits[0, -1].float(), -1)[token.token_id].item()
    assert token.q_confidence == pytest.approx(expect_q, rel=1e-4) and 0 < token.q_confidence < 1
    assert token.p_confidence == pytest.approx(expect_p, rel=1e-4) and 0 < token.p_confidence < 1


def test_a_looked_up_path_is_as_sure_as_its_one_hot_q():
    target = tiny_model(11, vocab=32)
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), [2, 3, 4, 5, 2, 3, 4], tree="hybrid:4",
                                       sampling=SamplingConfig(0), max_new_tokens=8))
    assert rounds[0].drafted[0].source == "ngram" and rounds[0].drafted[0].q_confidence == 1.0


@pytest.mark.parametrize("tree", ["dynamic:4", None])
def test_a_greedy_correction_or_bonus_lists_no_zero_fillers(tree):
    """ A greedy tree's bonus listed the target's top 5 as one token at 1.00 and four fillers at 0.00 (the
    one-hot p). A greedy bonus shows the untempered softmax there, as a chain's does; a greedy correction's residual
    is one-hot, so it lists its one token and no fillers."""
    target = tiny_model(11, vocab=32)
    draft = noisy_copy(target, 3, 0.9)
    drafting = dict(tree=tree) if tree else dict(k=3)   # k is a chain's length: refused beside a tree
    rounds = list(speculative_generate(target, draft, [1, 2, 3], sampling=SamplingConfig(0), max_new_tokens=24,
                                       **drafting))
    bonuses = [r.bonus for r in rounds if r.bonus is not None]
    corrections = [r.correction for r in rounds if r.correction is not None]
    assert bonuses and corrections
    for choice in bonuses:
        probs = [alt.prob for alt in choice.top]
        assert len(probs) == 5 and all(0 < p < 1 for p in probs), probs          # confidences, not one-hot
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-6
        assert choice.top[0].token_id == choice.token_id                         # greedy: the target's argmax
    for choice in corrections:
        assert [(a.token_id, a.prob) for a in choice.top] == [(choice.token_id, 1.0)]


@pytest.mark.parametrize("drafting", [dict(k=3), dict(k=3, drafter="hybrid"), dict(tree="2x2"), dict(tree="dynamic:4"),
                                      dict(tree="hybrid:4")])
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_every_round_is_recorded_with_one_host_transfer(monkeypatch, drafting, temperature):
    """Every number of a round, chain or tree, confidences included, comes back in one transfer: a read of a tensor
    on the host (a list, an item, a truth value) is a sync on a GPU."""
    reads, recording = Counter(), [False]

    def counted(name, read):
        def wrapper(self, *args, **kwargs):
            reads[name] += recording[0]
            return read(self, *args, **kwargs)
        return wrapper

    for name in ("tolist", "cpu", "item", "__bool__", "__int__", "__float__", "__index__"):
        monkeypatch.setattr(torch.Tensor, name, counted(name, getattr(torch.Tensor, name)))
    record = RoundRecorder.record

    def recorded(self, *args):
        recording[0] = True
        try:
            return record(self, *args)
        finally:
            recording[0] = False

    monkeypatch.setattr(RoundRecorder, "record", recorded)
    target = tiny_model(11, vocab=32)
    rounds = list(speculative_generate(target, noisy_copy(target, 3, 0.9), [2, 3, 4, 5, 2, 3, 4], seed=1,
                                       sampling=SamplingConfig(temperature), max_new_tokens=16, **drafting))
    assert any(r.tree for r in rounds) == ("tree" in drafting)
    assert +reads == Counter(cpu=len(rounds), tolist=len(rounds))
