"""The speculative decoder: draft K, verify with one target forward, accept/reject.

Invariant between rounds: `tokens` holds the prompt and everything emitted;
each model's KV cache covers a prefix of `tokens` that excludes at least the
last token, so the next forward always has at least one new token to read.

One round (Leviathan et al. 2023, notation of DESIGN.md):
  1. the draft samples x_1..x_K autoregressively from q_1..q_K;
  2. the target reads [pending tokens, x_1..x_K] in ONE forward and gives p_1..p_{K+1};
  3. x_i is accepted iff u_i < min(1, p_i(x_i) / q_i(x_i)), up to the first rejection j;
  4. after a rejection the correction is drawn from max(0, p_j - q_j) (normalised);
     if all K pass, the bonus is drawn from p_{K+1};
  5. both caches are cropped back to the accepted prefix.
Everything stays on the device until one batched transfer per round.
"""
from __future__ import annotations

import time
from typing import Iterator, Sequence

import torch
from transformers import DynamicCache

from .sampling import SamplingConfig, probabilities, sample
from .trace import Alt, Choice, DraftToken, Round

MAX_K = 32
TOP_N = 5


# ---------------------------------------------------------------- shared helpers
def as_id_tensor(input_ids: Sequence[int] | torch.Tensor, device) -> torch.Tensor:
    """A list of ints or a [1, T] / [T] tensor -> a 1-D int64 tensor on `device`."""
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    if ids.dim() == 2:
        if ids.shape[0] != 1:
            raise ValueError(f"only batch size 1 is supported, got input_ids of shape {tuple(ids.shape)}")
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError("input_ids must hold at least one token")
    return ids.to(device)


def input_device(model) -> torch.device:
    # With accelerate's device_map the embedding may sit on another device than model.device.
    return model.get_input_embeddings().weight.device


def eos_ids(model, eos_token_id) -> list[int]:
    if eos_token_id is None:
        eos_token_id = getattr(model.generation_config, "eos_token_id", None)
    if eos_token_id is None:
        return []
    return [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)


def check_budget(max_new_tokens: int, limit: int = 100_000) -> None:
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= limit:
        raise ValueError(f"max_new_tokens must be a whole number in [1, {limit}], got {max_new_tokens!r}")


def make_generator(seed: int | None, device) -> torch.Generator:
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


class Timer:
    """Wall clock that waits for queued CUDA work, so per-phase times are honest."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __call__(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


def forward_logits(model, ids: torch.Tensor, cache: DynamicCache, keep: int) -> torch.Tensor:
    """Feed `ids` [T] after what `cache` holds; logits [keep, V] of the last `keep` positions."""
    out = model(input_ids=ids[None].to(input_device(model)), cache=cache, use_cache=True, logits_to_keep=keep)
    return out.logits[0]


def decode_tokens(tokenizer, ids: list[int]) -> list[str]:
    if tokenizer is None:
        return [f"<{i}>" for i in ids]
    return tokenizer.batch_decode([[i] for i in ids])


# ---------------------------------------------------------------- the rejection rule
def acceptance_prob(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x)/q(x)) for drafted tokens x (q(x) > 0 since x was drawn from q)."""
    return torch.clamp(p_x / q_x, max=1.0)


