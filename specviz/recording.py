"""Turn one round's device tensors into the `Round` record every view, JSON file and bench reads.

Kept apart from the decoder loop so the loop stays readable and so the trace's
cost (extra softmaxes, top-5 lists, token texts) sits in one place that can be
measured and switched off (`record=False` keeps only tokens, verdicts, times).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .decoding import decode_tokens
from .drafters import Proposal
from .limits import TOP_N
from .rule import Verdict
from .sampling import SamplingConfig
from .trace import Alt, Choice, DraftToken, Round


@dataclass
class RoundTensors:
    """What one round computed for B rows, still on the device (the decoder's B is 1)."""

    proposal: Proposal
    p_logits: torch.Tensor   # [B, K+1, V] the target's raw logits (confidence display)
    P: torch.Tensor          # [B, K+1, V] p after the sampling transform
    verdict: Verdict


def unrecorded_token(token_id: int, accepted: bool, source: str) -> DraftToken:
    """A drafted token whose numbers were not recorded (record=False): NaN everywhere but the verdict."""
    nan = float("nan")
    return DraftToken(token_id=token_id, text="", q=nan, p=nan, accept_prob=nan, u=nan, accepted=accepted,
                      q_confidence=nan, p_confidence=nan, source=source)


class RoundRecorder:
    """Fills `Round.drafted`, `.correction` and `.bonus`; caches token texts across rounds."""

    def __init__(self, tokenizer, sampling: SamplingConfig, record: bool = True):
        self.tokenizer, self.sampling, self.record = tokenizer, sampling, record
        self._texts: dict[int, str] = {}

    def text_of(self, token_id: int) -> str:
        if token_id not in self._texts:
            self._texts[token_id] = decode_tokens(self.tokenizer, [token_id])[0]
        return self._texts[token_id]

    def _top(self, probs: torch.Tensor) -> list[list[Alt]]:
        """Top-5 alternatives of each row of `probs` [N, V]."""
        values, ids = probs.topk(min(TOP_N, probs.shape[-1]), dim=-1)
        return [[Alt(int(i), self.text_of(int(i)), float(v)) for v, i in zip(vr, ir)]
                for vr, ir in zip(values.tolist(), ids.tolist())]

    def fill(self, rnd: Round, t: RoundTensors, m: int, n_shown: int, used_all: bool) -> None:
        """m drafts were accepted; `n_shown` are shown (fewer when EOS cut the round); `used_all`: the
        correction or bonus was emitted (False when EOS arrived among the accepted drafts)."""
        draft_ids = t.proposal.ids[0]
        if not self.record:
            rnd.drafted = [unrecorded_token(tok, i < m, t.proposal.source)
                           for i, tok in enumerate(draft_ids[:n_shown].tolist())]
            return
        k, P = draft_ids.shape[0], t.P[0]
        greedy = self.sampling.greedy
        p_conf = torch.softmax(t.p_logits[0].float(), -1)
        # Greedy distributions are one-hot: show the untempered softmax's alternatives instead.
        top_p = self._top(p_conf if greedy else P)
        if k:
            Q = t.proposal.q[0]
            # A proposer without logits (e.g. n-gram lookup) is as sure as its q says.
            logits = t.proposal.logits
            q_conf = Q if logits is None else torch.softmax(logits[0].float(), -1)
            top_q = self._top(q_conf if greedy else Q)
            pos = torch.arange(k, device=Q.device)
            p, q, a, u, pc, qc = torch.stack([P[pos, draft_ids], Q[pos, draft_ids], t.verdict.accept_prob[0],
                                              t.verdict.u[0], p_conf[pos, draft_ids], q_conf[pos, draft_ids]]).tolist()
            rnd.drafted = [DraftToken(token_id=tok, text=self.text_of(tok), q=q[i], p=p[i], accept_prob=a[i],
                                      u=u[i], accepted=i < m, q_confidence=qc[i], p_confidence=pc[i],
                                      top_q=top_q[i], top_p=top_p[i], source=t.proposal.source)
                           for i, tok in enumerate(draft_ids[:n_shown].tolist())]
        if not used_all:
            return  # EOS was accepted from the draft: neither correction nor bonus was used
        y = rnd.emitted[-1]
        if m < k:
            dist = t.verdict.next_dist
            rnd.correction = Choice(y, self.text_of(y), float(dist[0, y]), self._top(dist)[0])
        else:
            rnd.bonus = Choice(y, self.text_of(y), float(P[k, y]), top_p[k])
