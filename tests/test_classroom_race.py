"""The drafter race (specviz.classroom.race) on tiny models: every drafter writes the target alone's greedy tokens
(the race is a losslessness check, and it catches a broken rule), each token keeps who proposed it, the figures
are the rounds' own, bad sizes are refused and Stop ends a lane between rounds."""
from __future__ import annotations

import functools
import types

import pytest

from specviz.classroom import lab, race
from specviz.engine import rule
from specviz.engine.rule import verify
from specviz.limits import APP_MAX_RACE_TOKENS
from specviz.trace.records import first_difference
from tests.tiny import noisy_copy, tiny_model

# A prompt that repeats itself, so prompt lookup finds matches (the tiny target also falls into loops).
REPEATING = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3]
PROMPTS = {"repeating": REPEATING, "plain": [7, 3, 9, 0, 12], "one": [5]}


@pytest.fixture(scope="module")
def pair():
    target = tiny_model(1)
    return types.SimpleNamespace(target=target, draft=noisy_copy(target, 3, 0.3), eos_token_ids=[])


def expected_sources(rounds) -> list[str]:
    """Who proposed each emitted token, read straight from the rounds: an accepted draft's own source, else the
    target (its correction or bonus). Written apart from `race.pieces_of`, so a broken one disagrees with it."""
    out = []
    for r in rounds:
        accepted = [tk.source for tk in r.drafted if tk.accepted]
        out += (accepted + ["target"] * len(r.emitted))[:len(r.emitted)]
    return out


def rounds_of(pair, name: str, prompt, k: int = 4, tokens: int = 40):
    return list(race.decoder_rounds(pair.target, pair.draft, prompt, name, k, tokens))


@pytest.mark.parametrize("k", [1, 6])
@pytest.mark.parametrize("prompt", list(PROMPTS))
def test_every_drafter_writes_the_target_alones_greedy_tokens(pair, prompt, k):
    lanes = race.run_race(pair, PROMPTS[prompt], k, 24)
    reference = lanes[0]
    assert [lane.entrant for lane in lanes] == list(race.LANES) and reference.entrant == race.TARGET
    assert reference.tokens == 24 and reference.tau == 1.0
    for lane in lanes[1:]:
        assert lane.output_ids == reference.output_ids, lane.entrant
        assert race.verdict(reference, lane) == race.Verdict(True, None)


def test_the_race_is_not_vacuous_each_drafter_drafts_and_lookup_is_kept(pair):
    lanes = {lane.entrant: lane for lane in race.run_race(pair, REPEATING, 4, 40)}
    assert lanes["model"].tau > 1 and lanes["tree"].tau > 1
    assert lanes["ngram"].count("ngram") > 0 and lanes["ngram"].count("model") == 0
    assert lanes["hybrid"].count("ngram") > 0 and lanes["hybrid"].count("model") > 0   # both sources in one lane
    assert lanes["model"].count("ngram") == 0 and lanes["tree"].count("ngram") == 0
    assert lanes["target"].count("target") == lanes["target"].tokens
    assert lanes["ngram"].longest >= 2


@pytest.mark.parametrize("name", race.ENTRANTS)
def test_each_tokens_colour_is_the_source_that_proposed_it(pair, name):
    rounds = rounds_of(pair, name, REPEATING)
    lane = race.lane_from_rounds(name, rounds)
    assert [p.source for p in lane.pieces] == expected_sources(rounds)
    assert [p.token_id for p in lane.pieces] == [t for r in rounds for t in r.emitted]
    # The figures are the rounds' own.
    assert lane.rounds == len(rounds) and lane.drafted == sum(r.k for r in rounds)
    assert lane.accepted == sum(r.n_accepted for r in rounds) == lane.tokens - lane.count("target")
    assert lane.tau == pytest.approx(lane.tokens / len(rounds))
    assert lane.acceptance == pytest.approx(lane.accepted / lane.drafted)
    assert lane.seconds == pytest.approx(sum(r.seconds for r in rounds))


