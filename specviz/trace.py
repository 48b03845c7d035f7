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
"""
from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, Iterable

from .limits import DECODER_MAX_NEW_TOKENS, MAX_K, MAX_TEMPERATURE, MAX_TOKEN_ID, MAX_TRACE_DEPTH, MAX_TRACE_ROUNDS
from .strings import DEFAULT_LANG, t

TRACE_FORMAT = "specviz-trace"
TRACE_VERSION = 1


@dataclass
class Alt:
    """One alternative token with its probability."""

    token_id: int
    text: str
    prob: float


@dataclass
class DraftToken:
    token_id: int
    text: str
    q: float                 # draft probability of the token (the distribution it was drawn from)
    p: float                 # target probability of the token at the same position
    accept_prob: float       # min(1, p / q)
    u: float                 # the uniform draw; accepted iff u < accept_prob
    accepted: bool
    q_confidence: float      # untempered softmax of the draft; display only
    p_confidence: float      # untempered softmax of the target; display only
    top_q: list[Alt] = field(default_factory=list)
    top_p: list[Alt] = field(default_factory=list)
    source: str = "model"    # what proposed it: "model" (the draft model) or "ngram" (prompt lookup)


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
    drafted: list[DraftToken]
    rejected_at: int | None          # 0-based index into drafted, None if no draft token was rejected
    correction: Choice | None        # drawn from max(0, p - q) normalised, after a rejection
    bonus: Choice | None             # drawn from p after all drafts were accepted
    emitted: list[int]               # token ids appended to the output this round
    draft_seconds: float
    verify_seconds: float
    seconds: float = 0.0             # wall time of the whole round, bookkeeping included
    eos: bool = False                # the round emitted an end-of-sequence token
    drafter: str = "model"           # the drafting method of the run: "model", "ngram" or "hybrid"

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


@dataclass
class Step:
    """One token of plain (target-alone) decoding."""

    index: int
    token_id: int
    text: str
    p: float
    seconds: float


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
    adaptive_threshold: float | None = None   # set when K was a maximum (adaptive draft length)

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
        return {"format": TRACE_FORMAT, "version": TRACE_VERSION, **asdict(self)}

    def to_json(self, indent: int | None = None) -> str:
        # allow_nan=False: a NaN in a trace is a bug, and browsers' JSON rejects it.
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Trace":
        """Parse and check a trace file: nesting depth first, then JSON, types (`from_dict`), then `validate`."""
        check_depth(text)
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            _fail("tracefile.not_json", error=str(e)[:120])
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> "Trace":
        if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
            _fail("tracefile.not_trace", format=TRACE_FORMAT)
        if data.get("version") != TRACE_VERSION:
            _fail("tracefile.version", version=_shown(data.get("version")), supported=TRACE_VERSION)
        rounds = data.get("rounds")
        if not isinstance(rounds, list) or len(rounds) > MAX_TRACE_ROUNDS:
            _fail("tracefile.rounds", limit=MAX_TRACE_ROUNDS)
        return validate(cls(**_build(cls, {k: v for k, v in data.items() if k not in ("format", "version")}, "trace")))


class TraceFormatError(ValueError):
    """A trace file that cannot be read; the message says where it is wrong.

    `key` and `values` name the message in `specviz.strings` so a page can show
    it in its own language (`text(lang)`); `str()` is the English text.
    """

    def __init__(self, message: str, key: str | None = None, **values):
        super().__init__(message)
        self.key, self.values = key, values

    def text(self, lang: str = DEFAULT_LANG) -> str:
        return _render(self.key, lang, self.values) if self.key else str(self)


class _Key(str):
    """A message value that is itself a strings key: translated along with the message."""


def _render(key: str, lang: str, values: dict) -> str:
    return t(key, lang, **{n: t(v, lang) if isinstance(v, _Key) else v for n, v in values.items()})


def _fail(key: str, **values):
    raise TraceFormatError(_render(key, DEFAULT_LANG, values), key, **values)


def _shown(value) -> str:
    """A JSON value as it appears in the file, shortened: for messages."""
    if isinstance(value, dict):
        return "{…}"
    try:
        text = json.dumps(value[:12] if isinstance(value, list) else value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def check_depth(text: str | bytes, limit: int = MAX_TRACE_DEPTH) -> None:
    """Refuse JSON nested deeper than `limit` before it is parsed (a deep file would exhaust the parser's stack)."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else bytes(text)
    data = re.sub(rb'"[^"]*"', b"", re.sub(rb"\\.", b"", data))       # escapes, then strings: no brackets inside
    brackets = re.sub(rb"[^\[\]{}]", b"", data)
    if len(brackets) <= limit:
        return
    step = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
    if max(itertools.accumulate(step[b] for b in brackets)) > limit:
        _fail("tracefile.too_deep", limit=limit)


# Strict, schema-driven loading: every field checked by its annotated type, so a
# hand-edited or hostile file fails with a message instead of half-rendering.
_NESTED = {"drafted": DraftToken, "top_q": Alt, "top_p": Alt, "top": Alt, "correction": Choice,
           "bonus": Choice, "rounds": Round}


_EXPECTED = {"int": "tracefile.expect_int", "float": "tracefile.expect_float", "str": "tracefile.expect_str",
             "bool": "tracefile.expect_bool", "dict": "tracefile.expect_dict", "list[int]": "tracefile.expect_ints"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_scalar(value, annotation: str, where: str):
    ok = {
        "int": _is_int,
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "str": lambda v: isinstance(v, str),
        "bool": lambda v: isinstance(v, bool),
        "dict": lambda v: isinstance(v, dict),
        "list[int]": lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
    }[annotation]
    if not ok(value):
        _fail("tracefile.type", where=where, expected=_Key(_EXPECTED[annotation]), got=_shown(value))
    return float(value) if annotation == "float" else value


def _build(cls, data: Any, where: str) -> dict:
    if not isinstance(data, dict):
        _fail("tracefile.object", where=where, got=_shown(data))
    known = {f.name: f for f in fields(cls)}
    unknown = set(data) - set(known)
    if unknown:
        _fail("tracefile.unknown", where=where, names=", ".join(sorted(map(str, unknown)))[:200])
    out = {}
    for name, f in known.items():
        here = f"{where}.{name}"
        if name not in data:
            if f.default is not MISSING or f.default_factory is not MISSING:
                continue
            _fail("tracefile.missing", where=here)
        value = data[name]
        annotation = str(f.type).replace(" ", "")
        optional = annotation.endswith("|None")
        base = annotation.removesuffix("|None")
        if value is None:
            if not optional:
                _fail("tracefile.null", where=here)
            out[name] = None
        elif name in _NESTED:
            sub = _NESTED[name]
            if base.startswith("list["):
                if not isinstance(value, list):
                    _fail("tracefile.list", where=here, got=_shown(value))
                out[name] = [sub(**_build(sub, v, f"{here}[{i}]")) for i, v in enumerate(value)]
            else:
                out[name] = sub(**_build(sub, value, here))
        else:
            out[name] = _check_scalar(value, base, here)
    return out



# ---------------------------------------------------------------- semantic checks, after the types
_PROB_TOLERANCE = 1e-6          # float32 softmaxes may round a hair above 1


def _in_range(value, lo, hi, where: str) -> None:
    if value is not None and not lo <= value <= hi:
        _fail("tracefile.range", where=where, lo=f"{lo:g}", hi=f"{hi:g}", value=_shown(value))


def _prob(value: float, where: str) -> None:
    if not -_PROB_TOLERANCE <= value <= 1 + _PROB_TOLERANCE:
        _fail("tracefile.probability", where=where, value=_shown(value))


def _check_sampling(sampling: dict) -> None:
    unknown = set(sampling) - {"temperature", "top_k", "top_p"}
    if unknown:
        _fail("tracefile.unknown", where="trace.sampling", names=", ".join(sorted(map(str, unknown)))[:200])
    for name, kind, lo, hi in (("temperature", "float", 0.0, MAX_TEMPERATURE), ("top_k", "int", 0, MAX_TOKEN_ID),
                               ("top_p", "float", 0.0, 1.0)):
        if name in sampling:
            value = _check_scalar(sampling[name], kind, f"trace.sampling.{name}")
            _in_range(value, lo, hi, f"trace.sampling.{name}")
    if "top_p" in sampling and sampling["top_p"] <= 0:
        _fail("tracefile.range", where="trace.sampling.top_p", lo="0 (excluded)", hi=1, value=_shown(sampling["top_p"]))


def _check_numbers(rnd: Round, where: str) -> None:
    for name in ("draft_seconds", "verify_seconds", "seconds"):
        _in_range(getattr(rnd, name), 0.0, 1e6, f"{where}.{name}")
    for i, tk in enumerate(rnd.drafted):
        here = f"{where}.drafted[{i}]"
        _in_range(tk.token_id, 0, MAX_TOKEN_ID, f"{here}.token_id")
        for name in ("q", "p", "accept_prob", "u", "q_confidence", "p_confidence"):
            _prob(getattr(tk, name), f"{here}.{name}")
        for name in ("top_q", "top_p"):
            for j, alt in enumerate(getattr(tk, name)):
                _prob(alt.prob, f"{here}.{name}[{j}].prob")
    for name in ("correction", "bonus"):
        c = getattr(rnd, name)
        if c is not None:
            _prob(c.prob, f"{where}.{name}.prob")
            for j, alt in enumerate(c.top):
                _prob(alt.prob, f"{where}.{name}.top[{j}].prob")


def _check_verdicts(rnd: Round, k: int, where: str) -> None:
    """Accepted drafts first; rejected_at = the first one that was not; emitted = accepted + correction/bonus."""
    n = len(rnd.drafted)
    if n > k:
        _fail("tracefile.too_many_drafts", where=where, n=n, k=k)
    m = rnd.n_accepted
    if any(not tk.accepted for tk in rnd.drafted[:m]) or any(tk.accepted for tk in rnd.drafted[m:]):
        _fail("tracefile.accepted_prefix", where=where)
    if rnd.rejected_at is not None:
        if not 0 <= rnd.rejected_at < n:
            _fail("tracefile.rejected_at", where=where, value=rnd.rejected_at, n=n)
        if rnd.rejected_at != m:
            _fail("tracefile.rejected_not_first", where=where, value=rnd.rejected_at, expected=m)
    elif m < n:
        _fail("tracefile.no_rejection", where=where, n=n, m=m)
    for i, tk in enumerate(rnd.drafted[:m + 1]):
        if i < m and not tk.u < tk.accept_prob or i == rnd.rejected_at and tk.u < tk.accept_prob:
            _fail("tracefile.verdict", where=f"{where}.drafted[{i}]", u=_shown(tk.u), a=_shown(tk.accept_prob))
    if rnd.correction is not None and (rnd.rejected_at is None or rnd.bonus is not None):
        _fail("tracefile.correction", where=where)
    if rnd.bonus is not None and rnd.rejected_at is not None:
        _fail("tracefile.bonus", where=where)
    choice = rnd.correction or rnd.bonus
    expected = [tk.token_id for tk in rnd.drafted[:m]] + ([choice.token_id] if choice is not None else [])
    if rnd.emitted != expected:
        _fail("tracefile.emitted", where=where, expected=_shown(expected), value=_shown(rnd.emitted))


def validate(trace: Trace) -> Trace:
    """Ranges and consistency of a loaded trace (pure; raises TraceFormatError naming the place).

    K in [1, MAX_K]; every probability in [0, 1]; token ids and times
    non-negative; rounds numbered 0, 1, ... in order; in each round the accepted
    drafts come first, `rejected_at` is the first one that was not accepted,
    `u < a` exactly for the accepted ones, and `emitted` is the accepted drafts
    followed by the correction (after a rejection) or the bonus (all accepted),
    as docs/design.md describes. The types were checked when it was built.
    """
    _in_range(trace.k, 1, MAX_K, "trace.k")
    _in_range(trace.max_new_tokens, 1, DECODER_MAX_NEW_TOKENS, "trace.max_new_tokens")
    _in_range(trace.seed, 0, 2**63 - 1, "trace.seed")
    _in_range(trace.prefill_seconds, 0.0, 1e6, "trace.prefill_seconds")
    _in_range(trace.adaptive_threshold, 0.0, 1.0, "trace.adaptive_threshold")
    if any(not 0 <= i <= MAX_TOKEN_ID for i in trace.prompt_ids):
        _fail("tracefile.range", where="trace.prompt_ids", lo=0, hi=MAX_TOKEN_ID,
              value=_shown(next(i for i in trace.prompt_ids if not 0 <= i <= MAX_TOKEN_ID)))
    _check_sampling(trace.sampling)
    produced = 0
    for i, rnd in enumerate(trace.rounds):
        where = f"trace.rounds[{i}]"
        if rnd.index != i:
            _fail("tracefile.index", where=where, expected=i, value=rnd.index)
        _check_numbers(rnd, where)
        _check_verdicts(rnd, trace.k, where)
        if any(not 0 <= tok <= MAX_TOKEN_ID for tok in rnd.emitted):
            _fail("tracefile.range", where=f"{where}.emitted", lo=0, hi=MAX_TOKEN_ID, value=_shown(rnd.emitted))
        produced += len(rnd.emitted)
    if produced > trace.max_new_tokens:
        _fail("tracefile.budget", n=produced, limit=trace.max_new_tokens)
    return trace
