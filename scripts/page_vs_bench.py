"""Tokens/s of the page's own job against the bench's decoder: same pair, prompts and settings, interleaved (issue 27).

    python scripts/page_vs_bench.py [--prompts 5] [--k 3] [--max-new-tokens 64] [--profile] [--rate 4]

Each prompt runs three ways, in an order that rotates from prompt to prompt (so drift on the machine hits all three
alike); each way runs the speculative decode, then the target alone, one after the other:

  bench  `specviz.bench.run_method("specviz")`, then `run_method("target")`: the bench's decoder, nothing else running
  api    the page's decode worker (`ui.worker`, what the `/generate` API runs) with nothing drawn
  page   the page's own Generate event function (`ui.tabs.generate.generate`: worker, `StreamView`, the comparison)
         driven through Gradio's own processing (`Blocks.process_api`: postprocessing and streaming diffs), each
         update JSON-encoded as the server would send it; no browser

Tokens/s count decoding only, the prompt's prefill apart. Two conventions are printed where they differ:
  shown  what the page shows: emitted tokens / the time of the decoding rounds (target alone: of its steps)
  bench  what `python -m specviz bench` reports: the same, leaving out the first round (the first step)
The bench's own runs have only the second. Decode time is the rounds' (steps') own time, measured by the decoder;
render time is the page thread's: building the views, Gradio's processing and the encoding, per update.

`--profile` adds, per run of the page, every update (rounds folded in, the wait before it, build, Gradio and
encoding times, bytes, how old its newest round was) and where the decode thread lost time: its wall time against
its own CPU time, its voluntary context switches (waiting for the GIL or a lock) and involuntary ones (preempted by
another thread), and per round the page's draft and verify times against the API's on the same rounds (greedy
rounds are the same rounds).

Run it with the machine alone: on a shared machine its figures say nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import queue
import resource
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # tests.browser.tiny_app for --pair tiny

MODES = ("bench", "api", "page")
NAN = float("nan")


# ---------------------------------------------------------------- what one run of one way records
@dataclass
class Usage:
    """The decode thread's own clock and switches (getrusage of that thread) at one moment."""

    wall: float
    cpu: float
    voluntary: int      # the thread blocked: the GIL, a lock, I/O
    involuntary: int    # the thread was runnable and another took its core

    @staticmethod
    def now() -> "Usage":
        r = resource.getrusage(resource.RUSAGE_THREAD)
        return Usage(time.perf_counter(), r.ru_utime + r.ru_stime, r.ru_nvcsw, r.ru_nivcsw)

    def __sub__(self, other: "Usage") -> "Usage":
        return Usage(self.wall - other.wall, self.cpu - other.cpu, self.voluntary - other.voluntary,
                     self.involuntary - other.involuntary)


@dataclass
class Update:
    """One page update as the server would send it."""

    at: float           # seconds since the run started
    rounds: int         # rounds shown so far
    waited: float       # seconds the event function slept or waited for events inside this call
    build: float        # the event function's own work in this call (views, comparison)
    gradio: float       # Gradio's postprocessing and diffs
    encode: float       # JSON encoding of what is sent
    nbytes: int
    age: float          # seconds between the newest round's arrival in the queue and this update's sending


@dataclass
class Result:
    mode: str
    prompt: str
    spec_shown: float = NAN
    spec_bench: float = NAN
    base_shown: float = NAN
    base_bench: float = NAN
    spec_tokens: int = 0
    base_tokens: int = 0
    decode_s: float = NAN         # the rounds' and steps' own time
    render_s: float = NAN         # the page thread's work (page only)
    wall_s: float = NAN
    rounds: list = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    usage: dict = field(default_factory=dict)   # phase -> Usage of the decode thread

    @property
    def speedup_shown(self) -> float:
        return self.spec_shown / self.base_shown if self.base_shown > 0 else NAN

    @property
    def speedup_bench(self) -> float:
        return self.spec_bench / self.base_bench if self.base_bench > 0 else NAN


def rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if tokens > 0 and seconds > 0 else NAN


def rates_of_rounds(rounds) -> tuple[float, float]:
    """(shown, bench) tokens/s of speculative rounds: all of them; all but the first."""
    n = [len(r.emitted) for r in rounds]
    s = [r.seconds for r in rounds]
    return rate(sum(n), sum(s)), rate(sum(n[1:]), sum(s[1:]))


