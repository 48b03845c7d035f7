"""Small number helpers shared by the benchmark, its report and the views (no heavy imports).

The benchmark and its HTML report both take medians over runs that may be
missing (a method not run, a ratio without a reference) and both print numbers
that may be missing; they must agree on what "missing" means, so it is defined
once here. Nothing here imports torch, plotly or the rest of specviz.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def is_number(x) -> bool:
    """False for None and NaN: the two ways a measurement can be missing."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def median(xs) -> float:
    """The median of the values that are present; NaN when none is."""
    xs = [x for x in xs if is_number(x)]
    return statistics.median(xs) if xs else float("nan")


def format_measurement(x, spec: str = "{:.2f}", missing: str = "-") -> str:
    """A measurement as text: `spec.format(x)`, or `missing` for None/NaN (a run that did not measure it)."""
    return spec.format(x) if is_number(x) else missing


fmt = format_measurement   # the old name, still imported by bench/suite.py (being edited elsewhere): remove then


def finite(obj):
    """NaN/inf -> None, recursively, so the JSON is valid for browsers."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


# ---------------------------------------------------------------- goodness of fit (the accepted-length view)
# Pure Python: scipy is no dependency of the app. Series and continued fraction of the regularized incomplete gamma
# function (Numerical Recipes, gser/gcf); their precision, ~1e-12, is far below what a p-value is read to.
def _gamma_p_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    n = a
    for _ in range(1000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * 1e-15:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a: float, x: float) -> float:
    tiny = 1e-300
    b, c = x + 1.0 - a, 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi_square_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with `df` degrees of freedom (the test's p-value)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    if x <= 0:
        return 1.0
    a, half = df / 2.0, x / 2.0
    if half < a + 1.0:
        return max(0.0, 1.0 - _gamma_p_series(a, half))
    return min(1.0, _gamma_q_fraction(a, half))


@dataclass(frozen=True)
class Fit:
    """How far observed counts are from a law's expected counts.

    tv: total variation distance between the two as shares (0 = the same, 1 = disjoint). chi2, df, p: Pearson's test
    over groups of neighbouring lengths pooled until each expects at least `MIN_EXPECTED` rounds, with one degree of
    freedom taken per parameter fitted from the same rounds; p is None when fewer groups than that leave a degree of
    freedom (too few rounds to say)."""

    tv: float
    chi2: float | None
    df: int
    p: float | None
    n: int


MIN_EXPECTED = 5.0


def pooled(observed, expected, min_expected: float = MIN_EXPECTED) -> list[tuple[float, float]]:
    """(observed, expected) in groups of neighbouring bins, each expecting at least `min_expected` (a short tail
    joins the last group)."""
    groups: list[tuple[float, float]] = []
    o_run = e_run = 0.0
    for o, e in zip(observed, expected):
        o_run, e_run = o_run + o, e_run + e
        if e_run >= min_expected:
            groups.append((o_run, e_run))
            o_run = e_run = 0.0
    if (o_run or e_run) and groups:
        o_last, e_last = groups.pop()
        groups.append((o_last + o_run, e_last + e_run))
    elif o_run or e_run:
        groups.append((o_run, e_run))
    return groups


def fit(observed, expected, fitted: int = 1, min_expected: float = MIN_EXPECTED) -> Fit:
    """Observed counts against a law's expected counts (the same total); `fitted`: parameters estimated from them."""
    observed, expected = [float(o) for o in observed], [float(e) for e in expected]
    n = sum(observed)
    if n <= 0:
        return Fit(float("nan"), None, 0, None, 0)
    tv = 0.5 * sum(abs(o - e) for o, e in zip(observed, expected)) / n
    groups = pooled(observed, expected, min_expected)
    df = len(groups) - 1 - fitted
    if df < 1:
        return Fit(tv, None, max(df, 0), None, int(n))
    chi2 = sum((o - e) ** 2 / e for o, e in groups)
    return Fit(tv, chi2, df, chi_square_sf(chi2, df), int(n))
