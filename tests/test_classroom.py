"""The classroom's logic without a browser: stops and numbers per round, re-drawn u, the mass picture,
the lab's samplers (the real rule passes chi-square, every teaching bug fails it), the calculator, lessons."""
from __future__ import annotations

import json
import math
import re
import shutil

import pytest

from specviz.classroom import lab, lessons, whatif
from specviz.classroom.decisions import decision, redraw, uniforms
from specviz.classroom.masses import mass
from specviz.classroom.steps import Cursor, at_end, clamp, last_rejected, move, node_states, nodes, stops, tree_order
from specviz.engine.sampling import SamplingConfig
from specviz.strings import t
from specviz.trace.records import Choice, Round
from specviz.viz import classroom as vc
from specviz.viz.format import display_number as fmt

from rounds import bonus_round, rejected_round, tok


# ---------------------------------------------------------------- stops and numbers
def test_stops_follow_the_decoder_order():
    assert [(s.kind, s.pos) for s in stops(rejected_round())] == [
        ("draft", None), ("verify", None), ("test", 0), ("test", 1), ("test", 2), ("correction", 2)]
    assert [s.kind for s in stops(bonus_round())] == ["draft", "verify", "test", "test", "bonus"]


@pytest.mark.parametrize("make", [rejected_round, bonus_round])
def test_a_chain_is_walked_as_a_tree_of_one_branch(make):
    """A chain's tokens hang one from the other and are tested against p: the tree's walk tries exactly the tokens the
    chain tests, and at the round's end every token shows the chain's own verdict (a discarded one too)."""
    rnd = make()
    tree = nodes(rnd)
    assert [n.parent for n in tree] == list(range(-1, rnd.k - 1))
    assert all(n.r == tk.p and n.top_r == tk.top_p for n, tk in zip(tree, rnd.drafted))
    assert tree_order(tree) == [s.pos for s in stops(rnd) if s.kind == "test"] == list(range(rnd.k if rnd.rejected_at is None else rnd.rejected_at + 1))
    assert node_states(rnd, stops(rnd)[-1]) == [rnd.verdict(i) for i in range(rnd.k)]
    assert node_states(rnd, stops(rnd)[1]) == ["pending"] * rnd.k
    assert last_rejected(rnd) == rnd.rejected_at


def test_numbers_and_formula_at_each_test():
    rnd = rejected_round()
    first = decision(nodes(rnd)[0])
    assert (first.p, first.q, first.u) == (0.31, 0.44, 0.62) and first.a == pytest.approx(0.31 / 0.44)
    assert vc.formula(first) == "a = min(1, p/q) = min(1, 0.310/0.440) = 0.705; u = 0.620 < 0.705 → accepted"
    third = decision(nodes(rnd)[2])
    assert not third.accepted
    assert vc.formula(third).endswith("u = 0.900 ≥ 0.250 → rejected")
    assert "u = ?" in vc.formula(third, hidden=True)
    assert vc.formula(first, "es").endswith("→ aceptado")


_NUMBER = r"([0-9][0-9.e+-]*)"
_LINE = re.compile(rf"min\(1, {_NUMBER}/{_NUMBER}\) = {_NUMBER}; u = {_NUMBER} (<|≥) {_NUMBER} → (\S+)$")


def _rounded_like(x: float, shown: str) -> str:
    """`x` written the way `shown` is (the same decimals, or the same exponent form): what a reader checking the
    line by hand compares with."""
    if "e" in shown:
        return f"{x:.{len(shown.split('e')[0].split('.')[1])}e}"
    return f"{x:.{len(shown.split('.')[1])}f}"