def test_a_broken_colouring_is_caught(pair, monkeypatch):
    """The broken variant of the check above: pieces that forget their source (all "model") disagree with the
    rounds as soon as lookup or the target proposed anything."""
    rounds = rounds_of(pair, "hybrid", REPEATING)
    monkeypatch.setattr(race, "pieces_of", lambda r: [race.Piece(t, "model") for t in r.emitted])
    lane = race.lane_from_rounds("hybrid", rounds)
    assert [p.source for p in lane.pieces] != expected_sources(rounds)


def test_a_broken_rule_is_caught_by_the_race(pair, monkeypatch):
    """The broken variant of losslessness: the decoder's rule swapped for one that accepts every draft (the lab's
    `always_accept`). The chains then write the draft's text, and the race says at which token it left the target's."""
    # A draft that is not the target's copy, so accepting everything matters.
    pair = types.SimpleNamespace(target=pair.target, draft=tiny_model(2), eos_token_ids=[])
    reference = race.run_lane(pair, PROMPTS["plain"], race.TARGET, 4, 24)
    assert race.verdict(reference, race.run_lane(pair, PROMPTS["plain"], "model", 4, 24)).same   # the real rule
    monkeypatch.setattr(rule, "verify", functools.partial(verify, accept_fn=lab.always_accept))
    broken = race.run_lane(pair, PROMPTS["plain"], "model", 4, 24)
    v = race.verdict(reference, broken)
    assert not v.same and v.first_diff == first_difference(reference.output_ids, broken.output_ids)
    assert broken.acceptance == 1.0


def test_stop_ends_a_lane_between_rounds_and_during_the_prompt(pair):
    calls = []

    def after_two():
        calls.append(1)
        return len(calls) > 2

    for name in race.LANES:
        calls.clear()
        with pytest.raises(race.RaceStopped):
            race.run_lane(pair, REPEATING, name, 4, 40, stop=after_two)
        assert len(calls) <= 4, name   # asked at the prompt's chunks and after each round: it ended at once
        with pytest.raises(race.RaceStopped):
            race.run_lane(pair, REPEATING, name, 4, 40, stop=lambda: True)


@pytest.mark.parametrize("k, tokens", [(0, 10), (race.MAX_RACE_K + 1, 10), (4, 0), (4, APP_MAX_RACE_TOKENS + 1),
                                       (True, 10), (4, 2.5), ("4", 10)])
def test_sizes_outside_the_apps_limits_are_refused(pair, k, tokens):
    with pytest.raises(ValueError):
        race.run_lane(pair, REPEATING, "model", k, tokens)


def test_an_unknown_entrant_is_refused(pair):
    with pytest.raises(ValueError):
        race.run_lane(pair, REPEATING, "oracle", 4, 10)


def test_pieces_follow_an_eos_cut_round():
    """A round cut at an accepted EOS draft emits only up to it: every piece is an accepted draft's."""
    from specviz.trace.records import DraftToken, Round

    def tok(i, source, accepted=True):
        return DraftToken(i, "", 1.0, 1.0, 1.0, 0.0, accepted, 1.0, 1.0, source=source)

    rnd = Round(0, [tok(3, "ngram"), tok(9, "ngram")], None, None, None, [3, 9], 0.0, 0.0, eos=True)
    assert race.pieces_of(rnd) == [race.Piece(3, "ngram"), race.Piece(9, "ngram")]
    rnd = Round(0, [tok(3, "model"), tok(4, "model", False)], 1, None, None, [3, 7], 0.0, 0.0)
    assert race.pieces_of(rnd) == [race.Piece(3, "model"), race.Piece(7, "target")]


def test_the_code_edit_lesson_says_what_its_own_trace_measured():
    """The prepared lesson's claim (prompt lookup keeps long runs) is its recorded run's: every figure its
    description gives about that run is recomputed here from the trace, in both languages, and it opens at the
    round where lookup had the most drafts kept. The race's default prompt is the lesson's prompt."""
    from specviz.classroom import lessons
    from specviz.strings import t

    lesson, trace = lessons.load("code-edit-lookup")
    assert trace.prompt == t("race.default_prompt", "en") and trace.sampling["temperature"] == 0.0
    kept_per_round = [sum(1 for tk in r.drafted if tk.accepted and tk.source == "ngram") for r in trace.rounds]
    lookup = [r for r in trace.rounds if any(tk.source == "ngram" for tk in r.drafted)]
    drafted = sum(r.k for r in lookup)
    kept = sum(kept_per_round)
    emitted = sum(len(r.emitted) for r in trace.rounds)
    longest = max(kept_per_round)
    assert longest >= 4 and kept / drafted > 0.5            # the lesson's promise: lookup's long runs are kept
    assert lesson.start == kept_per_round.index(longest) + 1
    for lang in ("en", "es"):
        said = lesson.text("description", lang)
        for figure in (f"{len(lookup)} ", f" {len(trace.rounds)} ", f" {drafted} ", f" {kept} ",
                       f"({100 * kept / drafted:.0f}%)", f" {longest}.", f"τ = {emitted / len(trace.rounds):.2f}"):
            assert figure in said, (lang, figure, said)