def rates_of_steps(steps) -> tuple[float, float]:
    s = [x.seconds for x in steps]
    return rate(len(s), sum(s)), rate(len(s) - 1, sum(s[1:]))


# ---------------------------------------------------------------- the decode worker, tapped
class Tap(queue.Queue):
    """The worker's queue, noting when each event arrived and the decode thread's usage at the phase ends (`put`
    runs in the decode thread)."""

    def __init__(self):
        super().__init__()
        self.arrived: list[tuple[float, object]] = []
        self.usage: dict[str, Usage] = {}

    def put(self, item, block=True, timeout=None):
        from specviz.ui import worker

        now = time.perf_counter()
        if isinstance(item, (worker.SpecDone, worker.BaselineDone, worker.Finished)):
            self.usage[type(item).__name__] = Usage.now()
        self.arrived.append((now, item))
        super().put(item, block, timeout)


class Taps:
    """Patches `worker.start` (every decode of the page and the API goes through it) and `worker.batches` (the
    page's waits) for the length of a `with`; keeps the newest tap."""

    def __init__(self):
        self.tap: Tap | None = None
        self.waited = 0.0          # seconds spent inside batches() since the last reset

    def __enter__(self):
        from specviz.ui import worker

        self._start, self._batches = worker.start, worker.batches
        taps = self

        def start(job, run):
            tap = taps.tap = Tap()

            def body():
                tap.usage["start"] = Usage.now()
                worker.decode(job, run, tap)

            threading.Thread(target=body, daemon=True, name="specviz-decode").start()
            return tap

        def batches(events, *args, **kwargs):
            inner = taps._batches(events, *args, **kwargs)
            while True:
                t0 = time.perf_counter()
                try:
                    batch = next(inner)
                except StopIteration:
                    return
                taps.waited += time.perf_counter() - t0
                yield batch

        worker.start, worker.batches = start, batches
        return self

    def __exit__(self, *exc):
        from specviz.ui import worker

        worker.start, worker.batches = self._start, self._batches


def decode_usage(tap: Tap) -> dict:
    u = tap.usage
    out = {}
    if "start" in u and "SpecDone" in u:
        out["speculative"] = u["SpecDone"] - u["start"]
    if "SpecDone" in u and "BaselineDone" in u:
        out["target alone"] = u["BaselineDone"] - u["SpecDone"]
    return out


def events_of(tap: Tap, kind: str) -> list:
    return [e for _, e in tap.arrived if type(e).__name__ == kind]


# ---------------------------------------------------------------- the three ways
def run_bench(pair, ids, args) -> Result:
    from specviz.bench import run_method
    from specviz.sampling import SamplingConfig

    res, t0 = Result("bench", ""), time.perf_counter()
    sampling = SamplingConfig(temperature=0.0)
    u0 = Usage.now()
    spec = run_method("specviz", pair.target, pair.draft, ids, args.k, sampling, args.max_new_tokens,
                      seed=args.seed, tokenizer=pair.tokenizer)
    u1 = Usage.now()
    base = run_method("target", pair.target, pair.draft, ids, None, sampling, args.max_new_tokens, seed=args.seed)
    u2 = Usage.now()
    res.spec_bench, res.base_bench = spec.tokens_per_s, base.tokens_per_s
    res.spec_tokens, res.base_tokens = spec.new_tokens, base.new_tokens
    res.decode_s = spec.seconds + base.seconds
    res.wall_s = time.perf_counter() - t0
    res.usage = {"speculative": u1 - u0, "target alone": u2 - u1}
    return res


def fill_from_tap(res: Result, tap: Tap) -> None:
    rounds = [e.round for e in events_of(tap, "RoundDone")]
    done = events_of(tap, "BaselineDone")
    steps = done[0].steps if done else []
    res.rounds = rounds
    res.spec_shown, res.spec_bench = rates_of_rounds(rounds)
    res.base_shown, res.base_bench = rates_of_steps(steps)
    res.spec_tokens, res.base_tokens = sum(len(r.emitted) for r in rounds), len(steps)
    res.decode_s = sum(r.seconds for r in rounds) + sum(s.seconds for s in steps)
    res.usage = decode_usage(tap)


def run_api(pair, ids, args, taps: Taps) -> Result:
    from specviz.sampling import SamplingConfig
    from specviz.ui import api, worker

    res, t0 = Result("api", ""), time.perf_counter()
    job = worker.DecodeJob(pair, list(ids), args.k, SamplingConfig(temperature=0.0), args.max_new_tokens, args.seed,
                           compare=True)
    api.decode(job)
    res.wall_s = time.perf_counter() - t0
    fill_from_tap(res, taps.tap)
    return res


