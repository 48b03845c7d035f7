"""The drafters as the page, its API and the classroom's race name them, turned into the decoder's settings.

One place for the mapping, so a Generate run, the target alone it is compared with, and each lane of the race are
decoded the same way (the same cache kind, the same compiled or eager forwards, the same warm-up): a race whose
target alone ran on other forwards than Generate's compared its drafters with a slower reference than the page's.
"""
from __future__ import annotations

TREE = "tree"           # the draft model drafting EAGLE-2's dynamic tree of K nodes (tree_drafter.DynamicTree)
PAGE_COMPILE = "auto"   # the page's compile choice unless a person changes it (the Generate form's default)


def drafting(drafter: str, k: int, adaptive_threshold: float | None = None, lookup_k: int | None = None):
    """How a drafter named as the page names it drafts at K (an `options.Chain` or `options.Tree`): "tree" is the
    draft model's dynamic tree of K nodes; any other name is a chain drafter ("model", "ngram", "hybrid", ...)
    drafting K tokens, as it is."""
    from .options import Chain, Tree   # torch: the page's names are read where no model is (the classroom's lessons)

    if drafter == TREE:
        return Tree(f"dynamic:{k}")
    return Chain(k, adaptive_threshold, drafter, lookup_k)


def compile_for(drafter: str, compile: str) -> str:
    """The compile a drafter's run runs under, and the target alone it is compared with: a tree runs on the dynamic
    cache, its forwards never compiled (the attention mask changes every round), so its target alone is eager too
    and the speedup compares like with like; any other drafter keeps the choice."""
    return "off" if drafter == TREE else compile
