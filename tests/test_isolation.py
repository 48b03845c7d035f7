"""tests/isolated.py: a test that loads a real pair runs in a child pytest process, its outcome reported back."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from isolated import CHILD_ENV

TESTS = Path(__file__).resolve().parent
CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest

def pytest_addoption(parser):
    parser.addoption("--real-pair", choices=("run", "skip", "only"), default="run")

def pytest_configure(config):
    config.addinivalue_line("markers", "real_model: a real pair")

@pytest.fixture
def pair_fp32():
    return "pair"

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    from isolated import isolate
    isolate(session, config, items)
"""
BODY = """
import os, pytest

def note(name):
    with open("pids.txt", "a") as f:
        f.write(f"{name} {os.getpid()}\\n")

def test_light():
    note("light")

@pytest.mark.real_model
def test_marked():
    note("marked")

def test_by_fixture(pair_fp32):
    note("fixture")
"""


def run(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_it.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k != CHILD_ENV}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_the_real_pair_tests_run_in_one_child_process_per_module(tmp_path):
    r = run(tmp_path, BODY)
    assert r.returncode == 0, r.stdout + r.stderr
    pids = dict(line.split() for line in (tmp_path / "pids.txt").read_text().splitlines())
    assert set(pids) == {"light", "marked", "fixture"}
    assert pids["marked"] == pids["fixture"] != pids["light"]          # together, away from the main process
    assert "2 passed" in r.stdout                                       # the light test and the child's item


def test_a_failure_in_the_child_fails_the_item_with_the_childs_report(tmp_path):
    r = run(tmp_path, BODY + "\n@pytest.mark.real_model\ndef test_broken():\n    assert 1 == 2, 'child says no'\n")
    assert r.returncode == 1 and "child says no" in r.stdout and "1 failed" in r.stdout


def test_a_module_whose_real_tests_all_skip_is_skipped_with_the_childs_reason(tmp_path):
    body = "import pytest\n\n@pytest.mark.real_model\ndef test_real():\n    pytest.skip('no packaged pair here')\n"
    r = run(tmp_path, body)
    assert r.returncode == 0 and "no packaged pair here" in r.stdout and "1 skipped" in r.stdout


def test_m_and_k_choose_before_the_split(tmp_path):
    r = run(tmp_path, BODY, "-m", "not real_model")
    assert r.returncode == 0 and "2 passed, 1 deselected" in r.stdout
    pids = dict(line.split() for line in (tmp_path / "pids.txt").read_text().splitlines())
    assert set(pids) == {"light", "fixture"} and pids["light"] != pids["fixture"]   # the marked one deselected


def test_ci_runs_the_real_pair_tests_in_a_pass_of_their_own(tmp_path):
    """.ci/run: `--real-pair skip` on two workers, then `--real-pair only` in one process; together, every test."""
    skip = run(tmp_path, BODY, "--real-pair", "skip")
    assert skip.returncode == 0 and "1 passed, 1 deselected" in skip.stdout, skip.stdout
    assert (tmp_path / "pids.txt").read_text().split()[0::2] == ["light"]
    (tmp_path / "pids.txt").unlink()
    only = run(tmp_path, BODY, "--real-pair", "only")
    assert only.returncode == 0 and "1 passed, 1 deselected" in only.stdout, only.stdout
    assert sorted((tmp_path / "pids.txt").read_text().split()[0::2]) == ["fixture", "marked"]


SCHEDULER = """

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from isolated import real_pair_scheduler
    return real_pair_scheduler(config, log)
"""
TIMED = """
import os, time, pytest

def note(what):
    with open({log!r}, "a") as f:
        f.write(f"{{what}} {{os.environ.get('PYTEST_XDIST_WORKER')}} {{time.time()}}\\n")

@pytest.mark.real_model
def test_real():
    note("{name}-start")
    time.sleep(1.0)
    note("{name}-end")

def test_light():
    note("{name}-light")
"""


def test_on_two_workers_the_real_pair_items_run_on_one_worker_one_after_another(tmp_path):
    """CI's `-n 2`: two loaded pairs at once would exceed CI's memory; xdist's own `load` would run them side by side."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    (tmp_path / "conftest.py").write_text(CONFTEST + SCHEDULER)
    log = str(tmp_path / "log.txt")
    for name in ("a", "b", "c"):
        (tmp_path / f"test_{name}.py").write_text(TIMED.format(log=log, name=name))
    env = {k: v for k, v in os.environ.items() if k != CHILD_ENV}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "6 passed" in r.stdout, r.stdout + r.stderr
    rows = [line.split() for line in Path(log).read_text().splitlines()]
    real = {what: (worker, float(at)) for what, worker, at in rows if not what.endswith("light")}
    assert len({worker for worker, _ in real.values()}) == 1                     # one worker runs them all
    spans = sorted((real[f"{n}-start"][1], real[f"{n}-end"][1]) for n in "abc")
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))   # never two at once
