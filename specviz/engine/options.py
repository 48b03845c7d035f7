"""What a decoding run is asked to do, in one object: `DecodeOptions`, and how it drafts (`Chain` or `Tree`).

The decoder (`speculative_generate`), the target alone (`autoregressive_generate`), the batched sampler
(`lossless.sample_prefixes`) and the benchmark all read the same object, so a setting means the same thing
everywhere and no layer forwards a dozen keywords by hand. `k` has one meaning: a chain's length. A tree's
size is in its shape ("2x2x1") or its budget ("dynamic:N").

`decode_options(options, **keywords)` is the keyword shim behind the README's examples
(`speculative_generate(target, draft, ids, k=4, max_new_tokens=64)`): the keywords of the old signature
build (or amend) the object.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..limits import MAX_K
from .sampling import SamplingConfig
from .tree import TreeShape


# The drafters that take prompt lookup's continuation when it matches (the others draft every round one way).
HYBRID_DRAFTERS = ("hybrid", "hybrid_trimmed")


@dataclass(frozen=True)
class Chain:
    """Draft a chain of up to `k` tokens a round (the width-one tree).

    `drafter` is how a draft model drafts: "model", "ngram" (prompt lookup), "hybrid", "trimmed" or
    "hybrid_trimmed" (specviz.engine.drafters). `adaptive_threshold=t` stops a round's drafting once the draft's
    confidence falls below t (k is then a maximum; still exact). `lookup_k` (the hybrid drafters only; default k): the
    most tokens a round drafted by prompt lookup proposes, its model rounds staying at k. A looked-up token costs
    no draft forward, only a verify row, so where rows are cheap its runs can be longer than the model's."""

    k: int = 4
    adaptive_threshold: float | None = None
    drafter: str = "model"
    lookup_k: int | None = None

    def __post_init__(self):
        for name in ("k", "lookup_k"):
            value = getattr(self, name)
            if (value is not None or name == "k") and (not isinstance(value, int) or not 1 <= value <= MAX_K):
                raise ValueError(f"{name} must be a whole number in [1, {MAX_K}], got {value!r}")
        if self.lookup_k is not None and self.drafter not in HYBRID_DRAFTERS:
            raise ValueError(f"lookup_k applies to the hybrid drafters, not to {self.drafter!r}")

    @property
    def depth(self) -> int:
        """The most tokens any round drafts (what the caches and the compiled verify must have room for)."""
        return max(self.k, self.lookup_k or self.k)


@dataclass(frozen=True)
class Tree:
    """Draft a tree a round: `shape` is a TreeShape, widths ("2x2x1"), a parent list ("-1,-1,0"), "dynamic:N"
    or "hybrid:N" (specviz.engine.tree_drafter.tree_plan); `costs` (a tree_drafter.TreeCosts) sizes each
    dynamic tree to the machine's measured costs. Trees run on dynamic caches, eagerly; a width-one shape is
    the chain of its length (`as_chain`), run as that chain."""

    shape: Any
    costs: Any = None

    def as_chain(self) -> Chain | None:
        """The `Chain` this tree is when its shape is fixed and one node wide ("1x1x1"), else None."""
        shape = self.shape
        if isinstance(shape, str):
            if shape.strip().lower().split(":")[0] in ("dynamic", "hybrid"):
                return None
            shape = TreeShape.parse(shape)
        return Chain(k=shape.size) if shape.is_chain() and shape.size <= MAX_K else None


@dataclass(frozen=True)
class DecodeOptions:
    """One run's settings; every field has the default the decoder always had.

    `record=False` skips the per-token texts, top-5 lists and confidences (`tokenizer` names the tokens).
    `compile` = "auto" | "on" | "off" | "graphs" (specviz.runtime.forwards); `static_cache=True` runs the static
    cache without graphs. `stop()` is asked between warm-up calls and chunks of the prefill (once True: no round),
    then between rounds (the target alone: between tokens): once True the run ends there, what it emitted kept.
    What the run measured comes back when it ends, as the generator's return value: a frozen `RunReport`
    (specviz.runtime.report: `prefill_seconds`, `warmup_seconds` compiled, `drafter_seconds` otherwise, and
    `stopped` when `stop()` ended the run: the one way a consumer tells a cut run from a whole one). `on_event`,
    if given, is called as `on_event(name, value)` with each of those facts as the run learns it (the page says
    the warm-up ended while the run goes on)."""

    sampling: SamplingConfig = SamplingConfig()
    max_new_tokens: int = 64
    seed: int | None = 0
    drafting: Chain | Tree = Chain()
    eos_token_id: int | list[int] | None = None
    ignore_eos: bool = False
    tokenizer: Any = None
    record: bool = True
    compile: str = "auto"
    static_cache: bool | None = None
    stop: Callable[[], bool] | None = None
    on_event: Callable[[str, Any], None] | None = None

    def __post_init__(self):
        chain = self.drafting.as_chain() if isinstance(self.drafting, Tree) else None
        if chain is not None:   # a chain is the width-one tree: one run, drafted, verified and recorded alike
            object.__setattr__(self, "drafting", chain)

    @property
    def tree(self) -> bool:
        """The run drafts trees wider than one node (a width-one tree is its chain: see `Tree.as_chain`)."""
        return isinstance(self.drafting, Tree)


DRAFTING_KEYWORDS = ("k", "adaptive_threshold", "drafter", "lookup_k", "tree", "tree_costs")


def decode_options(options: DecodeOptions | None = None, **keywords) -> DecodeOptions:
    """`options` (or the defaults) amended by keywords: any field of DecodeOptions, or the old drafting keywords
    `k`, `adaptive_threshold`, `drafter`, `lookup_k`, `tree`, `tree_costs` (`k` with `tree` is refused: a chain's
    length means nothing to a tree, whose size is in its shape)."""
    base = options if options is not None else DecodeOptions()
    given = {name: keywords.pop(name) for name in DRAFTING_KEYWORDS if name in keywords}
    if given:
        keywords["drafting"] = drafting_of(base.drafting, given)
    return dataclasses.replace(base, **keywords) if keywords else base


def drafting_of(current: Chain | Tree, given: dict) -> Chain | Tree:
    """The drafting choice the old keywords in `given` spell, starting from `current` (a chain's unnamed settings
    are kept)."""
    if given.get("tree") is not None:
        if given.get("drafter", "model") != "model" or given.get("adaptive_threshold") is not None \
                or given.get("lookup_k") is not None:
            raise ValueError("a tree is drafted by a draft model (drafter='model', no adaptive_threshold)")
        if given.get("k") is not None:
            raise ValueError(f"k is a chain's length and a tree's size is in its shape: give k or tree, not both "
                             f"(tree={given['tree']!r}: widths such as '2x2x1', or 'dynamic:N' for N nodes)")
        return Tree(given["tree"], given.get("tree_costs"))
    chain = current if isinstance(current, Chain) else Chain()
    return dataclasses.replace(chain, **{name: given[name] for name in ("k", "adaptive_threshold", "drafter",
                                                                     "lookup_k") if name in given})
