"""The drafters as the page, its API and the classroom's race name them, turned into the decoder's settings.

One place for the mapping, so a Generate run, the target alone it is compared with, and each lane of the race are
decoded the same way (the same cache kind, the same compiled or eager forwards, the same warm-up): a race whose
target alone ran on other forwards than Generate's compared its drafters with a slower reference than the page's.
"""
from __future__ import annotations

TREE = "tree"           # the draft model drafting EAGLE-2's dynamic tree of K nodes (specviz.engine.tree_drafter)
PAGE_COMPILE = "auto"   # the page's compile choice unless a person changes it (the Generate form's default)


def decoder_options(drafter: str, k: int, compile: str) -> dict:
    """The decoder's drafter arguments for a drafter named as the page names it, at K, under `compile`.

    "tree" runs on the dynamic cache: its forwards are never compiled (the attention mask changes every round), so
    its compile is "off". Any other name is a decoder drafter ("model", "ngram", "hybrid", ...), as it is."""
    if drafter == TREE:
        return {"drafter": "model", "tree": f"dynamic:{k}", "compile": "off"}
    return {"drafter": drafter, "compile": compile}


def target_alone_compile(drafter: str, k: int, compile: str) -> str:
    """The compile the target alone runs under when it is the reference of that drafter's run: the run's own (a
    tree's target alone is eager, as the tree is)."""
    return decoder_options(drafter, k, compile)["compile"]
