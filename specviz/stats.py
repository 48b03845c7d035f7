"""Small number helpers shared by the benchmark and its report (no heavy imports).

The benchmark and its HTML report both take medians over runs that may be
missing (a method not run, a ratio without a reference) and both print numbers
that may be missing; they must agree on what "missing" means, so it is defined
once here. Nothing here imports torch, plotly or the rest of specviz.
"""
from __future__ import annotations

import math
import statistics


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
