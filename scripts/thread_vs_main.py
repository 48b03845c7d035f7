"""The same decode in the main thread and in a worker thread, interleaved, with ratios side by side.

    python scripts/thread_vs_main.py [--prompts 5] [--k 3] [--max-new-tokens 64] [--ways main fresh long ...]
                                     [--settings bench page] [--target] [--torch-threads N]

`scripts/page_vs_bench.py` found the page's worker decoding slower than the bench's main thread before anything was
drawn (api / bench 0.88 on the speculative run). This script tells the suspects apart on the packaged pair, greedy:

  where     main   the calling (main) thread, as `python -m specviz bench` decodes
            fresh  a new thread per run, the main thread waiting on the worker's queue (as `ui.worker.start` and the
                   API's `worker.batches` do)
            long   one thread that lives for the whole script and takes every run from a queue
            pool   `ui.worker.start` itself (whatever the product does now)
  settings  bench  what `run_method("specviz")` passes: EOS ignored, the prompt read in one forward
            page   what the page's `DecodeJob` passes (`ui.worker.decode` itself): EOS honoured, `stop=` (so the
                   prompt is read in chunks of PREFILL_CHUNK), the events put on a queue

Each prompt runs every (where, settings), in an order that rotates from prompt to prompt. Per run: tokens/s of the
speculative rounds (the bench's count: the first round left out), the mean draft and verify time per round, and where
the time went: the decoding thread's wall and CPU seconds and the whole process's CPU seconds (another thread's
spinning shows as process CPU above the decoding thread's), with torch's intra-op thread count seen in that thread.

Run it with the machine alone: on a shared machine its figures say little.
"""
from __future__ import annotations

import argparse
import math
import os
import queue
import resource
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))   # its sibling page_vs_bench, run from anywhere
# page_vs_bench's prompt and pair set-up and its shared arguments (imported after the path it needs):
from page_vs_bench import check_sizes, prompts_and_pair, run_arguments

WHERE = ("main", "fresh", "long", "pool")
SETTINGS = ("bench", "page")
NAN = float("nan")


@dataclass
class Measure:
    tok_s: float = NAN
    draft_ms: float = NAN
    verify_ms: float = NAN
    base_tok_s: float = NAN
    wall: float = NAN
    thread_cpu: float = NAN
    process_cpu: float = NAN
    torch_threads: int = 0
    os_threads: int = 0
    tokens: int = 0
    thread_faults: int = 0       # minor page faults of the decoding thread (a page zeroed by the kernel on first touch)
    process_faults: int = 0
    switches: tuple = (0, 0)     # the decoding thread's voluntary / involuntary context switches


def os_threads() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def rate(rounds) -> float:
    n, s = sum(len(r.emitted) for r in rounds[1:]), sum(r.seconds for r in rounds[1:])
    return n / s if n and s > 0 else NAN


def decode(pair, ids, args, settings: str) -> tuple[list, list]:
    """(rounds, target-alone steps) of one run with the given settings, in the calling thread."""
    from specviz.engine.baseline import autoregressive_generate
    from specviz.engine.sampling import SamplingConfig
    from specviz.generate import speculative_generate
    from specviz.ui import session, worker

    sampling = SamplingConfig(temperature=0.0)
    if settings == "page":
        out: queue.Queue = queue.Queue()
        job = worker.DecodeJob(pair, list(ids), args.k, sampling, args.max_new_tokens, args.seed, compare=args.target)
        worker.decode(job, session.Run(), out)
        events = []
        while not out.empty():
            events.append(out.get_nowait())
        for e in events:
            if isinstance(e, worker.Failed):
                raise e.error
        rounds = [e.round for e in events if isinstance(e, worker.RoundDone)]
        steps = next((e.steps for e in events if isinstance(e, worker.BaselineDone)), [])
        return rounds, steps
    rounds = list(speculative_generate(pair.target, pair.draft, ids, k=args.k, sampling=sampling,
                                       max_new_tokens=args.max_new_tokens, seed=args.seed, tokenizer=pair.tokenizer,
                                       ignore_eos=True, record=True))
    steps = list(autoregressive_generate(pair.target, ids, sampling=sampling, max_new_tokens=args.max_new_tokens,
                                         seed=args.seed,
                                         ignore_eos=True)) if args.target else []
    return rounds, steps


