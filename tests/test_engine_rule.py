"""The rejection rule: exact enumeration of P(emit x), residual rows, batched verification."""
import pytest
import torch

from specviz.engine import rule
from specviz.engine.proposal import Proposal   # a chain's, its shape the width-one tree


# ------------------------------------------------------------ exact enumeration of the rule
@pytest.mark.parametrize("seed", range(20))
def test_verification_step_emits_exactly_p(seed):
    """P(emit x) = q(x)·a(x) + P(reject)·r(x), built from the implementation's own a and r."""
    g = torch.Generator().manual_seed(seed)
    vocab = 12
    P = torch.softmax(3 * torch.randn(1, vocab, generator=g, dtype=torch.float64), -1)
    Q = torch.softmax(3 * torch.randn(1, vocab, generator=g, dtype=torch.float64), -1)
    if seed % 4 == 0:  # zeros on either side, as top-k / top-p produce
        P[0, :3] = 0
        Q[0, 5:8] = 0
        P, Q = P / P.sum(), Q / Q.sum()
    xs = torch.arange(vocab)
    ok = Q[0] > 0
    a = torch.zeros(vocab, dtype=torch.float64)
    a[ok] = rule.acceptance_prob(P[0, xs[ok]], Q[0, xs[ok]])
    p_reject = (Q[0] * (1 - a)).sum()
    emit = Q[0] * a + p_reject * rule.residual(P, Q)[0]
    assert torch.allclose(emit, P[0], atol=1e-6), (emit - P[0]).abs().max()


def test_residual_rows_are_distributions_even_when_p_equals_q():
    P = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    r = rule.residual(P, P.clone())
    assert torch.allclose(r.sum(-1), torch.ones(2)) and (r >= 0).all()


def _dists(seed, rows, positions, vocab=6):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(2 * torch.randn(rows, positions, vocab, generator=g), -1)


def test_equal_p_and_q_accept_every_draft_and_the_bonus_comes_after_each_rows_last_draft():
    """With p = q every test passes; rows that drafted fewer tokens (the adaptive stop) end there."""
    P = _dists(0, 3, 5)                                   # [B=3, K+1=5, V]
    draft_ids = torch.tensor([[1, 2, 3, 4], [0, 1, 2, 3], [5, 4, 3, 2]])
    n_drafted = torch.tensor([4, 1, 3])
    drafts = Proposal(draft_ids, P[:, :4].clone(), n_drafted=n_drafted)
    v = rule.verify(P, drafts, torch.Generator().manual_seed(1), False)
    assert v.n_accepted.tolist() == [4, 1, 3] and v.bonus.all()
    assert torch.equal(v.next_dist, P[torch.arange(3), n_drafted])
    assert (v.accept_prob == 1).all()


def test_a_sure_rejection_draws_the_correction_from_the_residual():
    P = torch.tensor([[[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]])   # p(x=0) = 0: x = 0 is always rejected
    Q = torch.tensor([[[0.8, 0.1, 0.1]]])
    v = rule.verify(P, Proposal(torch.tensor([[0]]), Q), torch.Generator().manual_seed(0), False)
    assert v.n_accepted.tolist() == [0] and not v.bonus.any() and v.accept_prob.item() == 0
    assert torch.allclose(v.next_dist, rule.residual(P[:, :1], Q)[:, 0]) and v.next_token.item() in (1, 2)


def test_emitted_tokens_are_the_accepted_drafts_then_the_next_token():
    P = _dists(2, 2, 4)
    draft_ids = torch.tensor([[1, 2, 3], [4, 5, 0]])
    v = rule.verify(P, Proposal(draft_ids, P[:, :3].clone(), n_drafted=torch.tensor([3, 2])), None, True)
    out, lengths = rule.emitted_tokens(draft_ids, v)
    assert lengths.tolist() == [4, 3]
    assert out[0].tolist() == [1, 2, 3, v.next_token[0].item()]
    assert out[1, :3].tolist() == [4, 5, v.next_token[1].item()] and out[1, 3].item() == -1


# ---------------------------------------------------------------- settling a round on the host
def test_settle_cuts_at_the_first_eos_and_says_which_token_came_from_the_target():
    from specviz.engine.rule import settle

    rejected = settle([5, 6, 7], 1, 9, set())            # x_2 rejected: the correction follows x_1
    assert (rejected.emitted, rejected.next_token, rejected.rejected_at, rejected.eos) == ([5, 9], 9, 1, False)
    bonus = settle([5, 6], 2, 9, {9})                     # all accepted, the bonus is EOS
    assert (bonus.emitted, bonus.rejected_at, bonus.eos, bonus.drafted) == ([5, 6, 9], None, True, [5, 6])
    cut = settle([5, 3, 7], 3, 9, {3})                    # an accepted draft is EOS: nothing after it is used
    assert (cut.emitted, cut.drafted, cut.next_token, cut.rejected_at, cut.eos) == ([5, 3], [5, 3], None, None, True)
    assert cut.n_accepted == 3                            # the caches keep what the target accepted
    empty = settle([], 0, 4, {3})                         # nothing drafted: the bonus alone
    assert (empty.emitted, empty.rejected_at, empty.eos) == ([4], None, False)


@pytest.mark.parametrize("seed", range(6))
def test_the_greedy_shortcut_gives_the_general_rules_verdict_bit_for_bit(seed):
    """Greedy p and q are one-hot, so the residual after a rejection is p itself: `verify` skips computing it. Every
    tensor of its verdict equals the general path's (the same residual behind a wrapper), over rows that accept
    everything, reject at each position, and stop early (n_drafted)."""
    from specviz.engine.sampling import SamplingConfig, probabilities
    g = torch.Generator().manual_seed(seed)
    rows, K, vocab = 64, 4, 7
    greedy = SamplingConfig()
    P = probabilities(torch.randn(rows, K + 1, vocab, generator=g), greedy)
    ids = P[:, :K].argmax(-1)   # drafts the target agrees with, then a disagreement at a random place
    wrong = torch.randint(0, K + 1, (rows,), generator=g)
    cols = torch.arange(K)
    ids = torch.where(cols == wrong[:, None], (ids + 1) % vocab, ids)
    Q = torch.nn.functional.one_hot(ids, vocab).float()
    n_drafted = torch.randint(0, K + 1, (rows,), generator=g)
    for drafted in (None, n_drafted):
        fast = rule.verify(P, Proposal(ids, Q, n_drafted=drafted), torch.Generator().manual_seed(1), True)
        general = rule.verify(P, Proposal(ids, Q, n_drafted=drafted), torch.Generator().manual_seed(1), True,
                              residual_fn=lambda p, q: rule.residual(p, q))
        assert (fast.n_accepted == general.n_accepted).all() and (fast.bonus == general.bonus).all()
        assert {int(n) for n in fast.n_accepted} >= set(range(K)) and not fast.bonus.all() and fast.bonus.any()
        assert torch.equal(fast.next_dist, general.next_dist) and torch.equal(fast.next_token, general.next_token)
