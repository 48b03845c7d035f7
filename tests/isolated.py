"""The real-pair tests, each module in its own pytest process (CI's largest process under 16 GB).

Why: a loaded packaged pair maps about 8 GB of weights, and a process keeps them counted in its resident set while
it holds them; one pytest process that loaded the pair for several modules (a session fixture, a oneDNN copy, a
precision per test) peaked at 21.7 GB on a 23 GB machine. Here the main process never loads a real pair: it
deselects every test that does (marked `real_model`, or asking for `pair_fp32` / `pair_auto` / `packaged_pair`) and runs them
instead as one item per test module, `python -m pytest <those node ids>` in a child process, so each module's
pairs are freed with its process. The README's one command still runs everything.

The child's failures are the item's failure (with the child's report); when every test of a module was skipped
(no packaged pair here), the item is skipped with the child's first reason, so `-rs` still says why.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

CHILD_ENV = "SPECVIZ_TEST_CHILD"          # set in the child: it runs what it is given, isolating nothing
REAL_PAIR_FIXTURES = {"pair_fp32", "pair_auto", "packaged_pair"}


def loads_a_real_pair(item) -> bool:
    return item.get_closest_marker("real_model") is not None or bool(REAL_PAIR_FIXTURES & set(item.fixturenames))


class IsolatedModule(pytest.Item):
    """One test module's real-pair tests, run in a child pytest process."""

    def __init__(self, *, nodeids: list[str], **kwargs):
        super().__init__(**kwargs)
        self.nodeids = nodeids

    def runtest(self) -> None:
        env = {**os.environ, CHILD_ENV: "1"}
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *self.nodeids],
                           cwd=self.config.rootpath, env=env, capture_output=True, text=True)
        self.child_output = r.stdout + r.stderr
        if r.returncode != 0:
            raise ChildFailed(self.child_output)
        summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        if "passed" not in summary and "skipped" in summary:
            reasons = re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", r.stdout, re.MULTILINE)
            pytest.skip(reasons[0] if reasons else summary)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ChildFailed):
            return f"the child pytest process failed ({len(self.nodeids)} tests):\n{excinfo.value.args[0][-12000:]}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.name} (its own process: {len(self.nodeids)} real-pair tests)"


class ChildFailed(Exception):
    pass


ITEM_NAME = "real-pair tests"   # every IsolatedModule's name: its node id ends "::real-pair tests"
REAL_PAIR_SCOPE = "real-pair"


def work_unit(nodeid: str) -> str:
    """What one xdist worker runs whole: every real-pair item together (never two loaded pairs at once), else the
    test's module (its module-scoped fixtures start once)."""
    path, _, name = nodeid.partition("::")
    return REAL_PAIR_SCOPE if name == ITEM_NAME else path


def real_pair_scheduler(config, log):
    """xdist's scheduling by scope, the scope being `work_unit`. CI runs the real-pair items in a pass of their own
    (`--real-pair only`, one process): beside another worker's tests they took 2.7x as long (two processes on two
    cores, each wanting both) and a browser test's 2-second Stop took 4.7 s."""
    from xdist.scheduler import LoadScopeScheduling

    class RealPairScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return RealPairScheduling(config, log)


def isolate(session, config, items: list) -> None:
    """Replace the real-pair tests by one IsolatedModule per module, in place (where the module's first one was)."""
    if os.environ.get(CHILD_ENV) or config.getoption("collectonly"):
        return
    groups: dict = {}
    for item in items:
        if loads_a_real_pair(item):
            groups.setdefault(item.path, []).append(item)
    if not groups:
        return
    kept, placed = [], set()
    for item in items:
        group = groups.get(item.path) if loads_a_real_pair(item) else None
        if group is None:
            kept.append(item)
        elif item.path not in placed:
            placed.add(item.path)
            module = item.getparent(pytest.Module)
            kept.append(IsolatedModule.from_parent(module, name=ITEM_NAME,
                                                   nodeids=[i.nodeid for i in group]))
    choose(config, kept)
    items[:] = kept


def choose(config, items: list) -> None:
    """`--real-pair skip` deselects the real-pair items, `--real-pair only` everything else (CI's two passes)."""
    which = config.getoption("real_pair", "run")
    if which == "run":
        return
    keep = [item for item in items if isinstance(item, IsolatedModule) == (which == "only")]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep
