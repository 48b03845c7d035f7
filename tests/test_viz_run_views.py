"""The run's two whole-run views, checked against the trace: drafts accepted per round against the law
(`specviz.viz.accepted_law`) and where each round's time goes against the target alone (`specviz.viz.round_time`).

Counts come from hand-built rounds whose accepted drafts are known from their construction (not from
`Round.n_accepted`), and from real rounds of the tiny models; the law from `specviz.theory`, its test from
`specviz.stats`.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from rounds import tok
from specviz import stats, theory
from specviz.trace.records import Choice, DraftToken, Round, metrics
from specviz.viz import accepted_law as al
from specviz.viz import round_time as rt


def chain_round(index: int, k: int, accepted: int, seconds=(0.01, 0.02, 0.005)) -> Round:
    """K drafts, the first `accepted` accepted; a rejection after them (correction) or all accepted (bonus).
    `seconds`: (draft, verify, rest)."""
    drafted = [tok(10 + i, 0.5, 0.5, 0.1 if i < accepted else 0.9, i < accepted) for i in range(k)]
    draft, verify, rest = seconds
    if accepted < k:
        return Round(index, drafted, accepted, Choice(1, "c", 0.5), None, [10 + i for i in range(accepted)] + [1],
                     draft, verify, seconds=draft + verify + rest)
    return Round(index, drafted, None, None, Choice(2, "b", 0.5), [10 + i for i in range(k)] + [2], draft, verify,
                 seconds=draft + verify + rest)


def chain_rounds(accepted: list[int], k: int = 4) -> list[Round]:
    return [chain_round(i, k, n) for i, n in enumerate(accepted)]


def caption(fig) -> str:
    """The figure's title and notes as one line (the notes are wrapped with <br>)."""
    return fig.layout.title.text.replace("<br>", " ")


def bars(fig):
    return next(d for d in fig.data if d.type == "bar")


def law_trace(fig, name_start: str):
    return next(d for d in fig.data if d.type == "scatter" and d.name.startswith(name_start))


# ---------------------------------------------------------------- the law's arithmetic
@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.75, 1.0])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_the_law_is_the_truncated_geometric_and_sums_to_one(alpha, k):
    law = theory.accepted_length_law(alpha, k)
    assert len(law) == k + 1 and sum(law) == pytest.approx(1.0)
    assert law[:k] == pytest.approx([alpha ** j * (1 - alpha) for j in range(k)])
    assert law[k] == pytest.approx(alpha ** k)
    # its mean plus the round's own token is the theory's tokens per round
    assert sum(j * p for j, p in enumerate(law)) + 1 == pytest.approx(theory.expected_tokens_per_round(alpha, k))


def test_depth_law_composes_per_depth_rates():
    assert theory.depth_law([0.5, 0.2]) == pytest.approx([0.5, 0.5 * 0.8, 0.5 * 0.2])
    assert theory.depth_law([]) == [1.0]


@pytest.mark.parametrize("x, df, p", [(3.841458820694124, 1, 0.05), (5.991464547107979, 2, 0.05),
                                      (11.344866730144373, 3, 0.01), (0.0, 4, 1.0), (2.0, 2, 0.36787944117144233)])
def test_chi_square_survival_matches_known_values(x, df, p):
    assert stats.chi_square_sf(x, df) == pytest.approx(p, rel=1e-9, abs=1e-12)


def test_chi_square_survival_agrees_with_scipy_where_it_is_installed():
    chi2 = pytest.importorskip("scipy.stats").chi2
    for x in (0.01, 0.7, 3.0, 9.5, 40.0, 150.0):
        for df in (1, 2, 3, 5, 9, 30):
            assert stats.chi_square_sf(x, df) == pytest.approx(chi2.sf(x, df), rel=1e-8, abs=1e-300)


def test_fit_pools_small_groups_and_says_when_there_are_too_few():
    assert stats.pooled([1, 2, 3, 4], [2.0, 3.0, 4.0, 1.0]) == [(3, 5.0), (7, 5.0)]
    few = stats.fit([1, 1, 0], [0.8, 0.7, 0.5])
    assert few.p is None and few.tv == pytest.approx(0.5 * (0.2 + 0.3 + 0.5) / 2)
    exact = stats.fit([50, 30, 20], [50.0, 30.0, 20.0])
    assert exact.tv == 0 and exact.chi2 == 0 and exact.df == 1 and exact.p == 1.0


# ---------------------------------------------------------------- the histogram against the trace
ACCEPTED = [0, 1, 2, 4, 4, 3, 2, 0, 4, 1, 2, 2]


