"""specviz.trace.compare: speedup and the identical-output check of a run against the target alone."""
from __future__ import annotations

import math
from types import SimpleNamespace

from specviz.trace.compare import Comparison, best_row, compare_runs, speedup, tokens_per_s
from specviz.trace.records import Step


def steps(ids, seconds=0.5):
    return [Step(index=i, token_id=t, text=str(t), p=1.0, seconds=seconds) for i, t in enumerate(ids)]


def test_speedup_is_nan_without_a_usable_baseline():
    assert speedup(10.0, 5.0) == 2.0
    for base in (None, 0.0, -1.0, float("nan")):
        assert math.isnan(speedup(10.0, base))
    assert math.isnan(speedup(None, 5.0))


def test_tokens_per_s_of_the_target_alone():
    assert tokens_per_s(steps([1, 2, 3, 4])) == 2.0
    assert math.isnan(tokens_per_s(steps([1], seconds=0.0)))


def test_greedy_identical_and_different_outputs():
    same = compare_runs([1, 2, 3], 6.0, steps([1, 2, 3]), greedy=True)
    assert same == Comparison(6.0, 2.0, True, True, None, 3, 3) and same.speedup == 3.0
    diff = compare_runs([1, 9, 3], 6.0, steps([1, 2, 3]), greedy=True)
    assert diff.identical is False and diff.first_diff == 1
    shorter = compare_runs([1, 2], 6.0, steps([1, 2, 3]), greedy=True)
    assert shorter.identical is False and shorter.first_diff == 2        # a length difference counts


def test_sampling_runs_compare_speed_only():
    c = compare_runs([1, 9], 4.0, steps([1, 2]), greedy=False)
    assert c.identical is None and c.first_diff == 1 and c.speedup == 2.0


def test_no_baseline_tokens_means_no_comparison():
    assert compare_runs([1, 2], 4.0, [], greedy=True) is None


def test_best_row_of_a_sweep():
    rows = [SimpleNamespace(k=k) for k in (1, 2, 3)]
    assert best_row(SimpleNamespace(rows=rows, best_k=2)) is rows[1]
    assert best_row(SimpleNamespace(rows=rows, best_k=None)) is None
    assert best_row(None) is None
