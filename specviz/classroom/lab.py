"""The losslessness lab: many first tokens drawn through the real rule (and through broken ones) at one position.

p and q are computed once, from one forward of each model over a fixed prefix;
then N rows go through `specviz.engine.rule.verify` with K = 1, in chunks sized so a
152k vocabulary never holds more than a few MB per tensor. The first emitted
token is the drafted one if accepted, else the correction, and its histogram is
compared with p (`specviz.engine.lossless`: total variation, chi-square).

The broken variants are each a bug that has shipped somewhere. They are
*teaching functions*: they live here, are passed to `rule.verify` through its
`accept_fn` / `residual_fn` hooks or change what the rule is given, and the
decoder never reaches them.

    always_accept       accept every draft: the output follows q, not p
    correction_from_p   after a rejection draw from p instead of max(0, p − q): p's overlap with q is counted twice
    untempered_q        the draft samples from the tempered q but the rule is given softmax(raw logits)
                        (transformers #47932 kind): the ratio p/q is taken against the wrong q
    greedy_softmax_q    the draft proposes its argmax but the rule is given its softmax q (#32867)
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from ..engine.lossless import chi_square_fit, total_variation
from ..engine.rule import verify
from ..engine.sampling import SamplingConfig, confidence, probabilities
from ..engine.proposal import Proposal

VARIANTS = ("real", "always_accept", "correction_from_p", "untempered_q", "greedy_softmax_q")
MAX_SAMPLES = 5_000
ELEMENTS_PER_CALL = 1 << 22   # rows per verify call = this / vocabulary (4M floats: 16 MB per [rows, V] tensor)


# ---------------------------------------------------------------- the teaching variants (never used by the decoder)
def always_accept(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """BROKEN on purpose: a = 1 for every draft."""
    return torch.ones_like(p_x)


def residual_is_p(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """BROKEN on purpose: the correction is drawn from p, ignoring q."""
    return P


# ---------------------------------------------------------------- p and q at one position
@dataclass
class LabDistributions:
    p: torch.Tensor          # [V] the target's sampling distribution (the truth the histogram must match)
    q: torch.Tensor          # [V] the draft's sampling distribution: what the draft samples from
    q_raw: torch.Tensor      # [V] the draft's untempered softmax (what the untempered_q bug hands the rule)
    texts: Callable[[int], str]


@torch.inference_mode()
def distributions(target, draft, prompt_ids: list[int], sampling: SamplingConfig,
                  texts: Callable[[int], str]) -> LabDistributions:
    """One forward of each model over the prefix; p, q (same transform) and the untempered q."""
    device = next(target.parameters()).device
    ids = torch.tensor([prompt_ids], device=device)
    lt = target(input_ids=ids).logits[0, -1].float()
    ld = draft(input_ids=ids.to(next(draft.parameters()).device)).logits[0, -1].float().to(device)
    vocab = min(lt.shape[-1], ld.shape[-1])
    lt, ld = lt[:vocab], ld[:vocab]
    return LabDistributions(p=probabilities(lt, sampling), q=probabilities(ld, sampling),
                            q_raw=confidence(ld), texts=texts)


# ---------------------------------------------------------------- sampling through the rule
def _propose(d: LabDistributions, variant: str, rows: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(draft_ids [rows, 1], Q [rows, 1, V]) as the variant's drafter would hand them to the rule."""
    V = d.p.shape[-1]
    if variant == "greedy_softmax_q":    # the draft's argmax, but its softmax q given to the rule
        ids = d.q.argmax().expand(rows, 1)
    else:
        ids = torch.multinomial(d.q, rows, replacement=True, generator=gen)[:, None]
    q_given = d.q_raw if variant == "untempered_q" else d.q
    return ids, q_given.expand(rows, 1, V)


