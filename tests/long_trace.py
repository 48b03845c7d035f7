"""A valid trace of many rounds, made from a short real run on the tiny pair (for the long-replay tests)."""
from __future__ import annotations

import dataclasses

from specviz.engine.sampling import SamplingConfig
from specviz.generate import speculative_generate
from specviz.trace.records import Trace


def long_trace(pair, n_rounds: int, k: int = 2, seed: int = 0) -> Trace:
    """`n_rounds` rounds: a 24-token sampled run's rounds repeated (renumbered), valid per `specviz.trace.files`."""
    ids = pair.encode_chat("a long replay")
    sampling = SamplingConfig(temperature=1.0)
    base = list(speculative_generate(pair.target, pair.draft, ids, k=k, sampling=sampling, max_new_tokens=24,
                                     seed=seed, tokenizer=pair.tokenizer))
    rounds = [dataclasses.replace(base[i % len(base)], index=i) for i in range(n_rounds)]
    tokens = sum(len(r.emitted) for r in rounds)
    return Trace(prompt="a long replay", prompt_ids=list(ids), draft_model=pair.draft_name,
                 target_model=pair.target_name, k=k, max_new_tokens=tokens, seed=seed,
                 sampling=sampling.to_dict(), rounds=rounds, device="cpu", dtype="float32")
