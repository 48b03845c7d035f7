"""scripts/page_vs_bench.py's --check: the live page against the API's worker, as a verdict. Only the
verdict's logic on made-up figures (no timing here: the measurement itself is the script's, with the machine alone)."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pvb():
    spec = importlib.util.spec_from_file_location("page_vs_bench", ROOT / "scripts" / "page_vs_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["page_vs_bench"] = module   # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def results(pvb, page_spec: list[float], page_base: list[float]) -> dict:
    api = [pvb.Result("api", f"p{i}", spec_bench=10.0, base_bench=8.0) for i in range(len(page_spec))]
    page = [pvb.Result("page@4", f"p{i}", spec_bench=s, base_bench=b)
            for i, (s, b) in enumerate(zip(page_spec, page_base))]
    return {"api": api, "page@4": page}


def test_the_check_passes_within_the_tolerance_and_fails_outside_it(pvb, capsys):
    assert pvb.check(results(pvb, [9.5, 10.4, 9.2], [8.0, 7.6, 8.3]), 0.10)
    assert "CHECK passed" in capsys.readouterr().out
    # the speculative part 0.85 of the API's (median of 0.80, 0.85, 0.95): the page slows the decode
    assert not pvb.check(results(pvb, [8.0, 8.5, 9.5], [8.0, 8.0, 8.0]), 0.10)
    assert "CHECK FAILED" in capsys.readouterr().out
    # the target alone alone too slow fails as well, and a missing figure is never a pass
    assert not pvb.check(results(pvb, [10.0], [6.0]), 0.10)
    assert not pvb.check(results(pvb, [float("nan")], [8.0]), 0.10)


def test_check_adds_the_api_way_and_needs_a_page(pvb):
    args = pvb.parse(["--modes", "page", "--check"])
    assert args.check == pytest.approx(0.10) and "api" in args.modes
    assert pvb.parse(["--modes", "browser", "--check", "0.05"]).check == pytest.approx(0.05)
    with pytest.raises(SystemExit):
        pvb.parse(["--modes", "bench", "--check"])
    with pytest.raises(SystemExit):
        pvb.parse(["--modes", "page", "--check", "1.5"])