def first_tokens(d: LabDistributions, variant: str, rows: int, gen: torch.Generator) -> torch.Tensor:
    """[rows] first emitted tokens of `rows` independent rounds with K = 1 through `rule.verify`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown lab variant {variant!r}; one of {VARIANTS}")
    ids, Q = _propose(d, variant, rows, gen)
    # P[:, 1] would be p after the drafted token (the bonus's distribution); the first emitted token never
    # depends on it, so p itself stands in for it rather than a forward per drafted token.
    P = d.p.expand(rows, 2, d.p.shape[-1])
    verdict = verify(P, Proposal(ids, Q), gen, greedy=False,
                     accept_fn=always_accept if variant == "always_accept" else None,
                     residual_fn=residual_is_p if variant == "correction_from_p" else None)
    return torch.where(verdict.n_accepted > 0, ids[:, 0], verdict.next_token)


def sample_counts(d: LabDistributions, variant: str, n: int, seed: int = 0,
                  stop: threading.Event | None = None) -> Iterator[torch.Tensor]:
    """Cumulative [V] counts of the first emitted token, yielded after each chunk; stops early when `stop` is set."""
    n = max(1, min(int(n), MAX_SAMPLES))
    gen = torch.Generator(device=d.p.device).manual_seed(int(seed))
    V = d.p.shape[-1]
    rows_per_call = max(1, min(n, ELEMENTS_PER_CALL // V))
    # At least ~10 updates for the page, whatever the vocabulary.
    report_every = max(rows_per_call, n // 10)
    counts = torch.zeros(V, dtype=torch.long, device=d.p.device)
    done, since = 0, 0
    while done < n and not (stop is not None and stop.is_set()):
        rows = min(rows_per_call, n - done)
        counts += torch.bincount(first_tokens(d, variant, rows, gen), minlength=V)
        done, since = done + rows, since + rows
        if since >= report_every or done >= n:
            since = 0
            yield counts.clone()


# ---------------------------------------------------------------- the verdict of the histogram
@dataclass(frozen=True)
class Fit:
    n: int
    tv: float                # total variation between the histogram and p
    p_value: float           # chi-square goodness of fit (cells expecting < 5 pooled)
    noise_tv: float          # TV of n samples drawn straight from p: what sampling noise alone gives


def fit(counts: torch.Tensor, p: torch.Tensor, seed: int = 0) -> Fit:
    """How far the histogram is from p, with the specviz.engine.lossless helpers (over the tokens either side has)."""
    n = int(counts.sum())
    seen = torch.nonzero(counts).flatten().tolist()
    observed = Counter({(i,): c for i, c in zip(seen, counts[seen].tolist())})
    support = torch.nonzero(p > 0).flatten()
    exact = {(i,): v for i, v in zip(support.tolist(), p[support].double().tolist())}
    _, p_value = chi_square_fit(observed, exact)
    gen = torch.Generator(device=p.device).manual_seed(int(seed) + 1)
    direct = torch.bincount(torch.multinomial(p, max(n, 1), replacement=True, generator=gen), minlength=p.shape[-1])
    return Fit(n=n, tv=total_variation(observed, exact), p_value=p_value,
               noise_tv=float(0.5 * (direct.double() / max(n, 1) - p.double()).abs().sum()))


def top_bins(counts: torch.Tensor, p: torch.Tensor, n_bins: int = 12) -> list[tuple[int, float, float]]:
    """(token id, empirical share, p) of the tokens that matter most to either side, for the histogram."""
    n = max(int(counts.sum()), 1)
    share = counts.double() / n
    score = torch.maximum(share, p.double())
    ids = score.topk(min(n_bins, score.shape[-1])).indices.tolist()
    return [(i, float(share[i]), float(p[i])) for i in ids]


# ---------------------------------------------------------------- tiny demo models (no model pair needed)
TINY_WORDS = (" the", " cat", " sat", " on", " a", " mat", " dog", " ran", ".", " and", " red", " big", " fox",
              " hat", " sun", "!")
_TINY: dict = {}
_TINY_LOCK = threading.Lock()


def tiny_pair():
    """(target, draft) tiny random Qwen2 models over TINY_WORDS: built once, in milliseconds, enumerable."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with _TINY_LOCK:
        if not _TINY:
            for name, seed in (("target", 11), ("draft", 12)):
                torch.manual_seed(seed)
                config = Qwen2Config(vocab_size=len(TINY_WORDS), hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                     max_position_embeddings=256, tie_word_embeddings=False)
                model = Qwen2ForCausalLM(config).eval().float()
                with torch.no_grad():
                    model.lm_head.weight.mul_(6.0)   # random init is near-uniform; make it opinionated
                _TINY[name] = model
        return _TINY["target"], _TINY["draft"]


def tiny_prompt(text: str) -> list[int]:
    """The tiny models' 'tokenizer': one id per character (bounded), never empty."""
    return [ord(ch) % len(TINY_WORDS) for ch in text[:64]] or [0]


def tiny_distributions(prompt: str, sampling: SamplingConfig) -> LabDistributions:
    target, draft = tiny_pair()
    return distributions(target, draft, tiny_prompt(prompt), sampling, lambda i: TINY_WORDS[i])