def _check_line(p: float, q: float, a: float, u: float) -> None:
    line = vc.formula(vc.Decision(p=p, q=q, a=a, u=u))
    ps, qs, shown_a, us, rel, again, verdict = _LINE.search(line).groups()
    assert again == shown_a and verdict == ("accepted" if u < a else "rejected"), line
    assert _rounded_like(min(1.0, float(ps) / float(qs)), shown_a) == shown_a, line   # min(1, p/q) of the shown
    assert _rounded_like(a, shown_a) == shown_a, line                                 # the true a, rounded
    assert (float(us) < float(shown_a)) == (rel == "<") == (u < a), line              # u's side of a, as shown
    assert len(ps.replace("0.", "", 1).lstrip("0").split("e")[0].replace(".", "")) >= 3, line   # 3 s.f. at least


def test_every_formula_line_checks_out_by_hand_with_its_shown_numbers():
    """10,000 tests with p and q spread over 1e-6..1 (log-uniform), a as the decoder records it (float32) and as
    the exact ratio: min(1, p/q) of the shown p and q rounds to the shown a, and the shown u sits on the shown a's
    side the verdict says. Two significant figures once gave `min(1, 0.012/0.019) = 0.651`."""
    import numpy as np

    rng = np.random.default_rng(20260)
    p, q = (10.0 ** rng.uniform(-6, 0, 10_000) for _ in range(2))
    u = rng.uniform(0, 1, 10_000)
    f32 = np.float32
    for i in range(10_000):
        exact = min(1.0, p[i] / q[i])
        recorded = float(min(f32(1), f32(p[i]) / f32(q[i])))
        _check_line(float(f32(p[i])), float(f32(q[i])), recorded, float(u[i]))
        _check_line(float(p[i]), float(q[i]), exact, float(exact if i % 97 == 0 else u[i]))   # u = a: rejected
    _check_line(0.01236, 0.01899, 0.01236 / 0.01899, 0.5)   # the line a class found: 0.012/0.019 = 0.632, not 0.651


def test_walk_crosses_rounds_and_stops_at_both_ends():
    rounds = [rejected_round(), bonus_round()]
    cur, seen = Cursor(), []
    while True:
        seen.append((cur.round, stops(rounds[cur.round])[cur.stop].kind))
        if at_end(rounds, cur):
            break
        cur = move(rounds, cur, +1)
    assert len(seen) == 6 + 5 and seen[5] == (0, "correction") and seen[6] == (1, "draft")
    assert move(rounds, Cursor(1, 0), -1) == Cursor(0, 5)
    assert move(rounds, Cursor(), -1) == Cursor()
    assert clamp(rounds, Cursor(9, 99)) == Cursor(1, 4)


def test_summary_says_everything_in_words():
    assert vc.summary(rejected_round()) == ("2 of 4 drafts accepted; 't3' rejected: p = 0.10, q = 0.40; "
                                            "correction 't9' from the residual")
    assert vc.summary(bonus_round()) == "2 of 2 drafts accepted; bonus 't7' from p"


def test_stage_html_shows_glyphs_and_escapes():
    rnd = rejected_round()
    rnd.drafted[0].text = "<img src=x onerror=alert(1)>"
    html = vc.stage_html(rnd, 3, 5, greedy=False)
    assert "<img" not in html and "&lt;img" in html
    for glyph in ("✓", "✗", "·", "↻"):
        assert glyph in html
    hidden = vc.stage_html(rnd, 3, 4, greedy=False, options=vc.StageOptions(hidden=True))
    assert 'data-u=""' in hidden and "u = 0.900" not in hidden


# ---------------------------------------------------------------- re-drawn u
def test_redraw_is_reproducible_and_follows_u_below_a():
    rnd = rejected_round()
    assert redraw(rnd, 7, 0).round is rnd
    for draw in range(1, 30):
        r = redraw(rnd, 7, draw)
        assert r.round == redraw(rnd, 7, draw).round
        us = uniforms(7, rnd.index, draw, rnd.k)
        first_fail = next((i for i, tk in enumerate(rnd.drafted) if not us[i] < tk.accept_prob), None)
        assert r.round.rejected_at == first_fail
        assert r.changed == (first_fail != rnd.rejected_at)
        if r.changed and first_fail is not None:   # from the top-5 lists (none when they hold no residual mass)
            assert r.approximate and (r.round.correction is None) == (first_fail != 2)
        if first_fail is None:
            assert r.bonus_unknown and r.round.correction is None and r.round.bonus is None


