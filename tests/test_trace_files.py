"""Semantic trace validation (`specviz.trace.files.validate`, `check_depth`): every decoder trace passes; hostile ones
are refused with a sentence that names the place, in the page's language."""
from __future__ import annotations

import json
import math

import pytest

from specviz import SamplingConfig, Trace, speculative_generate
from specviz.limits import MAX_K, MAX_TRACE_DEPTH
from specviz.trace.files import TraceFormatError, check_depth, validate
from tiny import noisy_copy, tiny_model


@pytest.fixture(scope="module")
def models():
    target = tiny_model(11, eos_token_id=3)
    return target, noisy_copy(target, 4, 0.5)


def trace_of(rounds, **kw):
    base = dict(prompt="p", prompt_ids=[1, 2], draft_model="d", target_model="t", k=4, max_new_tokens=40, seed=0,
                sampling=SamplingConfig(0.8).to_dict(), rounds=rounds)
    base.update(kw)
    return Trace(**base)


@pytest.mark.parametrize("kw", [
    dict(sampling=SamplingConfig(0.0)), dict(sampling=SamplingConfig(0.8)), dict(sampling=SamplingConfig(1.3, 5, 0.9)),
    dict(sampling=SamplingConfig(1.0), adaptive_threshold=0.6), dict(sampling=SamplingConfig(1.0), drafter="ngram"),
    dict(sampling=SamplingConfig(0.0), drafter="hybrid"),
])
def test_every_decoder_trace_validates(models, kw):
    target, draft = models
    for seed in range(4):
        rounds = list(speculative_generate(target, draft, [1, 2, 1, 2, 1], k=4, max_new_tokens=30, seed=seed,
                                           eos_token_id=3, **kw))
        trace = trace_of(rounds, max_new_tokens=30, sampling=kw["sampling"].to_dict(),
                         adaptive_threshold=kw.get("adaptive_threshold"))
        assert Trace.from_json(trace.to_json()) == trace
        assert validate(trace) is trace


@pytest.fixture(scope="module")
def good(models):
    target, draft = models
    rounds = list(speculative_generate(target, draft, [1, 2], k=4, sampling=SamplingConfig(0.9), max_new_tokens=40,
                                       seed=1))
    assert any(r.rejected_at is not None for r in rounds) and any(r.bonus for r in rounds)
    return json.loads(trace_of(rounds).to_json())


def _first(data, pred):
    return next(r for r in data["rounds"] if pred(r))


def _rejected(d):
    return _first(d, lambda r: r["rejected_at"] is not None)


def _bonus(d):
    return _first(d, lambda r: r["bonus"] is not None)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(k=-3), "trace.k must be between 1 and 32, not -3"),
    (lambda d: d.update(k=10**12), "trace.k must be between 1 and 32"),
    (lambda d: d.update(k=0), "trace.k must be between"),
    (lambda d: d["sampling"].update(temperature="hot"), 'trace.sampling.temperature must be a number'),
    (lambda d: d["sampling"].update(temperature=None), "temperature must be a number (NaN and infinity are not allowed), not null"),
    (lambda d: d["sampling"].update(temperature=-1), "temperature must be between 0 and 10"),
    (lambda d: d["sampling"].update(top_p=1.5), "top_p must be between"),
    (lambda d: d["sampling"].update(mood=1), "unknown field"),
    (lambda d: _rejected(d).update(rejected_at=99), "rejected_at is 99, but the round drafted only"),
    (lambda d: _rejected(d).update(rejected_at=-1), "rejected_at is -1"),
    (lambda d: _bonus(d).update(rejected_at=0), "rejected_at"),
    (lambda d: _rejected(d).update(emitted=[5, 5, 5]), "emitted must be the accepted drafts followed by"),
    (lambda d: _bonus(d).update(emitted=_bonus(d)["emitted"][:-1]), "emitted must be"),
    (lambda d: _rejected(d).update(correction=None), "emitted must be"),
    (lambda d: _bonus(d).update(correction=_bonus(d)["bonus"]), "has a correction without a rejected draft"),
    (lambda d: _rejected(d).update(bonus=_rejected(d)["correction"], correction=None), "has a bonus although a draft was rejected"),
    (lambda d: _bonus(d)["drafted"][0].update(accepted=False), "accepted drafts must come first"),
    (lambda d: _bonus(d)["drafted"][0].update(u=0.9999, accept_prob=0.5), "the verdict contradicts the numbers"),
    (lambda d: _bonus(d)["drafted"][0].update(q=1.5), "drafted[0].q is a probability and must be between 0 and 1"),
    (lambda d: _bonus(d)["drafted"][0]["top_p"][0].update(prob=-0.2), "top_p[0].prob is a probability"),
    (lambda d: _bonus(d)["bonus"].update(prob=2), "bonus.prob is a probability"),
    (lambda d: d["rounds"][1].update(index=7), "rounds[1].index must be 1"),
    (lambda d: d["rounds"][0].update(verify_seconds=-1.0), "verify_seconds must be between 0"),
    (lambda d: d.update(max_new_tokens=3), "more than max_new_tokens = 3"),
    (lambda d: d.update(prompt_ids=[1, -4]), "trace.prompt_ids must be between 0"),
    (lambda d: d.update(seed=-1), "trace.seed must be between 0"),
    (lambda d: d["rounds"][0].update(drafted=d["rounds"][0]["drafted"] * 3), "drafted"),
])
def test_inconsistent_or_out_of_range_traces_are_refused(good, mutate, message):
    data = json.loads(json.dumps(good))
    mutate(data)
    with pytest.raises(TraceFormatError) as e:
        Trace.from_json(json.dumps(data))
    assert message in str(e.value), str(e.value)
    assert len(str(e.value)) < 300


