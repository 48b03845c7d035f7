"""tests/isolated.py: a test that loads a real pair runs in a child pytest process, its outcome reported back."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from isolated import CHILD_ENV

TESTS = Path(__file__).resolve().parent
CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest

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
