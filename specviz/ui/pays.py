"""Whether speculation can pay here: the device, the run's compile mode, and c and the verify cost measured once.

c and verify_cost come from `specviz.bench.costs.forward_costs` (bare forwards, a
few seconds on a CPU; tens on a busy one), measured after a run's answer is on
the page (never inside the timed loop, and never before the first token: the
user reads the answer while they are timed) and kept per process for each loaded
pair, device, K and compile mode. `check` turns them, the run's α and the measured speedup into a
`specviz.viz.pays.PaysCheck`; the sentence itself is `specviz.viz.pays`'s.

The theory's c describes the plain draft model proposing every token, so costs
are measured only for the drafters whose draft step is that forward ("model",
and "hybrid" whose rounds may all be drafted by the model), and nothing is said
for a run with any token drafted by prompt lookup. A drafter whose step differs
(a trimmed vocabulary head, say) would need its own timing, so it gets none.
Bare forwards are timed as the run runs them: a compiled run's with
`forward_costs(compile="on")` (the eager c of a GPU, ~0.9, would wrongly say a
compiled run cannot pay).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..bench import costs as bench_costs
from ..engine.drafter_names import TREE
from ..runtime.decoding import resolve_compile
from ..models.devices import gpu_available  # noqa: F401 - re-exported: the app asks pays whether a GPU is here
from ..strings import t
from ..viz.pays import PaysCheck
from . import waiting, worker
from .session import AppContext, Run
from .worker import Result

COST_REPEATS = 3      # timed repetitions per forward (the median is used)
PLAIN_DRAFT_FORWARD = ("model", "hybrid")   # drafters whose draft step is one plain forward of the draft model
# ... and the draft tree, whose every level is one forward of the draft model over that level's rows (a walk of the page found that
# tree rounds got no "cannot pay" sentence); its estimate uses the run's measured τ and the tree's depth.
TREE_DRAFTER = TREE
_MAX_ENTRIES = 16


def device_of(pair) -> str:
    return str(pair.device)


def compiles(mode: str, pair) -> bool:
    """Whether a run with `mode` (auto | on | off) compiles its forwards on the pair's device (auto: CUDA only)."""
    try:
        return resolve_compile(mode, device_of(pair))[1]
    except (ValueError, RuntimeError):
        return False


def _forward_costs():
    return bench_costs.forward_costs   # read at call time: tests stand in for it


class CostCache:
    """ForwardCosts by (pair, device, K, compiled), for the process; holds the pair so its id stays unique."""

    def __init__(self):
        self._lock = threading.Lock()
        self._costs: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()

    @staticmethod
    def key(pair, k: int, compiled: bool) -> tuple:
        return id(pair), device_of(pair), int(k), bool(compiled)

    def get(self, pair, k: int, compiled: bool):
        with self._lock:
            hit = self._costs.get(self.key(pair, k, compiled))
            return hit[1] if hit is not None else None

    def put(self, pair, k: int, compiled: bool, costs) -> None:
        with self._lock:
            self._costs[self.key(pair, k, compiled)] = (pair, costs)
            while len(self._costs) > _MAX_ENTRIES:
                self._costs.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._costs.clear()


COSTS = CostCache()


def wanted(pair, drafter: str, compiled: bool) -> bool:
    """Whether this run's costs mean anything: a draft model drafts each token with one plain forward (the forwards
    are timed compiled or not, as the run runs them)."""
    return pair.draft is not None and (drafter in PLAIN_DRAFT_FORWARD or drafter == TREE_DRAFTER)


def measure(pair, ids: list[int], k: int, compiled: bool, progress: Callable[[float, str], None], stop=None):
    """forward_costs at K for the pair (in a worker thread), stored in COSTS; `stop()` ends a capture early."""
    progress(0.0, "forward costs")
    # Replayed as the run replays: on CUDA "auto" picks the platform's way (torch.compile, or plain CUDA graphs on
    # ZeroGPU); elsewhere the static buffers, uncaptured ("graphs"), rather than minutes of CPU compilation.
    kwargs = {"compile": "auto" if device_of(pair).startswith("cuda") else "graphs"} if compiled else {}
    if stop is not None and compiled:   # only a compiled timing captures first: that is what Stop must end
        kwargs["stop"] = stop
    costs = _forward_costs()(pair.target, pair.draft, ids, ks=[k], repeats=COST_REPEATS, **kwargs)
    COSTS.put(pair, k, compiled, costs)
    progress(1.0, "forward costs")
    return costs


def cached(pair, k: int, drafter: str, compiled: bool):
    """The pair's costs at K if they were measured already (and mean something for this drafter), else None."""
    return COSTS.get(pair, k, compiled) if wanted(pair, drafter, compiled) else None


@dataclass(frozen=True)
class CostRequest:
    """The costs a run asks for: the pair's bare forwards at K over the run's prompt `ids`, timed compiled or not as
    the run ran (`compiled`), for its `drafter` (`wanted` says whether they mean anything for it)."""

    pair: Any
    ids: list[int]
    k: int
    drafter: str
    compiled: bool


def costs(ctx: AppContext, run: Run, request: CostRequest, say: waiting.Say, key: str = "status.costs",
          first: dict | None = None) -> Iterator[dict]:
    """The pair's costs at K: cached, or measured now with a status line (`key`) every second; None when not
    wanted, stopped or failed (a failure only costs the sentence, never the run). `first`: views to show with the
    first line (the run's finished answer, which the timing follows)."""
    r = request
    if not wanted(r.pair, r.drafter, r.compiled):
        return None
    hit = COSTS.get(r.pair, r.k, r.compiled)
    if hit is not None:
        return hit
    line = lambda p, seconds: t(key, ctx.lang, seconds=seconds)   # noqa: E731
    yield {**(first or {}), **say(line(None, "0"), "run")}
    timing = worker.call(lambda progress: measure(r.pair, r.ids, r.k, r.compiled, progress, run.stop.is_set), run)
    outcome = yield from waiting.wait_for(ctx, run, timing, line, say, "status.stopping")
    return outcome.value if isinstance(outcome, Result) else None


def check(costs, k: int, metrics: dict, rounds, measured: float, device: str) -> PaysCheck | None:
    """The numbers behind the sentence, or None when the theory's c does not describe the run."""
    if costs is None or any(getattr(tk, "source", "model") != "model" for r in rounds for tk in r.drafted):
        return None
    alpha = metrics.get("alpha_verified", math.nan)
    c, verify = costs.c, costs.verify_cost(k)
    common = dict(c=c, verify_cost=verify, k=k, alpha=alpha, measured=math.nan if measured is None else measured,
                  device="cuda" if device.startswith("cuda") else "cpu")
    trees = [r.tree for r in rounds if r.tree]
    if trees:   # a tree: τ measured over its depth's draft forwards and one verify of K nodes
        reads, tau = sum(map(tree_depth, trees)) / len(trees), metrics.get("tau", math.nan)
        return PaysCheck(**common, theory=bench_costs.tree_speedup_bound(tau, reads, c, verify), reads=reads, tau=tau)
    return PaysCheck(**common, theory=bench_costs.theory_speedup(alpha, k, c, verify))


def tree_depth(tree) -> int:
    """Levels of a recorded tree (parents come before children): one draft forward each."""
    depths: list[int] = []
    for node in tree:
        depths.append(1 if node.parent < 0 else depths[node.parent] + 1)
    return max(depths, default=0)