class PageDriver:
    """The page's Generate event in a Blocks app serving the loaded pair, driven as Gradio's queue drives it."""

    def __init__(self, pair, args):
        import gradio as gr
        from gradio.state_holder import SessionState

        from specviz.ui import build_app

        self.args = args
        self.demo = build_app(lambda d, t, progress: pair, live_updates_per_s=args.rate or None)
        # The English page's Generate: the second function named "generate" with the page's views as outputs
        # (the first, with one output, is the API's).
        self.fn = next(f for f in self.demo.fns.values() if f.fn.__name__ == "generate" and len(f.outputs) > 1)
        self.state = SessionState(self.demo)
        self.request = gr.Request(username=None, session_hash="page-vs-bench")
        self.n = 0
        try:
            import orjson
            self.encode = lambda data: orjson.dumps(data, default=str, option=orjson.OPT_SERIALIZE_NUMPY)
        except ImportError:  # pragma: no cover - gradio depends on orjson
            self.encode = lambda data: json.dumps(data, default=str).encode()

    def form(self, prompt: str, max_new_tokens: int) -> list:
        from specviz.ui import inputs

        values = dict(prompt=prompt, raw=False, k=self.args.k, adaptive=False, temperature=0.0, top_k=0, top_p=1.0,
                      max_new=max_new_tokens, seed=self.args.seed, pair=inputs.PACKAGED, draft_id="", target_id="",
                      compare_switch=True, drafter="model", compile="auto")
        return [values[name] for name in inputs.RUN_FORM]

    def run(self, prompt: str, max_new_tokens: int, taps: Taps) -> Result:
        return asyncio.run(self._run(prompt, max_new_tokens, taps))

    async def _run(self, prompt: str, max_new_tokens: int, taps: Taps) -> Result:
        res, t0 = Result("page", prompt), time.perf_counter()
        self.n += 1
        event_id = f"run-{self.n}"
        taps.tap = None
        iterator, first = None, True
        while first or iterator is not None:
            taps.waited = 0.0
            start = time.perf_counter()
            out = await self.demo.process_api(block_fn=self.fn, inputs=self.form(prompt, max_new_tokens) if first
                                              else [], state=self.state, request=self.request, iterator=iterator,
                                              session_hash="page-vs-bench", event_id=event_id)
            processed = time.perf_counter()
            blob = self.encode(out["data"])
            sent = time.perf_counter()
            first = False
            iterator = out["iterator"] if out["is_generating"] else None
            tap = taps.tap
            rounds = [(at, e) for at, e in (tap.arrived if tap else []) if type(e).__name__ == "RoundDone"]
            fn_s = float(out.get("duration") or 0.0)
            res.updates.append(Update(at=sent - t0, rounds=len(rounds), waited=taps.waited,
                                      build=max(0.0, fn_s - taps.waited), gradio=max(0.0, processed - start - fn_s),
                                      encode=sent - processed, nbytes=len(blob),
                                      age=(sent - rounds[-1][0]) if rounds else NAN))
        res.wall_s = time.perf_counter() - t0
        fill_from_tap(res, taps.tap)
        # What the page thread did while the decoder ran (its first and last updates come before and after).
        tap = taps.tap
        begin = tap.usage["start"].wall - t0 if "start" in tap.usage else 0.0
        end = tap.usage["Finished"].wall - t0 if "Finished" in tap.usage else res.wall_s
        res.render_s = sum(u.build + u.gradio + u.encode for u in res.updates
                           if begin <= u.at - (u.build + u.gradio + u.encode) <= end)
        return res


