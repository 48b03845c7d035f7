"""The q4a8 kernels' build directory (specviz.models.quant.q4a8.extension): one build at a time, no stale lock
left by a killed build, and the sources compiled from copies kept in the folder."""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path
from typing import Callable, Iterator

BUILD_WAIT_S = 600.0     # the longest wait for another process's build (one takes ~30-160 s on a 2-core CPU)
BUILD_POLL_S = 0.25
OWN_LOCK = "specviz-build.lock"   # ours: held (flock) around every load() of the build directory
TORCH_LOCK = "lock"               # PyTorch's FileBaton in the build directory (torch.utils.cpp_extension.load)

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- one build at a time, and no stale lock
# PyTorch's load() takes its build directory with a FileBaton: a file `lock` created with O_EXCL and removed when
# the build ends. A process killed during the build (Ctrl-C twice, the OOM killer, a stopped container) leaves the
# file, and every later load() waits for it forever. Guessing from the file's age or a pid written beside it is
# fragile: a slow build on a busy CPU outlives any age, and pids are reused and mean nothing across containers
# that share the cache. So every specviz load() runs while holding an flock on a file of our own (OWN_LOCK): the
# kernel drops an flock when its holder dies, however it dies, and it works across processes and containers on
# one file system. Whoever holds OWN_LOCK knows no other specviz process is building; a `lock` still there then
# belongs to a dead builder, unless some process has it open (FileBaton keeps its descriptor open while it
# builds: a PyTorch build outside specviz's lock), which /proc shows within this machine's process namespace.
_WAIT_REPORTS: list[Callable[[int], None]] = []


@contextlib.contextmanager
def reporting_build_waits(report: Callable[[int], None]) -> Iterator[None]:
    """While inside, a wait for another process's build calls `report(seconds waited)` about once a second (a
    load's progress line); outside, the wait is a log line."""
    _WAIT_REPORTS.append(report)
    try:
        yield
    finally:
        _WAIT_REPORTS.remove(report)


class BuildWaitTimeout(RuntimeError):
    """Another process's build held the build directory for longer than BUILD_WAIT_S."""


def _waiting(seconds: float, said: int | None) -> int:
    """Say the wait (once a second): through the load's progress where one listens, else in the log once."""
    whole = int(seconds)
    if said is None:
        log.info("waiting for another process's build of specviz's kernels")
    if whole != said:
        for report in list(_WAIT_REPORTS):
            report(whole)
    return whole


def _open_elsewhere(path: Path) -> bool:
    """Whether a process of this machine (that this user may inspect) has `path` open: a live FileBaton holder."""
    target = os.path.realpath(path)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:   # gone, or another user's
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
            except OSError:
                continue
    return False


@contextlib.contextmanager
def build_turn(folder: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold `folder` for one load(): wait (at most `wait_s`, saying so) while another process builds there, and
    remove PyTorch's lock file that a dead builder left (the comment above says why this way)."""
    wait_s = BUILD_WAIT_S if wait_s is None else wait_s
    folder.mkdir(parents=True, exist_ok=True)
    t0, said = time.monotonic(), None
    with open(folder / OWN_LOCK, "a") as own:
        while True:
            try:
                fcntl.flock(own, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            said = _wait_a_little(t0, said, wait_s)
        try:
            baton = folder / TORCH_LOCK
            while baton.exists():
                if not _open_elsewhere(baton):
                    baton.unlink(missing_ok=True)
                    log.warning("removed %s: the kernel build that left it is no longer running", baton)
                    break
                said = _wait_a_little(t0, said, wait_s)
            yield
        finally:
            fcntl.flock(own, fcntl.LOCK_UN)


def _wait_a_little(t0: float, said: int | None, wait_s: float) -> int:
    waited = time.monotonic() - t0
    if waited > wait_s:
        raise BuildWaitTimeout(f"another process's build of the kernels did not end within {wait_s:.0f} s")
    said = _waiting(waited, said)
    time.sleep(BUILD_POLL_S)
    return said


def staged_sources(folder: Path, sources: list[Path], headers: list[Path]) -> list[Path]:
    """The sources, copied into the build folder (a file rewritten only where its bytes differ): the folder is keyed
    by their content, but PyTorch's build file names each source by its path, so two checkouts of one source in one
    environment rebuilt on every switch between them (ninja sees a changed command); from these copies, they share
    one build. The header travels with them (the sources include it from their own folder)."""
    staged = folder / "src"
    staged.mkdir(exist_ok=True)
    for path in sources + headers:
        copy, text = staged / path.name, path.read_bytes()
        if not copy.exists() or copy.read_bytes() != text:
            partial = copy.with_suffix(copy.suffix + ".part")
            partial.write_bytes(text)
            os.replace(partial, copy)
    return [staged / path.name for path in sources]
