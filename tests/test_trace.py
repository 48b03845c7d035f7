"""Round records: consistent numbers, metrics conventions, exact JSON round trip, malformed files."""
import pytest

from specviz import SamplingConfig, Trace, metrics, speculative_generate
from specviz.trace.files import TraceFormatError
from tiny import noisy_copy, tiny_model


def run(target, draft, prompt, **kw):
    return list(speculative_generate(target, draft, prompt, **kw))


def emitted(rounds):
    return [t for r in rounds for t in r.emitted]


# ------------------------------------------------------------ trace
def test_trace_records_numbers_consistently(tiny_pair):
    target, draft = tiny_pair
    cfg = SamplingConfig(temperature=0.8, top_k=10)
    rounds = run(target, draft, [1, 2], k=4, sampling=cfg, seed=2, max_new_tokens=40)
    for r in rounds:
        for i, t in enumerate(r.drafted):
            assert t.accept_prob == pytest.approx(min(1.0, t.p / t.q), rel=1e-5)
            assert 0 <= t.u < 1
            if i < r.n_accepted:
                assert t.accepted and t.u < t.accept_prob
            if i == r.rejected_at:
                assert not t.accepted and t.u >= t.accept_prob and r.verdict(i) == "rejected"
            assert [a.prob for a in t.top_q] == sorted((a.prob for a in t.top_q), reverse=True)
            assert t.q == pytest.approx(next((a.prob for a in t.top_q if a.token_id == t.token_id), t.q))
        if r.correction:
            assert r.correction.top[0].prob >= r.correction.prob > 0
        assert r.draft_seconds >= 0 and r.verify_seconds > 0 and r.seconds >= r.verify_seconds


def test_metrics_follow_the_conventions():
    target = tiny_model(11)
    rounds = run(target, noisy_copy(target, 4, 0.4), [1, 2], k=4, sampling=SamplingConfig(1.0),
                 seed=0, max_new_tokens=60)
    m = metrics(rounds)
    assert m["tokens"] == 60 == len(emitted(rounds))
    assert m["tau"] == pytest.approx(60 / len(rounds))
    assert m["acceptance_rate"] == pytest.approx(sum(r.n_accepted for r in rounds) / sum(r.k for r in rounds))
    assert len(m["per_position"]) == 4 and all(0 <= a <= 1 for a in m["per_position"])
    # acceptance can only fall along a round: position i+1 is accepted only if position i was
    assert all(a >= b - 1e-12 for a, b in zip(m["per_position"], m["per_position"][1:]))


def make_trace(rounds, **kw):
    base = dict(prompt="hi <b>", prompt_ids=[1, 2], draft_model="d", target_model="t", k=4,
                max_new_tokens=40, seed=0, sampling=SamplingConfig(0.8).to_dict(), rounds=rounds,
                output_text="x", prefill_seconds=0.01, device="cpu", dtype="torch.float32")
    base.update(kw)
    return Trace(**base)


def test_json_round_trip_is_exact(tiny_pair):
    target, draft = tiny_pair
    rounds = run(target, draft, [1, 2], k=4, sampling=SamplingConfig(0.8), seed=2, max_new_tokens=40)
    trace = make_trace(rounds)
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("format"), "not a specviz trace"),
    (lambda d: d.update(version=99), "unsupported trace version"),
    (lambda d: d["rounds"][0].update(emitted="abc"), "rounds[0].emitted"),
    (lambda d: d["rounds"][0]["drafted"][0].update(q="1"), "drafted[0].q"),
    (lambda d: d["rounds"][0].update(extra=1), "unknown field"),
    (lambda d: d["rounds"][0].pop("index"), "rounds[0].index: missing"),
])
def test_malformed_traces_are_refused_with_a_location(tiny_pair, mutate, message):
    import json

    target, draft = tiny_pair
    rounds = run(target, draft, [1, 2], k=3, sampling=SamplingConfig(0.8), seed=2, max_new_tokens=10)
    data = json.loads(make_trace(rounds).to_json())
    mutate(data)
    with pytest.raises(TraceFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Trace.from_json(json.dumps(data))
    with pytest.raises(TraceFormatError):
        Trace.from_json("{not json")






def test_first_difference_names_the_first_diverging_token():
    from specviz.trace.records import first_difference

    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2      # one output stopped early (EOS)


def test_the_decoder_does_not_load_the_word_table():
    """The records and the decoder stay below the UI: trace errors carry a key, only a reader renders it."""
    import subprocess
    import sys

    code = ("import sys, specviz.engine.speculative, specviz.engine.baseline, specviz.trace.records, specviz.trace.files; "
            "print(sorted(m for m in sys.modules if m.startswith('specviz.strings')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