# ---------------------------------------------------------------- printing
def fmt(x: float, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def med(values) -> float:
    vals = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    return statistics.median(vals) if vals else NAN


def print_run(i: int, r: Result) -> None:
    shown = (f"shown {fmt(r.spec_shown)} / {fmt(r.base_shown)} tok/s = {fmt(r.speedup_shown)}×; "
             if r.mode != "bench" else "")
    render = f", render {fmt(r.render_s)} s in {len(r.updates)} updates" if r.mode == "page" else ""
    print(f"  p{i:02d} {r.mode:5s} spec {r.spec_tokens:3d} tok, target {r.base_tokens:3d} tok | {shown}"
          f"bench-count {fmt(r.spec_bench)} / {fmt(r.base_bench)} tok/s = {fmt(r.speedup_bench)}× | "
          f"decode {fmt(r.decode_s)} s{render}, wall {fmt(r.wall_s)} s", flush=True)


def print_summary(results: dict[str, list[Result]], args) -> None:
    n = len(results["bench"])
    print(f"\nMedians over {n} prompt(s); greedy, K = {args.k}, {args.max_new_tokens} new tokens, seed {args.seed}; "
          f"page updates at most {args.rate or 'unbounded'}/s; torch threads {args.torch_threads}; GIL switch "
          f"interval {sys.getswitchinterval() * 1000:.1f} ms")
    print(f"{'':34s}{'spec tok/s':>12s}{'target tok/s':>14s}{'speedup':>10s}")
    rows = {}
    for mode in MODES:
        rs = results[mode]
        rows[mode] = (med(r.spec_bench for r in rs), med(r.base_bench for r in rs), med(r.speedup_bench for r in rs))
        label = {"bench": "bench (specviz, then target)", "api": "api (worker, nothing drawn)",
                 "page": "page (event fn + Gradio)"}[mode]
        print(f"  {label:32s}{fmt(rows[mode][0]):>12s}{fmt(rows[mode][1]):>14s}{fmt(rows[mode][2]):>10s}×"
              "   (bench's count)")
    for mode in ("api", "page"):
        rs = results[mode]
        print(f"  {mode + ' as the page shows it':32s}{fmt(med(r.spec_shown for r in rs)):>12s}"
              f"{fmt(med(r.base_shown for r in rs)):>14s}{fmt(med(r.speedup_shown for r in rs)):>10s}×"
              "   (all rounds / steps)")
    print("Ratios (median over prompts of each prompt's ratio, bench's count):")
    for a, b in (("page", "bench"), ("api", "bench"), ("page", "api")):
        ra, rb = results[a], results[b]
        spec = med(x.spec_bench / y.spec_bench for x, y in zip(ra, rb))
        base = med(x.base_bench / y.base_bench for x, y in zip(ra, rb))
        sp = med(x.speedup_bench / y.speedup_bench for x, y in zip(ra, rb))
        print(f"  {a + ' / ' + b:32s}{fmt(spec, 3):>12s}{fmt(base, 3):>14s}{fmt(sp, 3):>10s}")
    page = results["page"]
    print(f"Page thread: {fmt(med(r.render_s for r in page))} s rendering per run while decoding (median), "
          f"{fmt(med(len(r.updates) for r in page), 0)} updates per run, "
          f"{fmt(med(u.build + u.gradio + u.encode for r in page for u in r.updates) * 1000, 1)} ms per update, "
          f"{fmt(med(u.nbytes for r in page for u in r.updates) / 1000, 1)} kB per update (medians).")
    print("Within 10 % means each ratio above is in [0.90, 1.10]; 'page / api' isolates the cost of drawing.")


def print_profile(i: int, page: Result, api: Result | None) -> None:
    print(f"  --- profile, prompt p{i:02d}: the page's updates (times in ms; age: newest round's wait to be sent)")
    print(f"  {'at s':>7s}{'rounds':>7s}{'waited':>8s}{'build':>8s}{'gradio':>8s}{'encode':>8s}{'kB':>8s}"
          f"{'age':>8s}")
    for u in page.updates:
        print(f"  {u.at:7.2f}{u.rounds:7d}{u.waited * 1000:8.1f}{u.build * 1000:8.1f}{u.gradio * 1000:8.1f}"
              f"{u.encode * 1000:8.1f}{u.nbytes / 1000:8.1f}{fmt(u.age * 1000, 0):>8s}")
    print("  the decode thread (wall s, own CPU s, blocked = wall - CPU, voluntary / involuntary switches):")
    for mode, r in (("page", page), ("api", api)):
        if r is None:
            continue
        for phase, u in r.usage.items():
            print(f"    {mode:5s} {phase:13s} wall {u.wall:6.2f}  cpu {u.cpu:6.2f}  blocked {u.wall - u.cpu:6.2f}  "
                  f"switches {u.voluntary:5d} / {u.involuntary:5d}")
    if api is not None and len(api.rounds) == len(page.rounds) and page.rounds:
        same = all(a.emitted == b.emitted for a, b in zip(api.rounds, page.rounds))
        d = med(p.draft_seconds / a.draft_seconds for p, a in zip(page.rounds, api.rounds) if a.draft_seconds > 0)
        v = med(p.verify_seconds / a.verify_seconds for p, a in zip(page.rounds, api.rounds) if a.verify_seconds > 0)
        print(f"  per round, page / api ({'the same rounds' if same else 'rounds differ!'}): draft {fmt(d, 3)}×, "
              f"verify {fmt(v, 3)}× (medians over {len(page.rounds)} rounds)")


# ---------------------------------------------------------------- main
def load(args):
    if args.pair == "tiny":
        from tests.browser.tiny_app import TinyPair

        return TinyPair(args.tiny_delay)
    from specviz.ui.session import default_pair_loader

    return default_pair_loader(None, None, lambda fraction, message: None)


def main(argv=None) -> int:
    from specviz.bench import default_prompts_file, load_prompts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=5, help="the first N prompts of the file (default 5)")
    p.add_argument("--prompts-file", default=str(default_prompts_file()),
                   help="JSONL of {\"prompt\", \"category\"} (default: the shared bench prompts when present, "
                        "else assets/prompts.jsonl)")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, default=None,
                   help="the page's updates per second while streaming (default: the app's own setting); "
                        "0 = one update per batch of rounds, as before issue 27")
    p.add_argument("--torch-threads", type=int, default=0, help="torch.set_num_threads (default 0: torch's choice)")
    p.add_argument("--switch-interval", type=float, default=None,
                   help="sys.setswitchinterval in ms (default: Python's, 5 ms)")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--profile", action="store_true", help="every update of the page and the decode thread's waits")
    p.add_argument("--pair", choices=("packaged", "tiny"), default="packaged",
                   help="tiny: the browser tests' tiny random pair (a smoke run of this script)")
    p.add_argument("--tiny-delay", type=float, default=0.0, help="with --pair tiny: seconds per target forward")
    p.add_argument("--no-warmup", action="store_true")
    args = p.parse_args(argv)
    if not 1 <= args.k <= 16 or not 1 <= args.max_new_tokens <= 512 or not 1 <= args.prompts <= 100:
        p.error("K must be 1-16, --max-new-tokens 1-512, --prompts 1-100")

    import torch

    from specviz.limits import APP_LIVE_UPDATES_PER_S

    if args.rate is None:
        args.rate = APP_LIVE_UPDATES_PER_S
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    args.torch_threads = torch.get_num_threads()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1000)
    prompts = load_prompts(args.prompts_file)[:args.prompts]
    print(f"page_vs_bench: {len(prompts)} prompt(s) of {args.prompts_file}; loading the {args.pair} pair ...",
          flush=True)
    pair = load(args)
    encoded = [pair.encode_chat(q.text) for q in prompts]
    driver = PageDriver(pair, args) if "page" in args.modes else None
    results: dict[str, list[Result]] = {m: [] for m in MODES}
    with Taps() as taps:
        if not args.no_warmup:   # the first run of each way pays one-time costs (the page: the pair's bare forwards)
            print("warm-up (untimed) ...", flush=True)
            short = max(4, min(16, args.max_new_tokens))
            if "bench" in args.modes:
                run_bench(pair, encoded[0][:], argparse.Namespace(**{**vars(args), "max_new_tokens": short}))
            if "api" in args.modes:
                run_api(pair, encoded[0], argparse.Namespace(**{**vars(args), "max_new_tokens": short}), taps)
            if driver is not None:
                driver.run(prompts[0].text, short, taps)
        print(f"each prompt: {' '.join(args.modes)} in an order rotating by one per prompt; per run: tokens, "
              "spec / target tok/s = speedup, decode and render seconds", flush=True)
        for i, (prompt, ids) in enumerate(zip(prompts, encoded)):
            order = args.modes[i % len(args.modes):] + args.modes[:i % len(args.modes)]
            done: dict[str, Result] = {}
            for mode in order:
                if mode == "bench":
                    r = run_bench(pair, ids, args)
                elif mode == "api":
                    r = run_api(pair, ids, args, taps)
                else:
                    r = driver.run(prompt.text, args.max_new_tokens, taps)
                r.prompt = prompt.id
                done[mode] = r
                results[mode].append(r)
                print_run(i, r)
            if args.profile and "page" in done:
                print_profile(i, done["page"], done.get("api"))
    if all(results[m] for m in MODES):
        print_summary(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
