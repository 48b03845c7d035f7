"""Real recorded runs on the tiny pair whose vocabulary is hostile markup, for the export's tests (importable as
`exported`, like `tiny`): a sampled chain run and a tree run, as the app records them."""
from __future__ import annotations

import dataclasses
import functools

from specviz.engine.sampling import SamplingConfig
from specviz.generate import speculative_generate
from specviz.trace.records import Trace
from tests.browser.tiny_app import TinyPair

# Markup a trace file may hold in any text: each would run script or load something if it reached the page as markup
# (the flags let a browser test see it ran even where a dialog would be missed).
HOSTILE = ["</script><script>window.__pwned = 1; alert(1)</script>", "<img src=x onerror=\"window.__pwned = 2\">",
           "\"'><svg onload=alert(3)>", "&lt;b&gt; \u2028 \u2029 <!-- ]]>", "<iframe srcdoc='<script>alert(4)</script>'>"]


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
    drafting = dict(tree=tree) if tree else dict(k=k)   # a tree's size is in its shape
    rounds = list(speculative_generate(p.target, p.draft, ids, **drafting, sampling=sampling,
                                       max_new_tokens=tokens, seed=seed, tokenizer=p.tokenizer))
    text = p.tokenizer.decode([i for r in rounds for i in r.emitted])
    return Trace(prompt=prompt, prompt_ids=list(ids), draft_model=p.draft_name, target_model=p.target_name, k=k,
                 max_new_tokens=tokens, seed=seed, sampling=sampling.to_dict(), rounds=rounds, output_text=text,
                 device="cpu", dtype="float32", target_weights="fp32")


def hostile(trace: Trace) -> Trace:
    """The trace with markup in its prompt, model names, every token, alternative and tree node."""
    def texts(i: int) -> str:
        return HOSTILE[i % len(HOSTILE)]

    def alts(alts):
        return [dataclasses.replace(a, text=texts(j)) for j, a in enumerate(alts)]

    rounds = []
    for n, rnd in enumerate(trace.rounds):
        drafted = [dataclasses.replace(tk, text=texts(n + i), top_p=alts(tk.top_p), top_q=alts(tk.top_q))
                   for i, tk in enumerate(rnd.drafted)]
        extra = {name: dataclasses.replace(c, text=texts(n + 1), top=alts(c.top))
                 for name in ("correction", "bonus") if (c := getattr(rnd, name)) is not None}
        tree = [dataclasses.replace(nd, text=texts(i)) for i, nd in enumerate(rnd.tree)] if rnd.tree else None
        rounds.append(dataclasses.replace(rnd, drafted=drafted, tree=tree, **extra))
    return dataclasses.replace(trace, prompt=HOSTILE[0] + HOSTILE[1], draft_model=HOSTILE[2],
                               target_model=HOSTILE[1], device=HOSTILE[0], rounds=rounds)