# ---------------------------------------------------------------- the race's lanes are Generate's runs
def _spied(monkeypatch, module, name: str, seen: dict, key: str) -> None:
    """Stand in for a decoder entry of `module`: record the options it was called with, decode nothing."""
    from specviz.engine.options import DecodeOptions, decode_options
    from specviz.runtime.report import RunReport

    def nothing():   # a decoding loop that yields nothing and returns its report, as a whole run ends
        return RunReport()
        yield

    def spy(*args, options=None, **keywords):   # the options object, passed by position or by name
        given = [a for a in args if isinstance(a, DecodeOptions)]
        seen[key] = decode_options(given[0] if given else options, **keywords)
        return nothing()

    monkeypatch.setattr(module, name, spy)


def _path(options):
    """What decides how a run's forwards run and what it decodes, without the run's own hooks (stop, on_event, the
    tokenizer that names tokens, the pair's EOS ids) and the per-token records (outside the timed rounds)."""
    import dataclasses

    return dataclasses.replace(options, stop=None, on_event=None, tokenizer=None, eos_token_id=None, record=True)


def _generate(pair, monkeypatch, drafter: str, seen: dict) -> None:
    """A Generate run of the page's worker with the form's defaults (compile "auto") and the comparison on, greedy:
    `seen` gets "generate <drafter>" and "generate target <drafter>"."""
    import queue

    from specviz.engine.sampling import SamplingConfig
    from specviz.ui import worker
    from specviz.ui.session import Run

    _spied(monkeypatch, worker, "speculative_generate", seen, f"generate {drafter}")
    _spied(monkeypatch, worker, "autoregressive_generate", seen, f"generate target {drafter}")
    job = worker.DecodeJob(types.SimpleNamespace(**vars(pair), tokenizer=None), REPEATING, 4,
                           SamplingConfig(temperature=0.0), 12, 0, compare=True, drafter=drafter)
    events = queue.Queue()
    worker.decode(job, Run(), events)
    assert not [e for e in events.queue if isinstance(e, worker.Failed)]


@pytest.mark.parametrize("entrant", race.ENTRANTS)
def test_each_lane_and_the_target_alone_run_as_generate_runs_them(pair, monkeypatch, entrant):
    """The race's target alone is Generate's comparison and each drafter's lane is Generate's run of that drafter:
    the same decoder entries with the same options (compile, static cache, drafting), so the race's speedups are
    the ones Generate shows. The race once decoded every lane with compile "off" while Generate's default is
    "auto" (a GPU's compiled forwards on static caches): its target alone ran slower than Generate's, and every
    speedup it showed was overstated."""
    from specviz import generate as spec
    from specviz.engine import baseline

    seen: dict = {}
    _generate(pair, monkeypatch, "model", seen)       # the page's default drafter: Generate's own comparison
    _generate(pair, monkeypatch, entrant, seen)
    _spied(monkeypatch, baseline, "autoregressive_generate", seen, "race target")
    _spied(monkeypatch, spec, "speculative_generate", seen, f"race {entrant}")
    race.target_lane(pair.target, REPEATING, 12)
    race.lane_from_rounds(entrant, race.decoder_rounds(pair.target, pair.draft, REPEATING, entrant, 4, 12))
    assert _path(seen["race target"]) == _path(seen["generate target model"])
    assert _path(seen[f"race {entrant}"]) == _path(seen[f"generate {entrant}"])
    # The target alone is Generate's default run's comparison whatever the lane: the compile the page starts with.
    assert seen["race target"].compile == "auto" and seen["race target"].static_cache is None
