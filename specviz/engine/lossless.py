"""Checking the promise: samples of the speculative decoder against the target's exact distribution.

Used by the statistical tests and meant for the classroom's losslessness lab.
`sample_prefixes` draws many independent outputs through the decoder's own
round (`decode_round`, chain or tree: the drafter, the target's verify forward, the one rule
in specviz.engine.rule, the sampling transform), thousands of rows per forward instead
of one decoder call per sample. `exact_prefixes` enumerates what plain sampling
from the target gives; `chi_square_fit` compares the two.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import torch

from ..runtime.decoding import input_device, prefill
from .drafters import make_drafter, shared_vocab
from .rule import emitted_tokens
from .options import DecodeOptions
from .sampling import SamplingConfig, probabilities
from .speculative import Sides, decode_round

MIN_EXPECTED = 5.0   # chi-square cells expecting fewer samples are pooled into one


@torch.inference_mode()
def sample_prefixes(target, draft, prompt: list[int], n_tokens: int, n_samples: int, options: DecodeOptions, *,
                    chunk: int = 20_000, replay: bool = False) -> Counter:
    """Counts of the first `n_tokens` emitted after `prompt`, over `n_samples` independent runs.

    Rows that still need tokens after a round are grouped by length and run
    through another round together; caches are not used (every round reads its
    rows afresh), which is what lets rows of different histories share a forward.
    `options` as for `speculative_generate`: its sampling, seed and drafting (a `Chain`: k, the drafter's name
    "model", "ngram", "hybrid"..., the adaptive threshold; or a `Tree`). `options.static_cache=True` prefills each
    group into static caches first, so the round reads through the decoder's static-cache path (cache positions,
    masks); `replay=True` as well, its forwards through the CUDA-graph path's fixed buffers, uncaptured
    (specviz.runtime.graphs "buffers": the graphs' bookkeeping).
    """
    device = input_device(target)
    vocab = shared_vocab(target, draft)
    gen = torch.Generator(device=device).manual_seed(options.seed)
    counts: Counter = Counter()
    for start in range(0, n_samples, chunk):
        rows = [[] for _ in range(min(chunk, n_samples - start))]
        waiting = list(range(len(rows)))
        while waiting:
            by_length: dict[int, list[int]] = {}
            for r in waiting:
                by_length.setdefault(len(rows[r]), []).append(r)
            for group in by_length.values():
                tokens = torch.tensor([prompt + rows[r] for r in group], device=device)
                state = _one_round(target, draft, tokens, options, gen, vocab, replay)
                out, lengths = emitted_tokens(state.proposal.ids, state.verdict)
                for r, toks, n in zip(group, out.tolist(), lengths.tolist()):
                    rows[r] += toks[:n]
            waiting = [r for r in waiting if len(rows[r]) < n_tokens]
        counts.update(tuple(r[:n_tokens]) for r in rows)
    return counts


def _one_round(target, draft, tokens: torch.Tensor, options: DecodeOptions, gen: torch.Generator, vocab: int,
               replay: bool):
    """One round of the decoder's own `decode_round` for every row of `tokens`, with a fresh drafter (no cache to
    carry between groups): without caches, or prefilled into static ones (`options.static_cache`, `replay`)."""
    how = options.drafting
    if options.tree:   # a tree's costs size a machine's decoder rounds: the sampler drafts every tree whole
        drafter = make_drafter(dataclasses.replace(how, costs=None), draft, vocab)
        return decode_round(Sides(target, None, drafter, vocab), tokens, drafter.max_depth, options.sampling, gen)[0]
    cache_options = None
    if options.static_cache or replay:
        cache_options = dict(static=True, max_len=tokens.shape[1] + how.depth + 2,
                             **(dict(compiled=True, backend="buffers") if replay else {}))
    drafter = make_drafter(how, draft, vocab, cache_options=cache_options)
    target_cache = None
    if cache_options:
        target_cache = prefill(target, tokens, **cache_options)
        drafter.begin(tokens)
    return decode_round(Sides(target, target_cache, drafter, vocab), tokens, how.depth, options.sampling, gen)[0]


@torch.inference_mode()
def exact_prefixes(model, prompt: list[int], n_tokens: int, sampling: SamplingConfig) -> dict[tuple, float]:
    """P(first n_tokens) under plain sampling from `model` (enumerated: for tiny vocabularies only)."""
    out = {(): 1.0}
    for _ in range(n_tokens):
        seqs = list(out)
        ids = torch.tensor([prompt + list(s) for s in seqs], device=input_device(model))
        probs = probabilities(model(input_ids=ids).logits[:, -1], sampling).tolist()
        out = {seq + (t,): out[seq] * pt for seq, row in zip(seqs, probs) for t, pt in enumerate(row) if pt > 0}
    return out


def chi_square_pvalue(observed: list[float], expected: list[float]) -> tuple[float, float]:
    """Pearson's statistic and its p-value (df = cells - 1), via the regularised upper gamma function."""
    obs, exp = torch.tensor(observed, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64)
    stat = float(((obs - exp) ** 2 / exp).sum())
    df = len(observed) - 1
    if df < 1:
        return stat, 1.0
    return stat, float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                               torch.tensor(stat / 2, dtype=torch.float64)))


def chi_square_fit(counts: Counter | dict, exact: dict[tuple, float]) -> tuple[dict, float]:
    """(samples the exact distribution calls impossible, chi-square p-value of the rest).

    Cells expecting fewer than MIN_EXPECTED samples are pooled, the usual rule
    for the chi-square approximation to hold.
    """
    n = sum(counts.values())
    impossible = {seq: c for seq, c in counts.items() if exact.get(seq, 0.0) == 0.0}
    observed, expected, pooled_o, pooled_e = [], [], 0, 0.0
    for seq in sorted(exact, key=exact.get, reverse=True):
        e = exact[seq] * n
        if e >= MIN_EXPECTED:
            observed.append(counts.get(seq, 0))
            expected.append(e)
        else:
            pooled_o += counts.get(seq, 0)
            pooled_e += e
    if pooled_e > 0:
        observed.append(pooled_o)
        expected.append(pooled_e)
    scale = sum(observed) / sum(expected)  # float rounding of the enumerated mass
    return impossible, chi_square_pvalue(observed, [e * scale for e in expected])[1]


def total_variation(counts: Counter | dict, exact: dict[tuple, float]) -> float:
    """½ Σ |empirical − exact| over every outcome either side gives mass to."""
    n = sum(counts.values())
    keys = set(counts) | set(exact)
    return 0.5 * sum(abs(counts.get(s, 0) / n - exact.get(s, 0.0)) for s in keys)
