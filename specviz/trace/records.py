"""The records that flow from the decoder to every view, to JSON and to the benchmark.

A `Round` is one draft/verify step. Notation follows docs/design.md: p = target,
q = draft, both *after* the sampling transform; `accept_prob` = min(1, p/q);
a draft token is accepted iff `u < accept_prob`.

Indices: `Round.rejected_at` is a 0-based index into `Round.drafted`; the UI
shows positions 1-based (position i = drafted[i-1]).

Alternatives (`top_q`, `top_p`, the bonus's `top`): the top-5 of the sampling
distribution, except in greedy runs where that distribution is one-hot: there
they come from the untempered softmax ("confidence") and `Trace.sampling`
says so. The acceptance rule never looks at confidence.

Reading a file back, with every field and round checked, is `specviz.trace.files`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..engine.step import Step  # noqa: F401 - the target alone's record, read beside the rounds
from . import files as tracefile
from .files import TRACE_FORMAT, TRACE_VERSION, TraceFormatError  # noqa: F401 - TraceFormatError re-exported


@dataclass
class Alt:
    """One alternative token with its probability."""

    token_id: int
    text: str
    prob: float


# The keys each list writes for its drafted tokens, in the order files have always listed them: those every file
# has, then those an older file may lack. `Round.drafted` keeps a chain's (its verdict, confidences and
# alternatives), `Round.tree` a node's (where it hangs, its status, the residual it faced), so a file written
# before both lists held one record reads as it did, and a new run's file is the same bytes.
DRAFTED_KEYS = tracefile.Keys(required=("token_id", "text", "q", "p", "accept_prob", "u", "accepted", "q_confidence",
                                        "p_confidence"), optional=("top_q", "top_p", "source"))
NODE_KEYS = tracefile.Keys(required=("token_id", "text", "parent", "q", "p", "accept_prob", "u", "status"),
                           optional=("r", "top_r", "top_q"))


@dataclass
class DraftToken:
    """One drafted token: a node of the round's draft tree. A chain is the width-one tree, so its drafts are a path:
    each hangs from the token before it (`parent` None) and is a first child, tested against p itself (`r` None).

    `Round.drafted` lists the drafts a chain's views read (a tree round's: its accepted path, then the child
    rejected at its end) with their confidences and alternatives; `Round.tree` lists every node of a tree round
    with where it hangs, its status and the residual it was tested against."""

    token_id: int
    text: str
    q: float                 # the probability of the token under the q it was drawn from
    p: float                 # the target's probability of the token after its parent (a chain: at its position)
    accept_prob: float       # min(1, r/q) against the r it was tested against (0 for a node never tried)
    u: float                 # the uniform draw; accepted iff tried and u < accept_prob
    accepted: bool = False   # on the kept path (a node: its status says so)
    q_confidence: float | None = None   # untempered softmax of the draft; display only (None: not recorded)
    p_confidence: float | None = None   # untempered softmax of the target; display only
    top_q: list[Alt] = field(default_factory=list)
    top_p: list[Alt] = field(default_factory=list)
    source: str = "model"    # what proposed it: "model" (the draft model) or "ngram" (prompt lookup)
    # A tree's node: its parent's index in Round.tree (-1: the sequence's last token) and "accepted" (on the kept
    # path), "rejected" (tried, failed) or "untried". None for a draft in Round.drafted: its parent is the token
    # before it (a path), its verdict the round's (`Round.verdict`).
    parent: int | None = None
    status: str | None = None
    # Tried nodes (the classroom walks them): the top of the residual r the node was tested against (p itself
    # for a first child); its top_q is that of the q it was drawn from. After a rejected child the next sibling's
    # top_r is the residual it left (the last child's is the correction's top). Empty in older traces.
    r: float | None = None   # tried nodes: the residual's probability of the token (p for a first child)
    top_r: list[Alt] = field(default_factory=list)

    def __post_init__(self):
        if self.status is not None:   # files list a node's status only: whether it is accepted follows from it
            self.accepted = self.status == "accepted"

    @property
    def tested_prob(self) -> float:
        """r(x), what the token was tested against: p for a chain's draft or a first child (older traces: p)."""
        return self.r if self.r is not None else self.p

    @property
    def tested_top(self) -> list[Alt]:
        """The top of the distribution it was tested against: a node's top_r, a chain's draft's top_p."""
        return self.top_r if self.parent is not None else self.top_p


@dataclass
class Choice:
    """A token the target side drew: the correction (from the residual) or the bonus (from p)."""

    token_id: int
    text: str
    prob: float              # its probability under the distribution it was drawn from
    top: list[Alt] = field(default_factory=list)   # residual top-5 (correction) or p top-5 (bonus)