def measured(pair, ids, args, settings: str) -> Measure:
    """`decode` with the clocks around it, in the calling thread."""
    import torch

    m = Measure(torch_threads=torch.get_num_threads())
    r0, p0, t0 = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF), \
        time.perf_counter()
    rounds, steps = decode(pair, ids, args, settings)
    r1, p1, t1 = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF), \
        time.perf_counter()
    m.os_threads = os_threads()
    m.wall = t1 - t0
    m.thread_cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    m.process_cpu = (p1.ru_utime + p1.ru_stime) - (p0.ru_utime + p0.ru_stime)
    m.thread_faults, m.process_faults = r1.ru_minflt - r0.ru_minflt, p1.ru_minflt - p0.ru_minflt
    m.switches = (r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw)
    m.tok_s, m.tokens = rate(rounds), sum(len(r.emitted) for r in rounds)
    m.draft_ms = statistics.mean(r.draft_seconds for r in rounds[1:]) * 1000 if len(rounds) > 1 else NAN
    m.verify_ms = statistics.mean(r.verify_seconds for r in rounds[1:]) * 1000 if len(rounds) > 1 else NAN
    if len(steps) > 1:
        m.base_tok_s = (len(steps) - 1) / sum(s.seconds for s in steps[1:])
    return m


class LongThread:
    """One thread for every run of the script, fed through a queue (a long-lived decode thread)."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, daemon=True, name="long-decode").start()

    def _serve(self):
        while True:
            fn, box = self.jobs.get()
            try:
                box.put(("ok", fn()))
            except BaseException as e:  # noqa: BLE001 - raised again in the caller
                box.put(("error", e))

    def run(self, fn):
        box: queue.Queue = queue.Queue()
        self.jobs.put((fn, box))
        kind, value = box.get()   # the caller blocks on the queue, as the API's batches() does
        if kind == "error":
            raise value
        return value


def fresh(fn):
    box: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: box.put(_call(fn)), daemon=True, name="fresh-decode").start()
    kind, value = box.get()
    if kind == "error":
        raise value
    return value


def pool(fn):
    """Through the product's own `worker.call` thread (whatever `ui.worker` does now)."""
    from specviz.ui import session, worker

    value, error = None, None
    for batch in worker.batches(worker.call(lambda progress: fn(), session.Run())):
        for e in batch:
            if isinstance(e, worker.Result):
                value = e.value
            elif isinstance(e, worker.Failed):
                error = e.error
    if error is not None:
        raise error
    return value


def _call(fn):
    try:
        return "ok", fn()
    except BaseException as e:  # noqa: BLE001 - raised again in the caller
        return "error", e


def set_malloc(mode: str) -> None:
    import ctypes

    if mode == "default":
        return
    libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
    if mode == "arena1":
        ok = libc.mallopt(M_ARENA_MAX, 1)
    else:
        ok = libc.mallopt(M_TRIM_THRESHOLD, 1 << 30) and libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
    print(f"mallopt {mode}: {'ok' if ok else 'REFUSED'}", flush=True)