def test_histogram_counts_are_the_rounds_accepted_drafts_not_their_tokens():
    rounds = chain_rounds(ACCEPTED)
    fig = al.accepted_law_figure(rounds)
    expected = [ACCEPTED.count(j) for j in range(5)]
    assert list(bars(fig).y) == expected and list(bars(fig).x) == [0, 1, 2, 3, 4]
    # tokens emitted are one more than accepted: a histogram of those would be shifted by one
    assert [len(r.emitted) - 1 for r in rounds] == ACCEPTED


def test_the_law_is_fitted_at_the_measured_alpha_and_predicts_the_same_total():
    rounds = chain_rounds(ACCEPTED)
    law = al.accepted_law(rounds)
    rejections = sum(1 for n in ACCEPTED if n < 4)
    alpha = sum(ACCEPTED) / (sum(ACCEPTED) + rejections)
    assert law.alpha == pytest.approx(alpha) == pytest.approx(metrics(rounds)["alpha_verified"])
    assert law.expected == pytest.approx([len(ACCEPTED) * p for p in theory.accepted_length_law(alpha, 4)])
    assert sum(law.expected) == pytest.approx(len(ACCEPTED))
    drawn = law_trace(al.accepted_law_figure(rounds), "independent acceptances at α = ")
    assert list(drawn.y) == pytest.approx(law.expected) and f"{alpha:.2f}" in drawn.name


def test_rounds_of_different_k_each_get_their_own_law_and_empty_rounds_are_left_out():
    rounds = [chain_round(0, 4, 2), chain_round(1, 2, 2), chain_round(2, 4, 0), chain_round(3, 1, 0),
              Round(4, [], None, None, None, [7], 0.0, 0.01, seconds=0.01)]
    law = al.accepted_law(rounds)
    assert law.skipped == 1 and law.counts == [2, 0, 2, 0, 0]
    alpha = 4 / (4 + 3)          # 4 accepted, 3 rounds rejected (the K = 2 round accepted both)
    want = [0.0] * 5
    for k in (4, 2, 4, 1):
        for j, p in enumerate(theory.accepted_length_law(alpha, k)):
            want[j] += p
    assert law.expected == pytest.approx(want)
    assert "1 round that drafted nothing" in caption(al.accepted_law_figure(rounds))


def test_real_rounds_of_the_tiny_models_are_counted_as_recorded(tiny_pair):
    from specviz import speculative_generate
    from specviz.engine.sampling import SamplingConfig

    target, draft = tiny_pair
    rounds = list(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=60, seed=4,
                                       sampling=SamplingConfig(temperature=1.0)))
    law = al.accepted_law(rounds)
    by_count = Counter(sum(t.accepted for t in r.drafted) for r in rounds if r.k)
    assert law.counts == [by_count.get(j, 0) for j in range(len(law.counts))]
    assert law.alpha == pytest.approx(metrics([r for r in rounds if r.k])["alpha_verified"])
    times = rt.round_times(rounds, 0.004)
    assert [x.total for x in times] == pytest.approx([r.seconds for r in rounds])
    assert [x.target_alone for x in times] == pytest.approx([0.004 * len(r.emitted) for r in rounds])


# ---------------------------------------------------------------- trees: their own measured law
def tree_round(index: int, path: int, rejected: bool, depth: int = 3) -> Round:
    """A chain-shaped tree of `depth` nodes (each the child of the one before) plus a second root child; the first
    `path` nodes accepted; then a rejection, or (rejected False, path < depth) a stop at a leaf."""
    nodes = [DraftToken(token_id=20 + d, text=f"n{d}", parent=d - 1, q=0.5, p=0.5, accept_prob=1.0, u=0.1,
                      status="accepted" if d < path else "untried") for d in range(depth)]
    nodes.append(DraftToken(token_id=30, text="s", parent=-1, q=0.5, p=0.5, accept_prob=1.0, u=0.1, status="untried"))
    drafted = [tok(20 + d, 0.5, 0.5, 0.1, True) for d in range(path)]
    if rejected:
        drafted.append(tok(20 + path, 0.5, 0.5, 0.9, False))
    return Round(index, drafted, path if rejected else None, Choice(1, "c", 0.5) if rejected else None,
                 None if rejected else Choice(2, "b", 0.5), [20 + d for d in range(path)] + [1], 0.01, 0.02,
                 seconds=0.04, drafter="tree", tree=nodes)


