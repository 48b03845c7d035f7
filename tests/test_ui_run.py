"""specviz.ui.run: the page and the API run through one path (settings -> job -> events -> trace), so the same
settings give the same trace whichever asked (tiny pair, event functions and endpoints driven directly)."""
from __future__ import annotations

import json

import pytest
from types import SimpleNamespace

from specviz.runtime.report import RunReport
from specviz.trace.records import Round
from specviz.ui import api, inputs, pays, run
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import generate
from specviz.ui.worker import BaselineDone, DecodeJob, Failed, Finished, RoundDone, SpecDone, WarmupDone
from tests.browser.tiny_app import TinyPair

FORM = dict(prompt="the cat sat on the mat", raw=False, k=2, adaptive=False, temperature=0.0, top_k=0, top_p=1.0,
            max_new=24, seed=3, pair=inputs.PACKAGED, draft_id="", target_id="", compare_switch=False,
            drafter="model", compile="auto")


def _untimed(value):
    """The trace without its clock readings: two runs of the same settings differ only in those."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("seconds")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_the_job_is_the_settings_and_the_prompt():
    s = inputs.run_settings({**FORM, "adaptive": True, "drafter": "hybrid"})
    job = run.job_of("PAIR", s, [1, 2])
    assert job == DecodeJob("PAIR", [1, 2], 2, s.sampling, 24, 3, False, s.adaptive_threshold, "hybrid", "auto")


def test_the_outcome_folds_every_event_and_asks_about_stop_at_the_end():
    rnd = Round(index=0, drafted=[], rejected_at=None, correction=None, bonus=None, emitted=[5], draft_seconds=0.0,
                verify_seconds=0.0)
    outcome = run.Outcome()
    error = RuntimeError("x")
    for event in (WarmupDone(1.5), RoundDone(rnd), SpecDone(RunReport(prefill_seconds=0.25)), BaselineDone(["s"]),
                  Failed(error), Finished()):
        outcome.take(event, stopped=lambda: True)
    assert (outcome.warmup_seconds, outcome.rounds, outcome.spec_report, outcome.steps, outcome.error) == (
        1.5, [rnd], RunReport(prefill_seconds=0.25), ["s"], error)
    assert outcome.finished and outcome.stopped
    quiet = run.Outcome()
    quiet.take(Finished())
    assert quiet.finished and not quiet.stopped and quiet.rounds == [] and quiet.error is None


def test_the_page_and_the_api_give_the_same_trace(monkeypatch):
    monkeypatch.setattr(pays, "wanted", lambda pair, drafter, compiled: False)   # no "cannot pay" timing
    pair = TinyPair(0.0)
    ctx = AppContext(cache=PairCache(lambda d, t, progress: pair), tick_s=0.05)
    page = list(generate.generate(ctx, FORM, request=SimpleNamespace(session_hash="run-page")))[-1]["trace"]
    answer = api.Endpoints(ctx).generate(api.GenerateRequest(FORM["prompt"], k=FORM["k"],
                                                             max_new_tokens=FORM["max_new"], seed=FORM["seed"]))
    from_page = _untimed(json.loads(page.to_json()))
    assert from_page == _untimed(answer["trace"]) and len(page.rounds) >= 2
    other_seed = api.Endpoints(ctx).generate(api.GenerateRequest(FORM["prompt"], k=1, max_new_tokens=FORM["max_new"],
                                                                 seed=FORM["seed"]))
    assert _untimed(other_seed["trace"]) != from_page                  # the comparison sees a different run


def test_a_hybrids_lookup_rounds_go_to_lookup_k_on_the_page_and_in_the_api(monkeypatch):
    """Lookup K from the page's form and the API's field: the hybrid's lookup rounds propose up to it while its model
    rounds stay at K, the trace records it, and page and API give the same trace; greedy, so the target's output."""
    from specviz.trace.records import Trace

    monkeypatch.setattr(pays, "wanted", lambda pair, drafter, compiled: False)
    pair = TinyPair(0.0)
    ctx = AppContext(cache=PairCache(lambda d, t, progress: pair), tick_s=0.05)
    form = {**FORM, "prompt": "the cat sat on the mat " * 4, "drafter": "hybrid", "lookup_k": 6, "max_new": 32}
    page = list(generate.generate(ctx, form, request=SimpleNamespace(session_hash="run-lookup")))[-1]["trace"]
    assert (page.k, page.lookup_k) == (2, 6)
    lookup = [len(r.drafted) for r in page.rounds if r.drafted and r.drafted[0].source == "ngram"]
    model = [len(r.drafted) for r in page.rounds if r.drafted and r.drafted[0].source == "model"]
    assert lookup and max(lookup) > 2 and max(lookup) <= 6 and all(n <= 2 for n in model)
    assert Trace.from_json(page.to_json()).lookup_k == 6
    answer = api.Endpoints(ctx).generate(api.GenerateRequest(form["prompt"], k=2, max_new_tokens=32, seed=FORM["seed"],
                                                             drafter="hybrid", lookup_k=6))
    assert _untimed(json.loads(page.to_json())) == _untimed(answer["trace"])
    plain = list(generate.generate(ctx, {**form, "lookup_k": 0}, request=SimpleNamespace(session_hash="run-k")))
    trace = plain[-1]["trace"]
    assert trace.lookup_k is None and all(len(r.drafted) <= 2 for r in trace.rounds)
    assert trace.output_ids == page.output_ids   # greedy: the same tokens whatever drafts them


class _ByteTokenizer:
    """Token i is the byte i: a character over several bytes is split over tokens, as a byte-level BPE splits it."""

    def decode(self, ids, skip_special_tokens=True):
        return bytes(ids).decode("utf-8", errors="replace")


def test_an_emoji_cut_at_the_token_limit_leaves_no_replacement_character_in_the_output():
    pair = SimpleNamespace(tokenizer=_ByteTokenizer())
    emoji = list("😀".encode())
    assert run.clean_text(pair, list(b"Hi ") + emoji[:2]) == "Hi "          # cut inside the emoji: left out
    assert run.clean_text(pair, list(b"Hi ") + emoji) == "Hi 😀"              # whole: shown
    assert run.clean_text(pair, [0xFF] + list(b" ok")) == "\ufffd ok"        # an invalid byte inside stays said


def test_a_finished_run_tells_the_next_one_how_long_the_pairs_prompt_read_takes(monkeypatch):
    from specviz.ui import waiting

    monkeypatch.setattr(pays, "wanted", lambda pair, drafter, compiled: False)
    monkeypatch.setattr(waiting, "PREFILLS", waiting.PrefillClock())
    monkeypatch.setattr(waiting.PrefillClock, "MIN_SECONDS", 0.0)    # the tiny pair reads in milliseconds
    pair = TinyPair(0.0)
    ctx = AppContext(cache=PairCache(lambda d, t, progress: pair), tick_s=0.05)
    trace = list(generate.generate(ctx, FORM, request=SimpleNamespace(session_hash="run-prefill")))[-1]["trace"]
    settings = inputs.run_settings(FORM)
    n = len(trace.prompt_ids)
    assert waiting.PREFILLS.expected(settings.pair_ids, 2 * n) == pytest.approx(2 * trace.prefill_seconds)
