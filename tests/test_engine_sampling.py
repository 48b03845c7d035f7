import math

import pytest
import torch

from specviz.engine.sampling import SamplingConfig, confidence, draw, probabilities, sample


def test_greedy_is_one_hot_on_argmax():
    logits = torch.tensor([[0.1, 2.0, 1.9, -1.0], [3.0, 3.0, 0.0, 0.0]])
    probs = probabilities(logits, SamplingConfig(temperature=0))
    assert probs.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0]]  # ties go to the lowest index, like argmax


def test_temperature_matches_softmax_of_scaled_logits():
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(0))
    probs = probabilities(logits, SamplingConfig(temperature=0.7))
    assert torch.allclose(probs, torch.softmax(logits / 0.7, -1), atol=1e-6)


def test_top_k_keeps_k_tokens_renormalised():
    logits = torch.tensor([[1.0, 4.0, 3.0, 2.0, 0.0]])
    probs = probabilities(logits, SamplingConfig(temperature=1.0, top_k=2))
    expected = torch.softmax(torch.tensor([4.0, 3.0]), -1)
    assert probs[0, 1].item() == pytest.approx(expected[0].item(), abs=1e-6)
    assert probs[0, 2].item() == pytest.approx(expected[1].item(), abs=1e-6)
    assert probs[0, [0, 3, 4]].sum().item() == 0


def test_top_p_keeps_smallest_prefix_reaching_p():
    base = torch.tensor([0.5, 0.3, 0.15, 0.05])
    probs = probabilities(base.log()[None], SamplingConfig(temperature=1.0, top_p=0.75))
    # 0.5 alone < 0.75, 0.5 + 0.3 >= 0.75: keep two tokens
    assert probs[0].tolist() == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0], abs=1e-6)


def test_rows_are_independent_and_sum_to_one():
    logits = torch.randn(5, 50, generator=torch.Generator().manual_seed(1))
    probs = probabilities(logits, SamplingConfig(temperature=0.9, top_k=10, top_p=0.9))
    assert torch.allclose(probs.sum(-1), torch.ones(5))
    for i in range(5):
        assert torch.equal(probs[i], probabilities(logits[i:i + 1], SamplingConfig(0.9, 10, 0.9))[0])


@pytest.mark.parametrize("kwargs", [dict(temperature=-1), dict(temperature=math.nan), dict(top_k=-2),
                                    dict(top_k=1.5), dict(top_p=0), dict(top_p=1.5)])
def test_bad_configs_are_refused(kwargs):
    with pytest.raises(ValueError):
        SamplingConfig(**kwargs)


def test_sample_never_picks_zero_probability():
    probs = torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]).repeat(200, 1)
    picks = sample(probs, torch.Generator().manual_seed(0)).view(200, 2)
    assert (picks[:, 0] == 1).all() and (picks[:, 1] != 1).all()


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.99])  # nearer 1, float32 rounding of either sum decides
@pytest.mark.parametrize("spread", [0.5, 3.0, 12.0])
def test_fast_top_p_keeps_what_transformers_top_p_keeps(top_p, spread):
    from transformers import TopPLogitsWarper

    from specviz.engine.sampling import FastTopP

    g = torch.Generator().manual_seed(int(top_p * 1000) + int(spread))
    scores = spread * torch.randn(6, 5000, generator=g)   # flat rows need more than 1024 candidates
    ours = FastTopP(top_p, candidates=1024)(None, scores)
    theirs = TopPLogitsWarper(top_p)(None, scores)
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_confidence_is_the_inline_untempered_softmax_bit_for_bit(dtype):
    """The recorder and the adaptive stop may call `confidence` instead of writing the softmax out: same bits."""
    logits = (4 * torch.randn(3, 2000, generator=torch.Generator().manual_seed(2))).to(dtype)
    assert torch.equal(confidence(logits), torch.softmax(logits.float(), -1))
    assert confidence(logits).dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_draw_is_probabilities_then_sample(dtype):
    """`draw` (one argmax when greedy) gives the q and the token that `probabilities` and `sample` give, ties
    included (the lowest index, as transformers' greedy search), and sampled rows from the same generator state."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 300, generator=g).to(dtype)
    logits[1, [7, 90]] = logits[1].max() + 1   # an exact tie
    for config in (SamplingConfig(), SamplingConfig(temperature=0.8, top_k=40)):
        q, token = draw(logits, config, torch.Generator().manual_seed(3))
        expected = probabilities(logits, config)
        assert torch.equal(q, expected) and q.dtype == torch.float32
        assert torch.equal(token, sample(expected, torch.Generator().manual_seed(3), config.greedy))
    assert int(draw(logits, SamplingConfig())[1][1]) == 7