def test_greedy_rounds_never_change_under_a_new_u():
    drafted = [tok(1, 1.0, 1.0, 0.5, True), tok(2, 0.0, 1.0, 0.4, False)]
    rnd = Round(0, drafted, 1, Choice(3, "t3", 1.0), None, [1, 3], 0.0, 0.0)
    assert all(not redraw(rnd, 1, d).changed for d in range(1, 20))


# ---------------------------------------------------------------- the mass picture
def test_mass_splits_p_into_overlap_and_residual():
    rnd = rejected_round()
    m = mass(nodes(rnd)[2], rnd.correction)
    for p, q, lo, res in zip(m.p, m.q, m.overlap, m.residual):
        assert lo + res == pytest.approx(p) and lo == min(p, q)
    c = m.drawn
    assert m.texts[c] == "t9" and m.r[c] == 0.8
    # P(reject) from the decoder's exact r: (p − q)/r at the drawn token; r·P(reject) gives back max(0, p − q).
    assert m.reject_chance == pytest.approx(0.4 / 0.8)
    assert m.reject_chance * m.r[c] + m.overlap[c] == pytest.approx(m.p[c])


# ---------------------------------------------------------------- the lab
@pytest.fixture(scope="module")
def tiny():
    return lab.tiny_distributions("The cat", SamplingConfig(temperature=0.6))


def _fit(d, variant):
    counts = list(lab.sample_counts(d, variant, lab.MAX_SAMPLES, seed=3))[-1]
    assert int(counts.sum()) == lab.MAX_SAMPLES
    return lab.fit(counts, d.p, seed=3)


def test_real_rule_matches_p(tiny):
    f = _fit(tiny, "real")
    assert f.p_value > 1e-3 and f.tv < 2 * f.noise_tv + 0.02


@pytest.mark.parametrize("variant", [v for v in lab.VARIANTS if v != "real"])
def test_each_teaching_bug_is_caught(tiny, variant):
    f = _fit(tiny, variant)
    assert f.p_value < 1e-6 and f.tv > 2 * f.noise_tv, (variant, f)


def test_lab_is_bounded_and_stoppable(tiny):
    import threading

    stop = threading.Event()
    gen = lab.sample_counts(tiny, "real", 10**9, seed=0, stop=stop)
    first = next(gen)
    stop.set()
    assert list(gen) == [] and int(first.sum()) <= lab.MAX_SAMPLES
    with pytest.raises(ValueError):
        lab.first_tokens(tiny, "no_such_rule", 4, None)


def test_lab_chunks_keep_memory_small_for_a_large_vocabulary():
    import torch

    V = 152_000
    p = torch.softmax(torch.randn(V), -1)
    d = lab.LabDistributions(p=p, q=torch.softmax(torch.randn(V), -1), q_raw=p, texts=str)
    assert lab.ELEMENTS_PER_CALL // V >= 1
    counts = list(lab.sample_counts(d, "real", 200, seed=0))
    assert int(counts[-1].sum()) == 200 and len(counts) >= 2


# ---------------------------------------------------------------- the calculator
def test_worked_example_is_computed_honestly():
    w = whatif.worked_example()
    assert w.tokens == pytest.approx((1 - 0.78 ** 6) / 0.22)
    assert w.speedup == pytest.approx(w.tokens / (5 * 8 / 70 + 1))
    assert 2.1 < w.speedup < 2.4 and w.claimed == 2.5
    assert w.tokens / (5 * w.c_for_claim + 1) == pytest.approx(2.5)


