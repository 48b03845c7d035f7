"""Every script in scripts/ answers `--help` and does nothing else: it parses its arguments before any work.

The scripts are measurement tools that CI never runs whole (they take minutes and load the real pair); three of them
had drifted from the API they call before anyone noticed, and one took no flags at all, so `--help` re-recorded every
lesson into assets/. This runs each one as a user first would: its imports must resolve against today's package, its
flags must parse, and nothing may be written, neither in the repository nor in the model cache (a model load would
fill it).
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "node_modules"}


def files_of(root: Path) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime in ns) of every file under root, caches and virtual environments left out."""
    out = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv")]
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:   # another test's temporary file, gone meanwhile
                continue
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def help_of(script: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECVIZ_CACHE=str(cache), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def problems(scripts: list[Path], cache: Path, watched: list[Path]) -> dict[str, str]:
    """script name -> what is wrong with its `--help` (a failure, no usage, a file written, the cache filled)."""
    before = [files_of(folder) for folder in watched]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(scripts, pool.map(lambda s: help_of(s, cache), scripts)))
    found = {s.name: f"exit {r.returncode}: {r.stderr[-600:]}" for s, r in results.items() if r.returncode != 0}
    found |= {s.name: "no usage printed" for s, r in results.items() if s.name not in found and "usage:" not in r.stdout}
    if [files_of(folder) for folder in watched] != before:
        found["(together)"] = "a script's --help wrote into " + ", ".join(str(f) for f in watched)
    if any(cache.iterdir()):
        found["(together) "] = f"a script's --help filled the model cache: {sorted(p.name for p in cache.iterdir())}"
    return found


def test_there_are_scripts_to_check():
    assert len(SCRIPTS) >= 10, SCRIPTS


def test_every_script_answers_help_and_writes_nothing(tmp_path):
    (tmp_path / "cache").mkdir()
    found = problems(SCRIPTS, tmp_path / "cache", [ROOT / "assets", ROOT / "docs"])
    assert not found, found


@pytest.mark.parametrize("body, expected", [
    ("import argparse, os, pathlib\npathlib.Path(os.environ['SPECVIZ_CACHE'], 'x').write_text('x')\n"
     "argparse.ArgumentParser().parse_args()\n", "filled the model cache"),         # works before it parses
    ("import argparse, pathlib\npathlib.Path('{out}', 'lesson.json').write_text('x')\n"
     "argparse.ArgumentParser().parse_args()\n", "wrote into"),                      # make_lessons.py's accident
    ("print('working')\n", "no usage printed"),                                        # takes no flags
    ("from specviz.engine.sampling import a_name_that_went_away\n", "exit 1"),         # drifted from the package
])
def test_the_check_catches_a_broken_script(tmp_path, body, expected):
    out, cache = tmp_path / "assets", tmp_path / "cache"
    out.mkdir(), cache.mkdir()
    script = tmp_path / "broken.py"
    script.write_text(body.format(out=out))
    found = problems([script], cache, [out])
    assert any(expected in text for text in found.values()), found
