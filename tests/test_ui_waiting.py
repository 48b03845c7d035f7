"""The frame of the events that run models (specviz.ui.waiting: place_in_queue, guarded, prepared), no model: the
form's sentence, a run withdrawn from the queue, and a run ended however its event ends."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from specviz.strings import t
from specviz.ui import session, waiting
from specviz.ui.inputs import InputError
from specviz.ui.session import AppContext, PairCache


def ctx(lang="en", loader=None):
    return AppContext(cache=PairCache(loader or (lambda *a: pytest.fail("no model may load"))), lang=lang,
                      tick_s=0.01)


def say(message: str, kind: str) -> dict:
    return {"status": (message, kind)}


def refuse():
    raise InputError("the box is wrong")


def request(name: str):
    return SimpleNamespace(session_hash=f"waiting-{name}")


def test_a_bad_form_is_said_before_the_queue_and_again_in_the_event():
    assert waiting.place_in_queue(ctx(), request("bad"), refuse, say) == say("the box is wrong", "error")
    called = []
    updates = list(waiting.guarded(ctx(), request("bad"), refuse, say, lambda run, s: called.append(s) or iter(())))
    assert updates == [say("the box is wrong", "error")] and called == []


def test_a_good_form_alone_starts_at_once():
    me = request("alone")
    assert waiting.place_in_queue(ctx(), me, lambda: "ok", say) == {}
    # its event starts and ends, so the session waits no longer (other tests count who waits)
    assert list(waiting.guarded(ctx(), me, lambda: "ok", say, lambda run, s: iter(()))) == []


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_run_withdrawn_from_the_queue_says_so_and_never_starts(lang):
    me = request(f"withdrawn-{lang}")
    session.submit(me)
    assert session.stop_run(me) is True
    updates = list(waiting.guarded(ctx(lang), me, lambda: "ok", say, lambda run, s: pytest.fail("it started")))
    assert updates == [say(t("status.withdrawn", lang), "warn")]


def test_the_body_gets_the_checked_settings_and_its_run():
    seen = []

    def body(run, s):
        seen.append((run.active, run.stop.is_set(), s))
        yield {"status": "working"}

    assert list(waiting.guarded(ctx(), request("body"), lambda: 42, say, body)) == [{"status": "working"}]
    assert seen == [(True, False, 42)]


@pytest.mark.parametrize("ending", ["end", "closed", "error"])
def test_the_run_is_ended_however_the_event_ends(ending):
    """Its flag raised (a decoder thread stops) and its slot freed: at its end, when the page cancels the event
    (the generator closed mid-body), and after an error in the body."""
    runs = []

    def body(run, s):
        runs.append(run)
        yield {"status": "first"}
        if ending == "error":
            raise RuntimeError("boom")
        yield {"status": "second"}

    events = waiting.guarded(ctx(), request(ending), lambda: "ok", say, body)
    assert next(events) == {"status": "first"}
    if ending == "closed":
        events.close()
    elif ending == "error":
        with pytest.raises(RuntimeError):
            next(events)
    else:
        assert list(events) == [{"status": "second"}]
    (run,) = runs
    assert run.stop.is_set() and not run.active


def test_prepared_says_a_prompt_the_pair_refuses_and_returns_none():
    def encode(pair):
        assert pair == "pair"
        raise InputError("too long")

    loaded = ctx(loader=lambda draft, target, progress: "pair")
    updates, result = [], None
    gen = waiting.prepared(loaded, session.Run(), ("a/b", "x/y"), say, encode)
    try:
        while True:
            updates.append(next(gen))
    except StopIteration as done:
        result = done.value
    assert result is None and updates[-1] == say("too long", "error")
    ok = waiting.prepared(loaded, session.Run(), ("a/b", "x/y"), say, lambda pair: [1, 2])
    try:
        while True:
            next(ok)
    except StopIteration as done:
        assert done.value == ("pair", [1, 2])


def test_a_long_prompt_is_read_with_an_estimate_once_a_read_was_measured_on_the_pair():
    """A 1,690-token prompt read for 29 s under a bare counter: after one read on the pair, the status says how long
    the read should take in all, in both languages, and goes back to the counter once it is well past that."""
    import time as clock

    from specviz.strings import t
    from specviz.ui.run import Outcome
    from specviz.ui.tabs.generate import waiting_line

    prefills = waiting.PrefillClock()
    pair = ("draft", "target")
    assert prefills.expected(pair, 1690) is None                 # nothing measured yet
    prefills.record(pair, 40, 0.3)                                # a short prompt's read...
    prefills.record(pair, 400, 6.8)                               # ...and a longer one: the longer one counts
    prefills.record(pair, 100, 0.5)
    assert prefills.expected(pair, 1690) == pytest.approx(28.7, abs=0.1)
    assert prefills.expected(pair, 60) is None                    # a read under 2 s needs no estimate
    assert prefills.expected(("other", "pair"), 1690) is None
    now = clock.monotonic()
    for lang in ("en", "es"):
        line = waiting_line(Outcome(), False, now - 12, 1690, 3, lang, prefills.expected(pair, 1690))
        assert line == t("status.prefill_eta", lang, n=1690, seconds="12", total="29")
        late = waiting_line(Outcome(), False, now - 60, 1690, 3, lang, prefills.expected(pair, 1690))
        assert late == t("status.prefill", lang, n=1690, seconds="60")