def test_curves_measured_point_and_premise():
    cv = whatif.curves(0.8, 0.1)
    assert cv.ks[0] == 1 and cv.speedup[cv.best_k - 1] == max(cv.speedup)
    m = whatif.measured_point([rejected_round(), bonus_round()], 4)
    assert m.alpha == pytest.approx(4 / 5) and m.tau == 3.0 and not m.c_timed and m.c > 0
    assert whatif.measured_point([], 4) is None
    assert whatif.premise({1: 0.01, 5: 0.011}, 0.002).holds
    assert not whatif.premise({1: 0.01, 5: 0.05}, 0.002).holds


# ---------------------------------------------------------------- prepared lessons
def test_every_prepared_lesson_opens_with_both_languages():
    found = lessons.index()
    assert len(found) >= 4
    for lesson in found:
        lesson_, trace = lessons.load(lesson.name)
        assert lesson.text("title", "es") != lesson.text("title", "en"), lesson.name
        assert lesson.title.get("en") and lesson.title.get("es") and lesson.description.get("es")
        assert 1 <= lesson.start <= len(trace.rounds)
        for rnd in trace.rounds:
            assert stops(rnd)
    names = {lesson.name for lesson in found}
    _, early = lessons.load("early-rejection")
    assert early.rounds[next(le.start for le in found if le.name == "early-rejection") - 1].rejected_at is not None
    assert {"greedy-code", "prose-t07", "early-rejection", "bonus-round", "spanish-t07"} <= names


def test_malformed_lessons_give_a_message_key(tmp_path):
    with pytest.raises(lessons.LessonError) as e:
        lessons.load("no-such-lesson")
    assert e.value.key == "cls.lesson_unknown"
    (tmp_path / "index.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(lessons.LessonError) as e:
        lessons.index(tmp_path)
    assert e.value.key == "cls.lesson_index_bad"
    entry = {"name": "x", "file": "../../etc/passwd.json", "title": {"en": "x"}, "description": {"en": "x"}}
    (tmp_path / "index.json").write_text(json.dumps({"lessons": [entry]}), encoding="utf-8")
    with pytest.raises(lessons.LessonError) as e:
        lessons.load("x", tmp_path)
    assert e.value.key == "cls.lesson_bad"
    shutil.copy(lessons.LESSONS_DIR / "greedy-code.json", tmp_path / "y.json")
    (tmp_path / "y.json").write_text('{"format": "specviz-trace", "version": 1, "rounds": "no"}', encoding="utf-8")
    entry = {"name": "y", "file": "y.json", "title": {"en": "y"}, "description": {"en": "y"}}
    (tmp_path / "index.json").write_text(json.dumps({"lessons": [entry]}), encoding="utf-8")
    with pytest.raises(lessons.LessonError) as e:
        lessons.load("y", tmp_path)
    assert e.value.key == "cls.lesson_bad" and t(e.value.key, "es", **e.value.values).startswith("La lección")


# ---------------------------------------------------------------- bad input reaches the page as a message
def test_event_functions_answer_bad_input_in_the_page_language():
    from specviz.ui.session import AppContext, PairCache
    from specviz.ui.tabs import classroom as tab

    es = AppContext(cache=PairCache(lambda *a: None), lang="es")
    out = tab.what_if(es, 1.7, 4, 0.1, None, None, None)
    assert "α debe ser un número entre 0 y 1." in out["wi_text"]
    with pytest.raises(Exception) as e:
        tab.lab_settings("tiny", "real", 0.6, 10**7, 0, "es")
    assert "Muestras N" in str(e.value)
    with pytest.raises(Exception):
        tab.lab_settings("tiny", "<script>", 0.6, 100, 0, "es")

    class Request:
        query_params = {"lang": "<b>fr</b>", "lesson": "../../x"}
        session_hash = "s"

    out = tab.on_load(es, Request())
    assert "no está disponible" in out["status"] and "<b>" not in out["status"]
    assert "No hay ninguna lección" in out["cls_info"]
    opened = tab.on_load(es, type("R", (), {"query_params": {"lesson": "bonus-round"}})())
    assert opened["cls_trace"].rounds and opened["cls_cur"].round == 1
    assert not math.isnan(float(fmt(0.5)))
