"""The q4a8 kernels' build directory (specviz.models.quant.q4a8_build): a build killed midway leaves PyTorch's
`lock` file, and the next start clears it instead of waiting forever; a live build elsewhere is waited for, with a
bound, and said; the sources are compiled from copies in the folder, so checkouts of one source share a build.

No full build here (one takes 30-160 s on a 2-core CPU): the lock handling (`build.build_turn`) is tested directly,
`extension()` in a child process with PyTorch's loader standing in, and a real build is started and killed
midway only to leave a real stale lock behind.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from specviz.errors import step, step_text
from specviz.models.quant import q4a8, q4a8_build as build

ROOT = Path(__file__).resolve().parent.parent


def _child(code: str, **env) -> subprocess.Popen:
    """A Python child (its own session, so that killing its group kills ninja and the compilers too)."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def _session(sid: int) -> list[int]:
    """The live processes of session `sid` (ninja puts each compiler in a process group of its own, not a session)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) ": state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(pid))
    return pids


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the child and everything it started (the compilers included), as a stopped container is."""
    for _ in range(100):
        pids = _session(proc.pid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    proc.wait(timeout=30)
    proc.communicate()


def test_a_lock_left_by_a_dead_build_is_removed_at_once(tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / build.TORCH_LOCK).touch()           # what a build killed midway leaves: nobody has it open
    t0 = time.monotonic()
    with build.build_turn(folder, wait_s=5):
        assert not (folder / build.TORCH_LOCK).exists()
    assert time.monotonic() - t0 < 2


def test_extension_clears_a_stale_lock_instead_of_hanging(tmp_path):
    """extension() in a child, PyTorch's load() standing in (its FileBaton, as cpp_extension.load takes it): without
    the check the child waits forever on the stale lock; with it, it loads at once."""
    child = _child("""
        import os
        import torch.utils.cpp_extension as cpp
        from torch.utils.file_baton import FileBaton
        from specviz.models.quant import q4a8, q4a8_build as build

        def load(name, sources, build_directory, **kwargs):
            baton = FileBaton(os.path.join(build_directory, "lock"))
            if baton.try_acquire():
                baton.release()
                return "built"
            baton.wait()
            return "waited"

        cpp.load = load
        folder = q4a8.build_dir()
        folder.mkdir(parents=True)
        (folder / "lock").touch()   # a stale lock: the build that made it was killed
        print(q4a8.extension(), q4a8._FAILURE, (folder / "lock").exists())
    """, SPECVIZ_CACHE=str(tmp_path))
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        _kill(child)
        pytest.fail("extension() hung on a stale build lock")
    assert child.returncode == 0, err
    assert out.split() == ["built", "[]", "False"]


def _hold_our_lock(folder: Path) -> subprocess.Popen:
    """A live specviz builder elsewhere: it holds our flock (as extension() does around load())."""
    child = _child(f"""
        import fcntl, pathlib, time
        f = open(pathlib.Path({str(folder)!r}) / {build.OWN_LOCK!r}, "a")
        fcntl.flock(f, fcntl.LOCK_EX)
        (pathlib.Path({str(folder)!r}) / "holding").touch()
        time.sleep(600)
    """)
    _wait_for(folder / "holding", child)
    return child


def test_a_live_build_is_waited_for_with_a_bound_and_said_then_its_death_frees_the_folder(tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    holder = _hold_our_lock(folder)
    try:
        (folder / build.TORCH_LOCK).touch()       # the live build's FileBaton
        said: list[int] = []
        t0 = time.monotonic()
        with build.reporting_build_waits(said.append), pytest.raises(build.BuildWaitTimeout):
            with build.build_turn(folder, wait_s=1.5):
                pass
        assert 1.5 <= time.monotonic() - t0 < 5
        assert said[0] == 0 and said == sorted(set(said)) and said[-1] == 1     # once a second, in whole seconds
        assert (folder / build.TORCH_LOCK).exists()   # a live build's lock is never taken away
    finally:
        _kill(holder)                                # killed mid-build: the kernel drops its flock
    t0 = time.monotonic()
    with build.build_turn(folder, wait_s=5):
        assert not (folder / build.TORCH_LOCK).exists()   # its lock is stale now: cleared
    assert time.monotonic() - t0 < 2


def test_a_lock_held_open_by_a_build_outside_our_lock_is_waited_for_not_removed(tmp_path):
    """A PyTorch build that does not take our flock (another tool, an older specviz) keeps its FileBaton open."""
    folder = tmp_path / "build"
    folder.mkdir()
    lock = folder / build.TORCH_LOCK
    holder = _child(f"""
        import os, time
        fd = os.open({str(lock)!r}, os.O_CREAT | os.O_EXCL)
        time.sleep(600)
    """)
    try:
        _wait_for(lock, holder)
        with pytest.raises(build.BuildWaitTimeout):
            with build.build_turn(folder, wait_s=0.6):
                pass
        assert lock.exists()
    finally:
        _kill(holder)
    with build.build_turn(folder, wait_s=5):
        assert not lock.exists()


def test_the_load_says_the_wait_in_its_progress_in_both_languages():
    assert step_text(step("load.waiting_kernels", seconds=12), "en") == "waiting for another process's kernel build (12 s)"
    assert "12 s" in step_text(step("load.waiting_kernels", seconds=12), "es")


def test_the_loads_progress_carries_the_wait(tmp_path, monkeypatch):
    """models.storing.ready_q4a8 listens while the kernels are prepared: a wait shows in its progress line."""
    from specviz.models import storing

    folder = tmp_path / "build"
    folder.mkdir()
    holder = _hold_our_lock(folder)

    def unavailable():
        try:
            with build.build_turn(folder, wait_s=1.2):
                return None
        except build.BuildWaitTimeout as e:
            return str(e)

    monkeypatch.setattr(q4a8, "built", lambda: True)
    monkeypatch.setattr(q4a8, "unavailable", unavailable)
    said = []
    try:
        storing.ready_q4a8(lambda fraction, message: said.append(step_text(message, "en")))
    finally:
        _kill(holder)
    assert "waiting for another process's kernel build (0 s)" in said
    assert "waiting for another process's kernel build (1 s)" in said
    assert any("did not end within 1 s" in s for s in said)      # then PyTorch's kernels, said as such


def test_a_real_build_killed_midway_leaves_a_lock_that_the_next_start_clears(tmp_path):
    """A real build (PyTorch's load, ninja, the compiler) killed a moment after it took the folder: its lock stays.
    The next start's check removes it (and does not rebuild here: that would take a minute or more)."""
    child = _child("""
        from specviz.models.quant import q4a8, q4a8_build as build
        q4a8.extension()
    """, SPECVIZ_CACHE=str(tmp_path))
    try:
        folder = tmp_path / "kernels"
        t0 = time.monotonic()
        while not list(folder.glob(f"*/{build.TORCH_LOCK}")):
            if child.poll() is not None:
                pytest.skip(f"the kernels do not build here: {child.communicate()[1][-300:]}")
            assert time.monotonic() - t0 < 60, "the build never took its lock"
            time.sleep(0.05)
        time.sleep(1.0)   # ninja and the compiler at work
    finally:
        _kill(child)
    (lock,) = folder.glob(f"*/{build.TORCH_LOCK}")
    assert lock.exists()
    t0 = time.monotonic()
    with build.build_turn(lock.parent, wait_s=10):
        assert not lock.exists()
    assert time.monotonic() - t0 < 2


def test_the_build_compiles_copies_in_its_folder_so_checkouts_of_one_source_share_it(tmp_path):
    """The build file names sources by path: compiled from the checkout, two checkouts (one environment, one key)
    rebuilt on every switch. The copies sit in the build folder, rewritten only where their bytes differ."""
    folder = tmp_path / "build"
    folder.mkdir()
    staged = build.staged_sources(folder, q4a8.SOURCES, q4a8.HEADERS)
    assert [p.name for p in staged] == [p.name for p in q4a8.SOURCES] and all(p.parent == folder / "src" for p in staged)
    for original in q4a8.SOURCES + q4a8.HEADERS:
        assert (folder / "src" / original.name).read_bytes() == original.read_bytes()
    stamps = {p: p.stat().st_mtime_ns for p in (folder / "src").iterdir()}
    (folder / "src" / "q4a8.h").write_bytes(b"// edited\n")
    time.sleep(0.01)
    assert build.staged_sources(folder, q4a8.SOURCES, q4a8.HEADERS) == staged
    assert (folder / "src" / "q4a8.h").read_bytes() == q4a8.HEADERS[0].read_bytes()
    assert all(p.stat().st_mtime_ns == stamps[p] for p in staged)      # unchanged copies untouched: no rebuild
    assert sorted(p.name for p in (folder / "src").iterdir()) == sorted(p.name for p in q4a8.SOURCES + q4a8.HEADERS)
