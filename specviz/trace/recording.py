"""Turn one round's device tensors into the `Round` record every view, JSON file and bench reads.

Kept apart from the decoder loop so the loop stays readable and so the trace's
cost (extra softmaxes, top-5 lists, token texts) sits in one place that can be
measured and switched off (`record=False` keeps only tokens, verdicts, times).
"""
from __future__ import annotations

import torch

from ..runtime.token_text import decode_tokens
from ..limits import TOP_N
from ..engine.rule import Settled
from ..engine.sampling import SamplingConfig
from ..engine.speculative import RoundTensors
from .records import Alt, Choice, DraftToken, Round
from .tree_recording import path_tokens, tree_numbers


def unrecorded_token(token_id: int, accepted: bool, source: str) -> DraftToken:
    """A drafted token whose numbers were not recorded (record=False): NaN everywhere but the verdict."""
    nan = float("nan")
    return DraftToken(token_id=token_id, text="", q=nan, p=nan, accept_prob=nan, u=nan, accepted=accepted,
                      q_confidence=nan, p_confidence=nan, source=source)


class RoundRecorder:
    """Builds each round's `Round` from its tensors and its settled outcome, chain or tree; caches token texts
    across rounds. `drafter` is the run's drafting method as a Round records it ("model", "ngram", ..., "tree");
    `trees`: the run drafts trees, so a round whose tree came out one node wide is recorded node by node too (a
    chain run's rounds list their drafts only)."""

    def __init__(self, tokenizer, sampling: SamplingConfig, record: bool = True, clock=None, drafter: str = "model",
                 trees: bool = False):
        self.tokenizer, self.sampling, self.record_numbers, self.clock = tokenizer, sampling, record, clock
        self.drafter, self.trees = drafter, trees
        self._texts: dict[int, str] = {}

    def text_of(self, token_id: int) -> str:
        if token_id not in self._texts:
            self._texts[token_id] = decode_tokens(self.tokenizer, [token_id])[0]
        return self._texts[token_id]

    def alts(self, values: list[float], ids: list[float]) -> list[Alt]:
        """The top-n as alternatives, those of probability 0 left out: a one-hot (greedy) residual or a truncated
        (top-k, top-p) p has fewer than n, and topk's fillers at 0.00 are no alternatives."""
        return [Alt(int(i), self.text_of(int(i)), v) for v, i in zip(values, ids) if v > 0]

    def record(self, index: int, t: RoundTensors, outcome: Settled, marks: tuple[float, float, float]) -> Round:
        """The round's record; `marks` are the clock's readings at its start, after drafting, after verifying.

        A tree round records every node (`tree`) and its path as `drafted`. Its `seconds` run until the record is
        built, so the trace's own cost is counted.
        """
        started, drafted_at, verified_at = marks
        nodes = None
        if not self.record_numbers:
            drafted = [unrecorded_token(tok, i < outcome.n_accepted, t.proposal.source)
                       for i, tok in enumerate(outcome.drafted)]
            correction = bonus = None
        elif t.proposal.shape.is_chain() and not (self.trees and t.proposal.shape.size):
            drafted, correction, bonus = self._numbers(t, outcome)
        else:
            nodes, correction, bonus = tree_numbers(self, t, outcome)
            drafted = path_tokens(t, nodes, outcome)
        return Round(index=index, drafted=drafted, rejected_at=outcome.rejected_at, correction=correction,
                     bonus=bonus, emitted=outcome.emitted, draft_seconds=drafted_at - started,
                     verify_seconds=verified_at - drafted_at, eos=outcome.eos, drafter=self.drafter, tree=nodes,
                     seconds=(self.clock() if self.clock else verified_at) - started)

    def _numbers(self, t: RoundTensors, outcome: Settled) -> tuple[list[DraftToken], Choice | None, Choice | None]:
        """The drafted tokens with their numbers, the correction and the bonus (at most one of the two).

        Every number is computed on the device and comes back in ONE transfer (token
        ids ride along as floats: exact below 2^24), so the trace costs one host sync
        per round on a GPU, not one per list.
        """
        draft_ids, m, y = t.proposal.ids[0], outcome.n_accepted, outcome.next_token
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
        corrected = y is not None and m < k
        if corrected:
            top_r = t.verdict.next_dist.topk(n, dim=-1)
            parts += [top_r.values, top_r.indices.float(), t.verdict.next_dist[0, y].reshape(1, 1)]
        elif y is not None:
            parts.append(P[k, y].reshape(1, 1))
        take = _reader(torch.cat([x.reshape(-1) for x in parts]).cpu().tolist())   # the one transfer

        p_alts = [self.alts(v, i) for v, i in zip(take(k + 1, n), take(k + 1, n))]
        drafted = []
        if k:
            q_alts = [self.alts(v, i) for v, i in zip(take(k, n), take(k, n))]
            p, q, a, u, pc, qc = take(6, k)
            drafted = [DraftToken(token_id=tok, text=self.text_of(tok), q=q[i], p=p[i], accept_prob=a[i],
                                  u=u[i], accepted=i < m, q_confidence=qc[i], p_confidence=pc[i],
                                  top_q=q_alts[i], top_p=p_alts[i], source=t.proposal.source)
                       for i, tok in enumerate(outcome.drafted)]
        if corrected:
            (values,), (ids,), ((prob,),) = take(1, n), take(1, n), take(1, 1)
            return drafted, Choice(y, self.text_of(y), prob, self.alts(values, ids)), None
        if y is not None:   # all K accepted: the bonus came from p at position K+1
            ((prob,),) = take(1, 1)
            return drafted, None, Choice(y, self.text_of(y), prob, p_alts[k])
        return drafted, None, None   # EOS was accepted from the draft: neither correction nor bonus was used


def _reader(flat: list[float]):
    """take(rows, cols): the next rows x cols numbers of `flat`, as rows."""
    def take(rows: int, cols: int) -> list[list[float]]:
        nonlocal flat
        out, flat = [flat[r * cols:(r + 1) * cols] for r in range(rows)], flat[rows * cols:]
        return out
    return take
