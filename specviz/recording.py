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

    def _alts(self, values: list[float], ids: list[float]) -> list[Alt]:
        return [Alt(int(i), self.text_of(int(i)), v) for v, i in zip(values, ids)]

    def fill(self, rnd: Round, t: RoundTensors, m: int, drafted_ids: list[int], used_all: bool) -> None:
        """m drafts were accepted; `drafted_ids` are the drafts shown (fewer than drafted when EOS cut the
        round); `used_all`: the correction or bonus was emitted (False when EOS arrived among the accepted
        drafts).

        Every number is computed on the device and comes back in ONE transfer (token
        ids ride along as floats: exact below 2^24), so the trace costs one host sync
        per round on a GPU, not one per list.
        """
        draft_ids = t.proposal.ids[0]
        if not self.record:
            rnd.drafted = [unrecorded_token(tok, i < m, t.proposal.source) for i, tok in enumerate(drafted_ids)]
            return
        k, P, n = draft_ids.shape[0], t.P[0], min(TOP_N, t.P.shape[-1])
        greedy = self.sampling.greedy
        p_conf = torch.softmax(t.p_logits[0].float(), -1)
        # Greedy distributions are one-hot: show the untempered softmax's alternatives instead.
        top_p = (p_conf if greedy else P).topk(n, dim=-1)                        # [K+1, n]
        parts = [top_p.values, top_p.indices.float()]
        if k:
            Q = t.proposal.q[0]
            # A proposer without logits (e.g. n-gram lookup) is as sure as its q says.
            logits = t.proposal.logits
            q_conf = Q if logits is None else torch.softmax(logits[0].float(), -1)
            top_q = (q_conf if greedy else Q).topk(n, dim=-1)                    # [K, n]
            pos = torch.arange(k, device=Q.device)
            numbers = torch.stack([P[pos, draft_ids], Q[pos, draft_ids], t.verdict.accept_prob[0].float(),
                                   t.verdict.u[0].float(), p_conf[pos, draft_ids], q_conf[pos, draft_ids]])
            parts += [top_q.values, top_q.indices.float(), numbers]
        y = rnd.emitted[-1]
        corrected = used_all and m < k
        if corrected:
            top_r = t.verdict.next_dist.topk(n, dim=-1)
            parts += [top_r.values, top_r.indices.float(), t.verdict.next_dist[0, y].reshape(1, 1)]
        elif used_all:
            parts.append(P[k, y].reshape(1, 1))
        flat = torch.cat([x.reshape(-1) for x in parts]).cpu().tolist()         # the one transfer

        def take(rows, cols):
            nonlocal flat
            out, flat = [flat[r * cols:(r + 1) * cols] for r in range(rows)], flat[rows * cols:]
            return out

        p_alts = [self._alts(v, i) for v, i in zip(take(k + 1, n), take(k + 1, n))]
        if k:
            q_alts = [self._alts(v, i) for v, i in zip(take(k, n), take(k, n))]
            p, q, a, u, pc, qc = take(6, k)
            rnd.drafted = [DraftToken(token_id=tok, text=self.text_of(tok), q=q[i], p=p[i], accept_prob=a[i],
                                      u=u[i], accepted=i < m, q_confidence=qc[i], p_confidence=pc[i],
                                      top_q=q_alts[i], top_p=p_alts[i], source=t.proposal.source)
                           for i, tok in enumerate(drafted_ids)]
        if corrected:
            (values,), (ids,), ((prob,),) = take(1, n), take(1, n), take(1, 1)
            rnd.correction = Choice(y, self.text_of(y), prob, self._alts(values, ids))
        elif used_all:   # all K accepted: the bonus came from p at position K+1
            ((prob,),) = take(1, 1)
            rnd.bonus = Choice(y, self.text_of(y), prob, p_alts[k])
        # else: EOS was accepted from the draft, neither correction nor bonus was used