@dataclass
class Round:
    index: int
    drafted: list[DraftToken] = field(metadata={"keys": DRAFTED_KEYS})
    rejected_at: int | None          # 0-based index into drafted, None if no draft token was rejected
    correction: Choice | None        # drawn from max(0, p - q) normalised, after a rejection
    bonus: Choice | None             # drawn from p after all drafts were accepted
    emitted: list[int]               # token ids appended to the output this round
    draft_seconds: float
    verify_seconds: float
    seconds: float = 0.0             # wall time of the whole round, bookkeeping included
    eos: bool = False                # the round emitted an end-of-sequence token
    drafter: str = "model"           # the drafting method of the run: "model", "ngram", "hybrid" or "tree"
    # A tree round: every node, breadth first. `drafted` then holds the accepted path and, after a
    # rejection, the first child rejected at its end, so the chain views and metrics still read it.
    tree: list[DraftToken] | None = field(default=None, metadata={"keys": NODE_KEYS})

    @property
    def k(self) -> int:
        return len(self.drafted)

    @property
    def n_accepted(self) -> int:
        return sum(1 for t in self.drafted if t.accepted)

    def verdict(self, i: int) -> str:
        """'accepted', 'rejected', or 'discarded' (drafted after the rejection point, never used)."""
        if self.drafted[i].accepted:
            return "accepted"
        return "rejected" if i == self.rejected_at else "discarded"


# ---------------------------------------------------------------- metrics
def metrics(rounds: Iterable[Round], seconds: float | None = None) -> dict[str, Any]:
    """Acceptance rate, mean accepted length τ, per-position acceptance, throughput.

    acceptance_rate = accepted / drafted (docs/design.md). alpha_verified = accepted /
    (accepted + rejected) ignores drafts discarded after a rejection: it is the
    estimate of the per-token α that the independent-acceptance theory assumes.
    """
    rounds = list(rounds)
    drafted = sum(r.k for r in rounds)
    accepted = sum(r.n_accepted for r in rounds)
    rejected = sum(1 for r in rounds if r.rejected_at is not None)
    tokens = sum(len(r.emitted) for r in rounds)
    if seconds is None:
        seconds = sum(r.seconds for r in rounds)
    k_max = max((r.k for r in rounds), default=0)
    per_position = []
    for i in range(k_max):
        reached = [r for r in rounds if r.k > i]
        per_position.append(sum(r.drafted[i].accepted for r in reached) / len(reached))
    return {
        "rounds": len(rounds),
        "tokens": tokens,
        "drafted": drafted,
        "accepted": accepted,
        "acceptance_rate": accepted / drafted if drafted else float("nan"),
        "alpha_verified": accepted / (accepted + rejected) if accepted + rejected else float("nan"),
        "tau": tokens / len(rounds) if rounds else float("nan"),
        "per_position": per_position,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds if seconds > 0 else float("nan"),
        "draft_seconds": sum(r.draft_seconds for r in rounds),
        "verify_seconds": sum(r.verify_seconds for r in rounds),
    }


def first_difference(a: list[int], b: list[int]) -> int | None:
    """Index of the first token where two outputs differ (a length difference counts), None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


# ---------------------------------------------------------------- a whole run
@dataclass
class Trace:
    """A whole speculative run: enough to replay it without any model."""

    prompt: str
    prompt_ids: list[int]
    draft_model: str
    target_model: str
    k: int
    max_new_tokens: int
    seed: int | None
    sampling: dict                      # SamplingConfig.to_dict()
    rounds: list[Round] = field(default_factory=list)
    output_text: str = ""
    prefill_seconds: float = 0.0
    device: str = ""
    dtype: str = ""
    target_weights: str = ""            # how the target stored its weights: "int4", "int8", "bf16", "fp32"
    adaptive_threshold: float | None = None   # set when K was a maximum (adaptive draft length)
    lookup_k: int | None = None         # set when a hybrid drafter's lookup rounds could propose more (or less) than K

    @property
    def output_ids(self) -> list[int]:
        return [t for r in self.rounds for t in r.emitted]

    @property
    def greedy(self) -> bool:
        """Temperature 0 (the same rule as SamplingConfig.greedy): alternatives are confidence, not p/q."""
        return float(self.sampling.get("temperature", 0.0)) == 0.0

    def metrics(self) -> dict[str, Any]:
        return metrics(self.rounds)

    def to_dict(self) -> dict:
        return {"format": TRACE_FORMAT, "version": TRACE_VERSION, **tracefile.as_dict(self)}

    def to_json(self, indent: int | None = None) -> str:
        # allow_nan=False: a NaN in a trace is a bug, and browsers' JSON rejects it.
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Trace":
        """Parse and check a trace file (specviz.trace.files); TraceFormatError says where it is wrong."""
        return tracefile.parse(cls, text)

    @classmethod
    def from_dict(cls, data: Any) -> "Trace":
        return tracefile.from_dict(cls, data)