def test_type_messages_are_human(good):
    data = json.loads(json.dumps(good))
    data["rounds"][0]["drafted"][0]["q"] = float("nan")
    with pytest.raises(TraceFormatError) as e:
        Trace.from_json(json.dumps(data))          # Python writes NaN; browsers' JSON would not
    text = str(e.value)
    assert "trace.rounds[0].drafted[0].q must be a number (NaN and infinity are not allowed), not NaN" == text
    assert "expected float" not in text and "got float" not in text
    assert e.value.key == "tracefile.type" and e.value.text("en") == text
    assert e.value.text("xx") == text                                       # unknown language: English


def test_nesting_depth_is_checked_before_parsing():
    deep = "[" * 200_000 + "]" * 200_000
    with pytest.raises(TraceFormatError, match=f"nested more than {MAX_TRACE_DEPTH} levels"):
        Trace.from_json(deep)
    with pytest.raises(TraceFormatError, match="nested more than"):
        Trace.from_json(('{"format": "specviz-trace", "version": 1, "rounds": [], "x": ' + "{\"a\":" * 50 + "1"
                         + "}" * 50 + "}").encode())
    check_depth('{"s": "' + "[" * 100 + '\\" [[[[["}')     # brackets inside strings do not count
    check_depth("[" * MAX_TRACE_DEPTH + "]" * MAX_TRACE_DEPTH)
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        Trace.from_json("[" * 3 + "oops")


def test_limits_are_the_decoders():
    assert MAX_K == 32 and not math.isnan(validate(trace_of([], k=MAX_K)).k)


@pytest.fixture(scope="module")
def tree_run(models):
    target, draft = models
    rounds = list(speculative_generate(target, draft, [1, 2], tree="2x2", sampling=SamplingConfig(0.9),
                                       max_new_tokens=40, seed=1))
    return json.loads(trace_of(rounds, k=2).to_json())


def _a_tree_round(d):
    return _first(d, lambda r: r["tree"] and r["drafted"])


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r["tree"][0].update(accepted=True), "tracefile.unknown"),      # a node's status says it
    (lambda r: r["tree"][0].update(q_confidence=0.5), "tracefile.unknown"),
    (lambda r: r["drafted"][0].update(parent=-1), "tracefile.unknown"),       # a draft hangs from the one before
    (lambda r: r["drafted"][0].update(status="accepted"), "tracefile.unknown"),
    (lambda r: r["drafted"][0].pop("q_confidence"), "tracefile.missing"),
    (lambda r: r["tree"][0].pop("status"), "tracefile.missing"),
    (lambda r: r["tree"][0].update(parent=None), "tracefile.null"),
    (lambda r: r["drafted"][0].update(p_confidence=None), "tracefile.null"),
])
def test_each_list_reads_its_drafted_tokens_with_its_own_keys(tree_run, mutate, key):
    """`drafted` and `tree` hold one record, written with a chain's keys and a node's: each list is read with its
    own, as strictly as when they were two records."""
    data = json.loads(json.dumps(tree_run))
    mutate(_a_tree_round(data))
    with pytest.raises(TraceFormatError) as e:
        Trace.from_dict(data)
    assert e.value.key == key


def test_a_tree_file_from_before_the_residual_tops_loads_and_writes_its_keys_back(tree_run):
    data = json.loads(json.dumps(tree_run))
    for rnd in data["rounds"]:
        for node in rnd["tree"] or []:
            for name in ("r", "top_r", "top_q"):
                node.pop(name, None)
    trace = Trace.from_dict(data)
    node = _a_tree_round(trace.to_dict())["tree"][0]
    assert list(node) == ["token_id", "text", "parent", "q", "p", "accept_prob", "u", "status", "r", "top_r", "top_q"]
    assert Trace.from_json(json.dumps(tree_run)).to_dict() == tree_run
