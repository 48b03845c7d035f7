"""What a tree round records for its path: the confidences a chain round shows, not the greedy one-hot q and p."""
import pytest
import torch

from specviz import SamplingConfig, speculative_generate
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
