"""The race's event function on the tiny pair (no download, no browser): the lanes appear one by one, the end says
every drafter wrote the target alone's tokens, a bad field is refused in the page's language with nothing run, and
Stop ends the race with a sentence."""
from __future__ import annotations

import re
import threading

import pytest

from specviz.classroom import race as cr
from specviz.strings import LANGUAGES, t
from specviz.ui import session
from specviz.ui.classroom_inputs import RACE_FORM
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import classroom_race
from specviz.viz.format import esc
from tests.browser.tiny_app import tiny_loader


def form(**over) -> dict:
    values = dict(race_prompt="the cat sat on the mat, the cat sat on the mat", race_tokens=16, race_k=4,
                  pair="packaged", draft_id="", target_id="")
    values.update(over)
    assert set(values) == set(RACE_FORM)
    return values


def request(name: str):
    return type("R", (), {"session_hash": name})()


def run_race(lang: str, name: str, **over) -> list[dict]:
    ctx = AppContext(cache=PairCache(tiny_loader()), lang=lang, tick_s=0.05)
    return list(classroom_race.race(ctx, form(**over), request(name)))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_race_shows_each_lane_as_it_ends_and_says_it_was_lossless(lang):
    outs = run_race(lang, f"race-{lang}")
    views = [o["race_view"] for o in outs if o.get("race_view")]
    assert [v.count('class="sv-race-lane"') for v in views] == [1, 2, 3, 4, 5]     # one more lane each time
    final = views[-1]
    assert re.findall(r'data-same="(\w+)"', final) == ["reference", "yes", "yes", "yes", "yes"]
    assert esc(t("race.done_same", lang, n=16)) in outs[-1]["race_status"]
    running = [o["race_status"] for o in outs if "race_status" in o and 'data-kind="run"' in o["race_status"]]
    assert any(esc(t("race.running", lang, lane=t("race.target", lang), i=1, n=5, seconds="0")) in s
               for s in running)
    assert "<script" not in final and "<img" not in final and "<b>" not in final   # the tiny vocabulary is hostile


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("over", [dict(race_tokens=0), dict(race_tokens=129), dict(race_tokens=2.5),
                                  dict(race_k=17), dict(race_k="x"), dict(race_prompt=""),
                                  dict(race_prompt="\u200b\u200b"), dict(race_prompt="x" * 2001),
                                  dict(pair="<img src=x onerror=alert(1)>")], ids=repr)
def test_a_bad_field_is_refused_with_a_sentence_and_nothing_runs(lang, over):
    outs = run_race(lang, f"race-bad-{lang}", **over)
    assert len(outs) == 1 and set(outs[0]) == {"race_status"} and 'data-kind="error"' in outs[0]["race_status"]
    assert "<img" not in outs[0]["race_status"]
    ctx = AppContext(cache=None, lang=lang)
    said = classroom_race.race_submitted(ctx, form(**over), request(f"race-sub-{lang}"))
    assert said == outs[0]                                # said at once on the click, before the queue


@pytest.mark.parametrize("lang", LANGUAGES)
def test_stop_ends_the_race_with_a_sentence(lang, monkeypatch):
    """Stop pressed while the second lane runs: the race ends within the grace, says so, and runs no later lane."""
    started = []
    real = cr.run_lane
    gate = threading.Event()

    def lane(pair, ids, name, k, tokens, stop):
        started.append(name)
        if name == "model":
            gate.set()
            while not stop():      # a lane that only ends when Stop is heard
                threading.Event().wait(0.01)
            raise cr.RaceStopped()
        return real(pair, ids, name, k, tokens, stop)

    monkeypatch.setattr(cr, "run_lane", lane)
    name = f"race-stop-{lang}"
    threading.Thread(target=lambda: gate.wait(30) and session.stop_run(request(name)), daemon=True).start()
    outs = run_race(lang, name)
    assert started == ["target", "model"]
    assert esc(t("race.stopped", lang)) in outs[-1]["race_status"]
    assert [o["race_view"].count('class="sv-race-lane"') for o in outs if o.get("race_view")] == [1]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_stop_while_queued_is_said_withdrawn_at_once(lang):
    ctx = AppContext(cache=None, lang=lang)
    name = f"race-queued-{lang}"
    session.submit(request(name))
    assert classroom_race.race_stop(ctx, request(name)) == classroom_race.say(t("status.withdrawn", lang), "warn")
    outs = list(classroom_race.race(AppContext(cache=PairCache(tiny_loader()), lang=lang), form(), request(name)))
    assert outs == [classroom_race.say(t("status.withdrawn", lang), "warn")]


def test_on_zerogpu_a_race_asks_for_its_own_five_runs():
    """The race's GPU time is sized from its own boxes: four speculative runs at its K and the target alone."""
    from specviz.runtime import zerogpu
    from specviz.ui.gpu_calls import request_of

    assert request_of(form(race_tokens=100, race_k=6)) == zerogpu.GpuRequest(100, (6, 6, 6, 6), baseline=True)
    assert request_of(form(race_tokens="junk")).tokens == 48                     # refused later; sized by default