def residual(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """Rows of max(0, p - q), normalised: where the correction is drawn after a rejection."""
    r = torch.clamp(P - Q, min=0.0)
    mass = r.sum(-1, keepdim=True)
    # p == q leaves no residual mass; such a row is never used (a rejection needs
    # p(x) < q(x)), but it must still be a valid distribution to index into.
    return torch.where(mass > 0, r / mass.clamp_min(1e-30), P)


# ---------------------------------------------------------------- the decoder
@torch.inference_mode()
def speculative_generate(
    target,
    draft,
    input_ids: Sequence[int] | torch.Tensor,
    k: int = 4,
    sampling: SamplingConfig = SamplingConfig(),
    max_new_tokens: int = 64,
    seed: int | None = 0,
    *,
    tokenizer=None,
    eos_token_id: int | list[int] | None = None,
    ignore_eos: bool = False,
    record: bool = True,
    stats: dict | None = None,
    adaptive_threshold: float | None = None,
) -> Iterator[Round]:
    """Yield one `Round` per draft/verify step until `max_new_tokens` or EOS.

    `adaptive_threshold=t` stops drafting a round early once the draft's
    confidence in its token (q(x); the untempered softmax when greedy) falls
    below t: K is then a maximum. The stop depends only on the draft's own
    samples, so the output stays exactly the target's.

    `record=False` skips the per-token trace (texts, top-5 lists, confidences);
    the emitted tokens, verdicts and timings are still there. `stats`, if
    given, receives `prefill_seconds`.
    """
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be a whole number in [1, {MAX_K}], got {k!r}")
    check_budget(max_new_tokens)
    device = input_device(target)
    tokens = as_id_tensor(input_ids, device)
    eos = set() if ignore_eos else set(eos_ids(target, eos_token_id))
    gen = make_generator(seed, device)
    clock = Timer(device)
    # The two models may pad their vocabularies differently; real tokens live in the common prefix.
    vocab = min(target.config.get_text_config().vocab_size, draft.config.get_text_config().vocab_size)
    if adaptive_threshold is not None and not 0.0 <= adaptive_threshold <= 1.0:
        raise ValueError(f"adaptive_threshold must be in [0, 1], got {adaptive_threshold}")

    t0 = clock()
    target_cache, draft_cache = DynamicCache(), DynamicCache()
    if len(tokens) > 1:  # prefill all but the last token: it is read by the first round
        forward_logits(target, tokens[:-1], target_cache, 1)
        forward_logits(draft, tokens[:-1], draft_cache, 1)
    if stats is not None:
        stats["prefill_seconds"] = clock() - t0

    produced = 0
    round_index = 0
    while produced < max_new_tokens:
        t_start = clock()
        n = len(tokens)
        # Never draft past the budget: K accepted drafts + 1 bonus must fit.
        k_round = min(k, max_new_tokens - produced - 1)

        # 1. draft K tokens autoregressively from q.
        drafts, q_rows, q_logits = [], [], []
        pending = tokens[draft_cache.get_seq_length():]
        for _ in range(k_round):
            logits = forward_logits(draft, pending, draft_cache, 1)[-1, :vocab].to(device)
            q = probabilities(logits, sampling)
            pending = sample(q[None], gen, sampling.greedy)
            drafts.append(pending)
            q_rows.append(q)
            q_logits.append(logits)
            if adaptive_threshold is not None:
                sure = (torch.softmax(logits.float(), -1) if sampling.greedy else q)[pending[0]]
                if sure.item() < adaptive_threshold:  # a host sync per draft token: the price of stopping early
                    break
        k_round = len(drafts)
        t_drafted = clock()

        # 2. the target scores every draft position, plus one, in one forward.
        draft_ids = torch.cat(drafts) if drafts else tokens.new_empty(0)
        target_in = torch.cat([tokens[target_cache.get_seq_length():], draft_ids])
        p_logits = forward_logits(target, target_in, target_cache, k_round + 1)[:, :vocab].to(device)
        P = probabilities(p_logits, sampling)                                    # [K+1, V]

        # 3. modified rejection sampling, vectorised over positions.
        u = accept_prob = None
        if k_round:
            Q = torch.stack(q_rows)                                              # [K, V]
            pos = torch.arange(k_round, device=device)
            p_x, q_x = P[pos, draft_ids], Q[pos, draft_ids]
            accept_prob = acceptance_prob(p_x, q_x)
            u = torch.rand(k_round, generator=gen, device=device)
            accepted = u < accept_prob
            n_acc = accepted.long().cumprod(0).sum()                             # stays on device
            # 4. the next token: row j < K is the residual after rejecting x_j, row K is p_{K+1}.
            next_dist = torch.cat([residual(P[:k_round], Q), P[k_round:]]).index_select(0, n_acc.view(1))
        else:
            n_acc = torch.zeros((), dtype=torch.long, device=device)
            next_dist = P[:1]
        next_token = sample(next_dist, gen, sampling.greedy)

        # The one host sync of the round: how many were accepted, and the new token.
        m, y = torch.stack([n_acc, next_token[0]]).tolist()
        t_verified = clock()

        emitted = draft_ids[:m].tolist() + [y]
        hit_eos = False
        if eos:
            for i, t in enumerate(emitted):
                if t in eos:
                    hit_eos, emitted = True, emitted[: i + 1]
                    break
        used_all = len(emitted) == m + 1  # False when EOS cut the round inside the accepted drafts

        tokens = torch.cat([tokens, torch.tensor(emitted, device=device)])
        # 5. keep cached keys only for the accepted prefix; the newest token stays pending.
        target_cache.crop(-(target_cache.get_seq_length() - (n + m)))
        if draft_cache.get_seq_length() > n + m:
            draft_cache.crop(-(draft_cache.get_seq_length() - (n + m)))
        produced += len(emitted)

        rnd = Round(
            index=round_index,
            drafted=[],
            rejected_at=m if m < k_round and used_all else None,
            correction=None,
            bonus=None,
            emitted=emitted,
            draft_seconds=t_drafted - t_start,
            verify_seconds=t_verified - t_drafted,
            eos=hit_eos,
        )
        n_drafts_shown = k_round if used_all else len(emitted)
        if record:
            _record(rnd, tokenizer, sampling, draft_ids, n_drafts_shown, used_all, m, k_round,
                    q_rows, q_logits, P, p_logits, u, accept_prob, next_dist, y)
        else:
            acc = [i < m for i in range(n_drafts_shown)]
            rnd.drafted = [DraftToken(t, "", float("nan"), float("nan"), float("nan"), float("nan"), a,
                                      float("nan"), float("nan"))
                           for t, a in zip(draft_ids[:n_drafts_shown].tolist(), acc)]
        rnd.seconds = clock() - t_start
        yield rnd
        round_index += 1
        if hit_eos:
            return


def _top(probs: torch.Tensor, texts_of) -> list[list[Alt]]:
    """Top-5 alternatives of each row of `probs` [N, V]."""
    values, ids = probs.topk(TOP_N, dim=-1)
    return [[Alt(int(i), texts_of(int(i)), float(v)) for v, i in zip(vr, ir)]
            for vr, ir in zip(values.tolist(), ids.tolist())]


def _record(rnd, tokenizer, sampling, draft_ids, n_shown, used_all, m, k_round,
            q_rows, q_logits, P, p_logits, u, accept_prob, next_dist, y) -> None:
    """Fill the per-token trace of a round (texts, probabilities, top-5 lists)."""
    p_conf = torch.softmax(p_logits.float(), -1)
    q_conf = torch.softmax(torch.stack(q_logits).float(), -1) if q_logits else None
    # Greedy distributions are one-hot: show the untempered softmax's alternatives instead.
    show_p = p_conf if sampling.greedy else P
    cache: dict[int, str] = {}

    def text_of(i: int) -> str:
        if i not in cache:
            cache[i] = decode_tokens(tokenizer, [i])[0]
        return cache[i]

    top_p = _top(show_p, text_of)
    if k_round:
        Q = torch.stack(q_rows)
        show_q = q_conf if sampling.greedy else Q
        top_q = _top(show_q, text_of)
        pos = torch.arange(k_round, device=P.device)
        rows = torch.stack([P[pos, draft_ids], Q[pos, draft_ids], accept_prob, u,
                            p_conf[pos, draft_ids], q_conf[pos, draft_ids]]).tolist()
        for i, tok in enumerate(draft_ids[:n_shown].tolist()):
            rnd.drafted.append(DraftToken(
                token_id=tok, text=text_of(tok), q=rows[1][i], p=rows[0][i], accept_prob=rows[2][i],
                u=rows[3][i], accepted=i < m, q_confidence=rows[5][i], p_confidence=rows[4][i],
                top_q=top_q[i], top_p=top_p[i]))
    if not used_all:
        return  # EOS was accepted from the draft: neither correction nor bonus was used
    if m < k_round:
        prob = float(next_dist[0, y])
        rnd.correction = Choice(y, text_of(y), prob, _top(next_dist, text_of)[0])
    else:
        rnd.bonus = Choice(y, text_of(y), float(P[k_round, y]), top_p[k_round])