def test_a_tree_is_drawn_with_its_measured_per_depth_law_and_tested_against_one_rate():
    spec = [(0, True), (1, True), (3, False), (3, False), (2, True), (1, True), (3, False), (0, True)]
    rounds = [tree_round(i, path, rejected) for i, (path, rejected) in enumerate(spec)]
    law = al.accepted_law(rounds)
    assert law.kind == "tree" and law.counts == [2, 2, 1, 3]
    # past depth 0: 6 of 8; past 1: 4 of 6; past 2: 3 of 4
    assert law.rates == pytest.approx([6 / 8, 4 / 6, 3 / 4])
    # one tree depth for every round: the measured law reproduces the bars by construction
    assert law.measured == pytest.approx(law.counts)
    assert law.alpha == pytest.approx(13 / (13 + 5))
    fig = al.accepted_law_figure(rounds)
    assert list(law_trace(fig, "measured rate per depth").y) == pytest.approx(law.counts)
    assert list(law_trace(fig, "one rate at every depth").y) == pytest.approx(law.expected)
    assert "matches the bars by construction" in caption(fig)


def test_a_tree_round_that_stopped_at_a_leaf_is_no_failure():
    rounds = [tree_round(0, 1, False), tree_round(1, 1, True), tree_round(2, 3, False)]
    law = al.accepted_law(rounds)
    # depth 1: went on once (round 2), failed once (round 1); round 0 ended at a leaf and is not counted
    assert law.rates[1] == pytest.approx(1 / 2)


def test_real_tree_rounds_of_the_tiny_models(tiny_pair):
    from specviz import speculative_generate
    from specviz.engine.sampling import SamplingConfig

    rounds = list(speculative_generate(*tiny_pair, [1, 2, 3], tree="2x2", max_new_tokens=60, seed=3,
                                       sampling=SamplingConfig(temperature=1.0)))
    law = al.accepted_law(rounds)
    assert law.kind == "tree" and len(law.counts) == 3          # a 2x2 tree is two deep
    paths = Counter(sum(t.accepted for t in r.drafted) for r in rounds if r.tree)
    assert law.counts == [paths.get(j, 0) for j in range(3)] and 0 < law.counts[2] < len(rounds)
    assert sum(law.expected) == pytest.approx(len(rounds)) and sum(law.measured) == pytest.approx(len(rounds))