def fmt(x, digits=2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def med(xs) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else NAN


def parse(argv):
    p = run_arguments(__doc__)   # --prompts, --prompts-file, --k, --max-new-tokens, --seed, as page_vs_bench
    p.add_argument("--ways", nargs="+", choices=WHERE, default=["main", "fresh", "long"])
    p.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    p.add_argument("--target", action="store_true", help="also the target alone after each speculative run")
    p.add_argument("--torch-threads", type=int, default=0, help="torch.set_num_threads in the main thread first")
    p.add_argument("--malloc", choices=("default", "arena1", "notrim"), default="default",
                   help="glibc malloc before anything runs: arena1 = every thread in the main arena (M_ARENA_MAX 1); "
                        "notrim = fixed trim and mmap thresholds (no page given back and faulted in again)")
    args = p.parse_args(argv)
    check_sizes(p, args)
    return args


def main(argv=None) -> int:
    args = parse(argv)
    set_malloc(args.malloc)
    import torch

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    print(f"thread_vs_main: torch {torch.__version__}, {torch.get_num_threads()} intra-op threads in the main thread, "
          f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}",
          flush=True)
    # the packaged pair, as page_vs_bench loads it, but in this thread
    _, pair, encoded = prompts_and_pair(args, "thread_vs_main", on_models_thread=False)
    long = LongThread() if "long" in args.ways else None
    runners = {"main": lambda fn: fn(), "fresh": fresh, "long": long.run if long else None, "pool": pool}
    ways = [(w, s) for w in args.ways for s in args.settings]
    print("warm-up (untimed) ...", flush=True)
    short = argparse.Namespace(**{**vars(args), "max_new_tokens": 8})
    for w, s in ways:
        runners[w](lambda: measured(pair, encoded[0], short, s))
    results: dict[tuple[str, str], list[Measure]] = {way: [] for way in ways}
    print(f"{'':4s}{'way':13s}{'tok':>4s}{'tok/s':>7s}{'draft ms':>9s}{'verify ms':>10s}{'target':>7s}"
          f"{'wall s':>7s}{'thr cpu':>8s}{'proc cpu':>9s}{'torch thr':>10s}{'os thr':>7s}{'thr flt':>9s}{'proc flt':>9s}"
          f"{'vol/invol sw':>14s}", flush=True)
    for i, ids in enumerate(encoded):
        order = ways[i % len(ways):] + ways[:i % len(ways)]
        for w, s in order:
            m = runners[w](lambda: measured(pair, ids, args, s))
            results[(w, s)].append(m)
            print(f"p{i:02d} {w + '/' + s:13s}{m.tokens:4d}{fmt(m.tok_s):>7s}{fmt(m.draft_ms, 1):>9s}"
                  f"{fmt(m.verify_ms, 1):>10s}{fmt(m.base_tok_s):>7s}{fmt(m.wall):>7s}{fmt(m.thread_cpu):>8s}"
                  f"{fmt(m.process_cpu):>9s}{m.torch_threads:>10d}{m.os_threads:>7d}{m.thread_faults:>9d}"
                  f"{m.process_faults:>9d}{m.switches[0]:>8d}/{m.switches[1]:<5d}", flush=True)
    ref = ways[0]
    print(f"\nMEDIANS over {len(encoded)} prompt(s), greedy, K = {args.k}, {args.max_new_tokens} tokens; ratios: the "
          f"median over prompts of each prompt's ratio to {ref[0]}/{ref[1]}")
    print(f"{'way':16s}{'tok/s':>7s}{'ratio':>7s}{'draft':>7s}{'verify':>8s}{'target':>8s}{'ratio':>7s}"
          f"{'proc cpu / wall':>16s}{'faults/tok':>11s}")
    for way, ms in results.items():
        rs = results[ref]
        print(f"{way[0] + '/' + way[1]:16s}{fmt(med(m.tok_s for m in ms)):>7s}"
              f"{fmt(med(a.tok_s / b.tok_s for a, b in zip(ms, rs)), 3):>7s}"
              f"{fmt(med(a.draft_ms / b.draft_ms for a, b in zip(ms, rs)), 3):>7s}"
              f"{fmt(med(a.verify_ms / b.verify_ms for a, b in zip(ms, rs)), 3):>8s}"
              f"{fmt(med(m.base_tok_s for m in ms)):>8s}"
              f"{fmt(med(a.base_tok_s / b.base_tok_s for a, b in zip(ms, rs)), 3):>7s}"
              f"{fmt(med(m.process_cpu / m.wall for m in ms)):>16s}"
              f"{fmt(med(m.process_faults / max(1, m.tokens) for m in ms), 0):>11s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
