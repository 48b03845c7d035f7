"""Reading trace files: depth, JSON, the records' declared types, then the round structure.

A trace file may be hand-edited or hostile, so nothing half-renders: nesting is
bounded before the parser sees the text, every field is checked against the
type its record declares (`specviz.trace.records`), then ranges and the round structure
of docs/design.md. The records are passed in (`parse(Trace, text)`), so this
module never imports them and `Trace.from_json` can delegate here without a cycle.

A list field may declare the `Keys` its records are read and written with (`as_dict`
writes them): `Round.drafted` and `Round.tree` hold one record, each list with its own.

No word table: a `TraceFormatError` carries a strings key and its values, and
the sentence is rendered only when someone reads it (`str()` in English for logs
and the CLI, `text(lang)` for a page). The decoder, which imports the records,
therefore never loads `specviz.strings`.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import json
import math
import re
import types
import typing
from typing import Any

from ..errors import Key, KeyedError
from ..limits import (APP_MAX_TRACE_BYTES, DECODER_MAX_NEW_TOKENS, MAX_K, MAX_TEMPERATURE, MAX_TOKEN_ID,
                      MAX_TRACE_DEPTH, MAX_TRACE_ROUNDS, MAX_TREE_NODES)

TRACE_FORMAT = "specviz-trace"
TRACE_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Keys:
    """The keys a list field's records are written and read with (a field's `metadata["keys"]`), in this order:
    `required` ones every file has, then `optional` ones an older file may lack (their fields' defaults then)."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.required + self.optional


class TraceFormatError(KeyedError):
    """A trace file that cannot be read: `key` names the message in `specviz.strings`, `values` fills it.

    `str()` is the English sentence; `text(lang)` the page's (English where the language lacks it).
    """


def _fail(key: str, **values):
    raise TraceFormatError(key, **values)


def _shown(value) -> str:
    """A JSON value as it appears in the file, shortened: for messages."""
    if isinstance(value, dict):
        return "{…}"
    try:
        text = json.dumps(value[:12] if isinstance(value, list) else value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


# ---------------------------------------------------------------- reading
def check_size(size: int) -> None:
    """A trace of `size` bytes, refused beyond APP_MAX_TRACE_BYTES; both said in MB (10^6 bytes), as the docs say
    the limit (one number everywhere: "the limit is 20 MB"). Here, below the page, so the command line's exporter
    refuses what the page's upload refuses, in the same sentence."""
    if size > APP_MAX_TRACE_BYTES:
        _fail("input.trace_size", mb=f"{size / 1e6:.1f}", limit=f"{APP_MAX_TRACE_BYTES / 1e6:.0f}")


def parse(cls, text: str | bytes):
    """A `cls` (the Trace record) from a file's text: nesting depth first, then JSON, types, then `validate`."""
    check_depth(text)
    try:
        data = json.loads(text)
    except UnicodeDecodeError:
        _fail("tracefile.not_text")
    except json.JSONDecodeError as e:
        _json_failure(e)
    except (ValueError, RecursionError):
        _fail("tracefile.not_text")
    return from_dict(cls, data)


def _json_failure(e: json.JSONDecodeError):
    """The parser's complaint as a sentence: an empty file, a file cut short, or where the JSON goes wrong.

    The parser's own words ("Expecting value: line 1 column 1 (char 0)") are never shown: they speak Python."""
    if not e.doc.strip():
        _fail("tracefile.empty")
    if e.pos >= len(e.doc.rstrip()):
        _fail("tracefile.truncated")
    _fail("tracefile.not_json", line=e.lineno, column=e.colno)


def from_dict(cls, data: Any):
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        _fail("tracefile.not_trace", format=TRACE_FORMAT)
    if data.get("version") != TRACE_VERSION:
        _fail("tracefile.version", version=_shown(data.get("version")), supported=TRACE_VERSION)
    rounds = data.get("rounds")
    if not isinstance(rounds, list) or len(rounds) > MAX_TRACE_ROUNDS:
        _fail("tracefile.rounds", limit=MAX_TRACE_ROUNDS)
    return validate(cls(**_build(cls, {k: v for k, v in data.items() if k not in ("format", "version")}, "trace")))


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
        _fail("tracefile.type", where=where, expected=Key(_EXPECTED[annotation]), got=_shown(value))
    return float(value) if annotation == "float" else value


@functools.cache
def _nested_records(cls) -> dict[str, type]:
    """Field name -> the record class it holds (`Round`, `list[Alt]`, `Choice | None` ...), from the annotations."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        inner = [a for a in typing.get_args(hint) if a is not type(None)] if isinstance(hint, types.UnionType) \
            else [hint]
        inner = [typing.get_args(a)[0] if typing.get_origin(a) is list else a for a in inner]
        if len(inner) == 1 and dataclasses.is_dataclass(inner[0]):
            out[name] = inner[0]
    return out


def _build(cls, data: Any, where: str, keys: Keys | None = None) -> dict:
    """The checked fields of a `cls` from a file's object; `keys` (its list field's) narrows the fields read and
    says which are required: the others keep their defaults."""
    if not isinstance(data, dict):
        _fail("tracefile.object", where=where, got=_shown(data))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    known = fields if keys is None else {name: fields[name] for name in keys.names}
    unknown = set(data) - set(known)
    if unknown:
        _fail("tracefile.unknown", where=where, names=", ".join(sorted(map(str, unknown)))[:200])
    nested, out = _nested_records(cls), {}
    for name, f in known.items():
        here = f"{where}.{name}"
        required = name in keys.required if keys is not None else \
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if name not in data:
            if required:
                _fail("tracefile.missing", where=here)
            continue
        value = data[name]
        annotation = str(f.type).replace(" ", "")
        base = annotation.removesuffix("|None")
        if value is None:
            # A required key is never null: a field that may be None is so only where its list leaves it out.
            if not annotation.endswith("|None") or keys is not None and required:
                _fail("tracefile.null", where=here)
            out[name] = None
        elif name in nested:
            out[name] = _build_nested(nested[name], value, here, f.metadata.get("keys"), base.startswith("list["))
        else:
            out[name] = _check_scalar(value, base, here)
    return out


def _build_nested(sub, value: Any, here: str, keys: Keys | None, many: bool):
    """A field holding records: one, or a list of them (read with its `keys`)."""
    if not many:
        return sub(**_build(sub, value, here))
    if not isinstance(value, list):
        _fail("tracefile.list", where=here, got=_shown(value))
    return [sub(**_build(sub, v, f"{here}[{i}]", keys)) for i, v in enumerate(value)]


# ---------------------------------------------------------------- writing
def as_dict(record) -> Any:
    """A record as a file holds it (`dataclasses.asdict`, but a list field that declares its `keys` writes each of
    its records with those keys only, in their order)."""
    return _written(record, None)


def _written(value, keys: Keys | None):
    if dataclasses.is_dataclass(value):
        fields = dataclasses.fields(value)
        names = keys.names if keys is not None else [f.name for f in fields]
        declared = {f.name: f.metadata.get("keys") for f in fields}
        return {name: _written(getattr(value, name), declared[name]) for name in names}
    if isinstance(value, (list, tuple)):
        return [_written(v, keys) for v in value]
    if isinstance(value, dict):
        return {k: _written(v, None) for k, v in value.items()}
    return value if isinstance(value, (str, int, float, type(None))) else copy.deepcopy(value)


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


def _check_numbers(rnd, where: str) -> None:
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


def _check_verdicts(rnd, k: int, where: str) -> None:
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


TREE_STATUSES = ("accepted", "rejected", "untried")


def _check_tree(rnd, where: str) -> None:
    """A tree round: parents before children, the accepted nodes one path from the root that
    spells the accepted drafts, and every tried node's verdict agreeing with its u and a."""
    tree = rnd.tree
    if tree is None:
        return
    if not 1 <= len(tree) <= MAX_TREE_NODES:
        _fail("tracefile.range", where=f"{where}.tree", lo=1, hi=MAX_TREE_NODES, value=len(tree))
    path = []
    for i, node in enumerate(tree):
        here = f"{where}.tree[{i}]"
        _check_parent(node.parent, i, rnd.index)
        _in_range(node.token_id, 0, MAX_TOKEN_ID, f"{here}.token_id")
        for name in ("q", "p", "accept_prob", "u"):
            _prob(getattr(node, name), f"{here}.{name}")
        if node.r is not None:
            _prob(node.r, f"{here}.r")
        for name in ("top_r", "top_q"):
            for j, alt in enumerate(getattr(node, name)):
                _prob(alt.prob, f"{here}.{name}[{j}].prob")
        if node.status not in TREE_STATUSES:
            _fail("tracefile.tree_status", where=f"{here}.status", value=_shown(node.status))
        if node.status != "untried" and (node.u < node.accept_prob) != (node.status == "accepted"):
            _fail("tracefile.verdict", where=here, u=_shown(node.u), a=_shown(node.accept_prob))
        if node.status == "accepted":
            if node.parent != (path[-1] if path else -1):
                _fail("tracefile.tree_path", where=here)
            path.append(i)
    m = rnd.n_accepted   # fewer than the path when an accepted EOS ended the stream inside it
    if [tree[i].token_id for i in path[:m]] != [tk.token_id for tk in rnd.drafted[:m]] \
            or not (len(path) == m or rnd.eos and len(path) > m):
        _fail("tracefile.tree_path", where=f"{where}.tree")


def _check_parent(parent: int, i: int, round_index: int) -> None:
    """A node's parent comes before it (-1 is the root): said in words, with rounds and nodes counted from 1 as a
    reader counts them ("trace.rounds[0].tree[1].parent must be between -1 and 0, not 2")."""
    if -1 <= parent < i:
        return
    where = dict(round=round_index + 1, node=i + 1)
    if parent < -1:
        _fail("tracefile.tree_root", **where, parent=_shown(parent))
    _fail("tracefile.tree_parent", **where, parent=parent + 1)


def validate(trace):
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
    _in_range(trace.lookup_k, 1, MAX_K, "trace.lookup_k")
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
        _check_verdicts(rnd, max(trace.k, trace.lookup_k or 0), where)   # a hybrid's lookup rounds: up to lookup_k
        _check_tree(rnd, where)
        if any(not 0 <= tok <= MAX_TOKEN_ID for tok in rnd.emitted):
            _fail("tracefile.range", where=f"{where}.emitted", lo=0, hi=MAX_TOKEN_ID, value=_shown(rnd.emitted))
        produced += len(rnd.emitted)
    if produced > trace.max_new_tokens:
        _fail("tracefile.budget", n=produced, limit=trace.max_new_tokens)
    return trace
