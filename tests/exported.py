"""Real recorded runs on the tiny pair whose vocabulary is hostile markup, for the export's tests (importable as
`exported`, like `tiny`): a sampled chain run and a tree run, as the app records them."""
from __future__ import annotations

import functools

from specviz.engine.sampling import SamplingConfig
from specviz.engine.speculative import speculative_generate
from specviz.trace.records import Trace
from tests.browser.tiny_app import TinyPair


@functools.cache
def pair() -> TinyPair:
    return TinyPair()


def recorded(tree: str | None = None, tokens: int = 24, seed: int = 3, prompt: str = "the cat </script>") -> Trace:
    """A run of the tiny pair as a trace: temperature 1 (so rejections, corrections and bonuses all occur), K = 3
    or the tree `tree` (e.g. "dynamic:6"). Its token texts include `<script>`, `<img onerror>`, quotes and `&amp;`."""
    p = pair()
    ids = p.encode_chat(prompt)
    sampling = SamplingConfig(temperature=1.0)
    k = 6 if tree else 3
    rounds = list(speculative_generate(p.target, p.draft, ids, k=k, tree=tree, sampling=sampling,
                                       max_new_tokens=tokens, seed=seed, tokenizer=p.tokenizer))
    text = p.tokenizer.decode([i for r in rounds for i in r.emitted])
    return Trace(prompt=prompt, prompt_ids=list(ids), draft_model=p.draft_name, target_model=p.target_name, k=k,
                 max_new_tokens=tokens, seed=seed, sampling=sampling.to_dict(), rounds=rounds, output_text=text,
                 device="cpu", dtype="float32", target_weights="fp32")