# ---------------------------------------------------------------- the reading
def simulated(alpha: float, n: int, k: int = 4, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        j = 0
        while j < k and rng.random() < alpha:
            j += 1
        out.append(j)
    return out


def test_independent_acceptances_fit_and_runs_do_not():
    fits = al.accepted_law(chain_rounds(simulated(0.7, 400)))
    assert fits.fit.p is not None and fits.fit.p > 0.05
    assert al.reading(fits).startswith("The law fits")
    # the same α in runs: all or nothing (a repeated span, then fresh text)
    runs = al.accepted_law(chain_rounds([4] * 150 + [0] * 100 + [2] * 30))
    assert runs.fit.p < 0.001 and runs.all_or_nothing[0] == 250 and runs.all_or_nothing[1] < 250
    assert "Acceptance comes in runs" in al.reading(runs) and "p = < 0.001" in al.reading(runs)
    middle = al.accepted_law(chain_rounds([2] * 200 + [1] * 50 + [3] * 50))
    assert "changes with the position" in al.reading(middle)


def test_the_reading_says_when_it_cannot_say():
    few = al.accepted_law(chain_rounds([1, 4, 0]))
    assert few.fit.p is None and al.reading(few).startswith("3 rounds are too few")
    assert al.reading(al.accepted_law(chain_rounds([4] * 50))).startswith("α = 1.00")
    assert al.reading(None) == "no round has drafted anything yet"
    assert al.accepted_law_figure([]).layout.annotations


def test_both_languages():
    rounds = chain_rounds(simulated(0.6, 200, seed=2))
    es = al.accepted_law_figure(rounds, "es")
    assert "Borradores aceptados por ronda" in caption(es) and "La ley" in caption(es)
    assert bars(es).name == "rondas, medidas"
    cost = rt.round_time_figure(rounds, 0.01, lang="es")
    assert "A dónde va el tiempo" in caption(cost)
    assert {d.name for d in cost.data} >= {"borrador", "objetivo solo, mismos tokens"}


# ---------------------------------------------------------------- where the time goes
def test_the_stacked_segments_add_up_to_each_rounds_recorded_time():
    rounds = [chain_round(0, 4, 2, (0.010, 0.030, 0.004)), chain_round(1, 4, 4, (0.012, 0.031, 0.002)),
              chain_round(2, 2, 0, (0.006, 0.025, 0.009))]
    fig = rt.round_time_figure(rounds, target_token_s=0.020)
    stacked = [d for d in fig.data if d.type == "bar"]
    assert [d.name for d in stacked] == ["drafting", "the verify (1 target pass)",
                                         "the rest (the caches' bookkeeping, recording the round)"]
    assert fig.layout.barmode == "stack"
    totals = [sum(d.y[i] for d in stacked) for i in range(3)]
    assert totals == pytest.approx([1000 * r.seconds for r in rounds])
    assert list(stacked[0].y) == pytest.approx([10, 12, 6]) and list(stacked[2].y) == pytest.approx([4, 2, 9])
    marks = law_trace(fig, "target alone")
    assert list(marks.y) == pytest.approx([1000 * 0.020 * n for n in (3, 5, 1)]) and list(marks.x) == [1, 2, 3]
    # 44 ms against 60, 45 against 100, 40 against 20: one round slower than the target alone
    assert "1 of 3 rounds cost more" in caption(fig)


def test_without_a_target_alone_time_there_are_no_marks_and_it_is_said():
    fig = rt.round_time_figure([chain_round(0, 4, 2)])
    assert not [d for d in fig.data if d.type == "scatter"]
    assert "No target-alone time with this run" in caption(fig)


def test_an_older_trace_without_round_wall_time_shows_no_rest():
    r = chain_round(0, 4, 2)
    r.seconds = 0.0
    (x,) = rt.round_times([r])
    assert x.rest == 0 and x.total == pytest.approx(r.draft_seconds + r.verify_seconds)
    assert "(this trace records no round's whole time, so no rest is shown)" in caption(rt.round_time_figure([r]))
    assert "the rest" not in rt.summary([x])


def test_a_long_run_draws_its_newest_rounds_and_says_so():
    rounds = chain_rounds([1] * 250)
    fig = rt.round_time_figure(rounds, 0.01, limit=200)
    assert list(bars(fig).x) == list(range(51, 251))
    assert "The newest 200 of 250 rounds" in caption(fig)


def test_words_reaching_plotly_are_escaped(monkeypatch):
    """Plotly renders a subset of HTML in titles, legends and hovers: every word goes through the escaping."""
    runs = chain_rounds([4] * 150 + [0] * 100 + [2] * 30)
    assert "p = &lt; 0.001" in caption(al.accepted_law_figure(runs))
    hostile = "<img src=x onerror=alert(1)>"
    from specviz.viz import charts

    for module in (al, rt, charts):    # charts: the hover templates' words
        monkeypatch.setattr(module, "t", lambda key, lang="en", **values: hostile)
    for fig in (al.accepted_law_figure(runs), rt.round_time_figure(runs, 0.01)):
        texts = [fig.layout.title.text] + [d.name for d in fig.data] + [d.hovertemplate for d in fig.data]
        assert all("<img" not in text and "&lt;img" in text for text in texts)


# ---------------------------------------------------------------- on the page and in the classroom
def test_the_page_and_the_replay_draw_both_views():
    from specviz.ui.stream import VIEWS, StreamView, after_run_updates

    rounds = chain_rounds(ACCEPTED)
    view = StreamView("prompt", greedy=True, lang="es")
    for r in rounds:
        view.add(r)
    final = view.final()
    assert {"law_plot", "cost_plot"} <= set(final) <= set(VIEWS)
    assert list(bars(final["law_plot"]).y) == [ACCEPTED.count(j) for j in range(5)]
    assert "A dónde va el tiempo" in caption(final["cost_plot"])

    from specviz.trace.records import Trace

    trace = Trace("p", [1], "d", "t", 4, 64, 0, {"temperature": 0.0}, rounds=rounds)
    after = after_run_updates(trace, target_token_s=0.01)
    assert list(law_trace(after["cost_plot"], "target alone").y) == pytest.approx([10.0 * len(r.emitted)
                                                                                    for r in rounds])


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_classroom_panel_fills_on_opening_a_lesson_or_the_shown_run(lang):
    from specviz.classroom import lessons
    from specviz.trace.records import Trace
    from specviz.ui.session import AppContext, PairCache
    from specviz.ui.tabs import classroom

    ctx = AppContext(cache=PairCache(lambda *a: None), lang=lang)
    name = lessons.index()[0].name
    _, lesson_trace = lessons.load(name)
    opened = classroom.open_lesson(ctx, name)
    n = sum(1 for r in lesson_trace.rounds if al.reach(r))
    assert sum(bars(opened["cls_law_plot"]).y) == n
    assert not [d for d in opened["cls_cost_plot"].data if d.type == "scatter"]      # a lesson: no target alone
    trace = Trace("p", [1], "d", "t", 4, 64, 0, {"temperature": 0.0}, rounds=chain_rounds(ACCEPTED))
    shown = classroom.use_run(ctx, trace, 0.02)
    assert list(bars(shown["cls_law_plot"]).y) == [ACCEPTED.count(j) for j in range(5)]
    assert len(law_trace(shown["cls_cost_plot"], "objetivo solo" if lang == "es" else "target alone").y) == 12
