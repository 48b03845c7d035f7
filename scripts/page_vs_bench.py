"""Tokens/s of the page's own job against the bench's decoder: same pair, prompts and settings, interleaved.

    python scripts/page_vs_bench.py [--prompts 5] [--k 3] [--max-new-tokens 64] [--rate 4 0] [--profile]
                                    [--modes bench api page browser] [--torch-threads N]
                                    [--check [TOL]] [--screenshot PNG]

Each prompt runs every way, in an order that rotates from prompt to prompt (so drift on the machine hits them all
alike); each way runs the speculative decode, then the target alone, one after the other:

  bench    `specviz.bench.run_method("specviz")`, then `run_method("target")`: the bench's decoder, nothing else
           running (on the models' thread the page's worker uses, the only one that runs torch, as the main thread is in
           `python -m specviz bench`)
  api      the page's decode worker (`ui.worker`, what the `/generate` API runs) with nothing drawn
  page@R   the page's own Generate event function (`ui.tabs.generate.generate`: worker, `StreamView`, the
           comparison) driven through Gradio's own processing (`Blocks.process_api`: postprocessing and streaming
           diffs), each update JSON-encoded as the server would send it; no browser. R: its updates a second
           (`--rate`, one page run per value; 0 = one update per batch of rounds, as fast as they come)
  browser@R (only with --modes ... browser) the same page served by this process and drawn by headless Chromium

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

`--check [TOL]` is the "watching a run does not slow it" check as one run: the page drawn live (page@R and,
with --modes ... browser, Chromium) against the API's worker with nothing drawn, interleaved; it prints each ratio of
decode tokens/s (speculative and target alone, median over prompts of each prompt's ratio) with a verdict, and exits
1 when one falls outside 1 +- TOL (default 0.10). It adds the api way to --modes when missing.

The script's process runs as app.py does: every model step (loading, the bench's decoder, the warm-up) on the app's
one models' thread (`ui.worker.torch_thread`), never in the main thread, so one thread's OpenMP team exists, as in
the app and in `python -m specviz bench` (a second would make libgomp sleep between products: the worker's doc). With
browser, each run also prints the CPU seconds Chromium and Playwright's driver used during it.

Run it with the machine alone: on a shared machine its figures say nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import queue
import resource
import statistics
import sys
import threading
import time
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # tests.browser.tiny_app for --pair tiny

MODES = ("bench", "api", "page", "browser")
DEFAULT_MODES = ("bench", "api", "page")
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
    render_phases: dict = field(default_factory=dict)   # phase -> (page thread's seconds, the phase's seconds)
    displayed_speedup: float = NAN    # the speedup the browser showed (browser only)
    browser_cpu_s: float = NAN        # Chromium's and Playwright's CPU seconds during the run (browser only)

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

            worker.torch_thread.submit(body)   # where the page's own start puts it
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
def in_thread(fn, *a):
    """fn(*a) in a fresh thread, waited for (the page's event function, with an event loop of its own)."""
    out = {}

    def body():
        try:
            out["value"] = fn(*a)
        except BaseException as e:  # noqa: BLE001 - raised again in the caller
            out["error"] = e

    t = threading.Thread(target=body, name="page-event")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def run_bench(pair, ids, args) -> Result:
    """The bench's decoder on the models' thread, where the page's worker decodes too: one OpenMP team in the process,
    as in `python -m specviz bench`, whose main thread is its only one (see the module's doc)."""
    from specviz.ui.worker import torch_thread

    return torch_thread.run(_run_bench, pair, ids, args)


def _run_bench(pair, ids, args) -> Result:
    from specviz.bench import run_method
    from specviz.engine.options import DecodeOptions
    from specviz.engine.sampling import SamplingConfig

    res, t0 = Result("bench", ""), time.perf_counter()
    sampling = SamplingConfig(temperature=0.0)
    u0 = Usage.now()
    options = DecodeOptions(sampling=sampling, max_new_tokens=args.max_new_tokens, seed=args.seed)
    spec = run_method("specviz", pair.target, pair.draft, ids, args.k,
                      dataclasses.replace(options, tokenizer=pair.tokenizer))
    u1 = Usage.now()
    base = run_method("target", pair.target, pair.draft, ids, None, options)
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
    from specviz.engine.sampling import SamplingConfig
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

    def __init__(self, pair, args, rate: float):
        import gradio as gr
        from gradio.state_holder import SessionState

        from specviz.ui import build_app

        self.args = args
        self.rate = rate
        self.label = f"page@{rate:g}" if rate else "page@unbounded"
        self.demo = build_app(lambda d, t, progress: pair, live_updates_per_s=rate or None)
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
                      compare_switch=True, drafter="model", compile="auto", lookup_k=None)
        return [values[name] for name in inputs.RUN_FORM]

    def run(self, prompt: str, max_new_tokens: int, taps: Taps) -> Result:
        # In a thread of its own with its own event loop, as Gradio's server runs (and Playwright's sync API holds a
        # running loop in the main thread).
        return in_thread(lambda: asyncio.run(self._run(prompt, max_new_tokens, taps)))

    async def _run(self, prompt: str, max_new_tokens: int, taps: Taps) -> Result:
        res, t0 = Result(self.label, prompt), time.perf_counter()
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
        spec_end = tap.usage["SpecDone"].wall - t0 if "SpecDone" in tap.usage else end
        res.render_s = render_between(res.updates, begin, end)
        res.render_phases = {"speculative": (render_between(res.updates, begin, spec_end), spec_end - begin),
                             "target alone": (render_between(res.updates, spec_end, end), end - spec_end)}
        return res


def browser_cpu_seconds() -> float:
    """CPU seconds used so far by every Chromium and Playwright-driver process on this machine (from /proc)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if "chrom" in name or name == "node":
            total += (int(rest[11]) + int(rest[12])) / tick
    return total


def render_between(updates: list[Update], begin: float, end: float) -> float:
    """Seconds of the page thread's work on the updates it began between `begin` and `end` (run-relative)."""
    return sum(u.build + u.gradio + u.encode for u in updates
               if begin <= u.at - (u.build + u.gradio + u.encode) <= end)


class BrowserDriver:
    """The same page served by this process and drawn by Debian's Chromium through Playwright (headless, as the browser
    tests run it): what a user's browser adds on the same cores (Gradio's frontend, the drawing). The numbers come
    from the worker's own events (`Taps`), computed as the page computes them; the speedup the page displayed is
    read back and printed beside them."""

    shared: list = []      # [playwright, browser] once started

    def __init__(self, pair, args, rate: float):
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            sys.exit("page_vs_bench: --modes browser needs Python's playwright (pip install playwright; "
                     "apt-get install chromium)")
        from specviz.ui import PageSettings, build_app, launch_app
        from tests.browser.page import ARGS, CHROMIUM
        from tests.browser.tiny_app import free_port

        self.label = f"browser@{rate:g}" if rate else "browser@unbounded"
        self.demo = build_app(lambda d, t, progress: pair, live_updates_per_s=rate or None,
                              settings=PageSettings(k=args.k, max_new_tokens=args.max_new_tokens))
        port = free_port()
        launch_app(self.demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
        if not BrowserDriver.shared:   # one Playwright and one Chromium for every rate (a second would refuse)
            pw = sync_playwright().start()
            BrowserDriver.shared = [pw, pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)]
        self.page = BrowserDriver.shared[1].new_page(viewport={"width": 1440, "height": 1000})
        self.page.goto(f"http://127.0.0.1:{port}/?__theme=light")
        self.page.wait_for_selector("#sv-run", timeout=60_000)
        self.args = args

    def _number(self, elem_id: str, value) -> None:
        box = self.page.locator(f"#{elem_id} input[type=number]").first
        box.fill(str(value))
        box.press("Enter")
        box.blur()

    def run(self, prompt: str, max_new_tokens: int, taps: Taps) -> Result:
        res, t0, cpu0 = Result(self.label, prompt), time.perf_counter(), browser_cpu_seconds()
        taps.tap = None
        self.page.locator("#sv-prompt textarea").fill(prompt)
        self._number("sv-k", self.args.k)
        self._number("sv-max-new", max_new_tokens)
        self._number("sv-temp", 0)
        self._number("sv-seed", self.args.seed)
        # The previous run's final status is marked stale, so only this run's can match; the wait is the browser's
        # (no polling from this process, which shares the GIL with the decoder).
        self.page.evaluate("() => { const e = document.querySelector('#sv-status [data-kind]');"
                           " if (e) e.dataset.kind = 'stale'; }")
        self.page.click("#sv-run")
        # Polled four times a second: Playwright's default polls on every animation frame, which keeps Chromium
        # drawing 60 frames a second on the cores the decoder needs (a user's browser does no such thing).
        self.page.wait_for_function("() => document.querySelector('#sv-status [data-kind=ok], "
                                    "#sv-status [data-kind=error], #sv-status [data-kind=warn]') !== null",
                                    polling=250, timeout=600_000)
        res.wall_s = time.perf_counter() - t0
        res.browser_cpu_s = browser_cpu_seconds() - cpu0
        kind = self.page.get_attribute("#sv-status [data-kind]", "data-kind")
        if kind != "ok":
            print(f"  the page said: {self.page.locator('#sv-status').inner_text()}", flush=True)
        shown = self.page.locator("#sv-compare [data-speedup]")
        res.displayed_speedup = float(shown.first.get_attribute("data-speedup")) if shown.count() else NAN
        fill_from_tap(res, taps.tap)
        if self.args.screenshot:   # the README's picture: the page as this run left it, its figures printed beside
            self.page.screenshot(path=self.args.screenshot, full_page=True)
            print(f"  screenshot of this run ({prompt[:40]!r}..., shown {fmt(res.displayed_speedup)}x): "
                  f"{self.args.screenshot}", flush=True)
        return res

    def close(self) -> None:
        self.page.close()
        self.demo.close()

    @classmethod
    def close_all(cls) -> None:
        if cls.shared:
            pw, browser = cls.shared
            browser.close()
            pw.stop()
            cls.shared = []


# ---------------------------------------------------------------- printing
def fmt(x: float, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def med(values) -> float:
    vals = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    return statistics.median(vals) if vals else NAN


LABELS = {"bench": "bench (run_method: specviz, target)", "api": "api (the worker, nothing drawn)"}


def label_of(mode: str) -> str:
    if mode.startswith("browser"):
        return f"{mode} (Chromium)"
    return LABELS.get(mode, f"{mode} (event fn + Gradio)")


def print_run(i: int, r: Result) -> None:
    shown = (f"shown {fmt(r.spec_shown)} / {fmt(r.base_shown)} = {fmt(r.speedup_shown)}x; "
             if r.mode != "bench" else "")
    render = ""
    if r.render_phases:
        (rs, ss), (rt, st) = r.render_phases["speculative"], r.render_phases["target alone"]
        render = (f", drawing {fmt(rs)} s of {fmt(ss)} s (spec) and {fmt(rt)} s of {fmt(st)} s (target) in "
                  f"{len(r.updates)} updates")
    if not math.isnan(r.displayed_speedup):
        shown += f"the browser displayed {fmt(r.displayed_speedup, 3)}x; "
    if not math.isnan(r.browser_cpu_s):
        render += f", Chromium used {fmt(r.browser_cpu_s)} CPU s"
    print(f"  p{i:02d} {r.mode:15s} {r.spec_tokens:3d}+{r.base_tokens:3d} tok | {shown}"
          f"bench's count {fmt(r.spec_bench)} / {fmt(r.base_bench)} = {fmt(r.speedup_bench)}x | "
          f"decode {fmt(r.decode_s)} s{render}; wall {fmt(r.wall_s)} s", flush=True)


def print_summary(results: dict[str, list[Result]], args) -> None:
    n = len(next(iter(results.values())))
    print(f"\nMEDIANS over {n} prompt(s): greedy, K = {args.k}, {args.max_new_tokens} new tokens, seed {args.seed}; "
          f"torch threads {args.torch_threads}, OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY')}; GIL switch "
          f"interval {sys.getswitchinterval() * 1000:g} ms; every decode on the models' thread")
    print("tokens/s, decode only (prefill apart), each run's first round / first step left out as the bench does:")
    print(f"  {'':40s}{'spec tok/s':>11s}{'target tok/s':>13s}{'speedup':>9s}")
    for mode, rs in results.items():
        print(f"  {label_of(mode):40s}{fmt(med(r.spec_bench for r in rs)):>11s}"
              f"{fmt(med(r.base_bench for r in rs)):>13s}{fmt(med(r.speedup_bench for r in rs)):>8s}x")
    print("as the page shows them (every round / step counted):")
    for mode, rs in results.items():
        if mode != "bench":
            print(f"  {label_of(mode):40s}{fmt(med(r.spec_shown for r in rs)):>11s}"
                  f"{fmt(med(r.base_shown for r in rs)):>13s}{fmt(med(r.speedup_shown for r in rs)):>8s}x")
    print("RATIOS (median over prompts of each prompt's ratio; bench's count; within 10 % = 0.90-1.10):")
    pairs = [(m, "bench") for m in results if m != "bench"] + \
        [(m, "api") for m in results if m.startswith(("page", "browser"))]
    for a, b in pairs:
        if a not in results or b not in results:
            continue
        ra, rb = results[a], results[b]
        spec = med(x.spec_bench / y.spec_bench for x, y in zip(ra, rb))
        base = med(x.base_bench / y.base_bench for x, y in zip(ra, rb))
        sp = med(x.speedup_bench / y.speedup_bench for x, y in zip(ra, rb))
        print(f"  {a + ' / ' + b:40s}{fmt(spec, 3):>11s}{fmt(base, 3):>13s}{fmt(sp, 3):>9s}")
    for mode, rs in results.items():
        if not mode.startswith("page"):
            continue
        share = {ph: med(r.render_phases[ph][0] / r.render_phases[ph][1] for r in rs
                         if r.render_phases.get(ph, (0, 0))[1] > 0) for ph in ("speculative", "target alone")}
        per = [u.build + u.gradio + u.encode for r in rs for u in r.updates[2:-1]]   # streaming updates only
        print(f"  {mode}: the page thread drew {fmt(share['speculative'] * 100, 1)} % of the speculative run's "
              f"time and {fmt(share['target alone'] * 100, 1)} % of the target alone's; "
              f"{fmt(med(len(r.updates) for r in rs), 0)} updates a run, {fmt(med(per) * 1000, 1)} ms and "
              f"{fmt(med(u.nbytes for r in rs for u in r.updates[2:-1]) / 1000, 1)} kB per streamed update")
    print("'page / api' is the cost of drawing alone; 'api / bench' that of the worker thread and the page's "
          "settings (EOS honoured, prefill in chunks).")


def check(results: dict[str, list[Result]], tol: float) -> bool:
    """Whether the live page decodes as fast as the API's worker with nothing drawn (each ratio within 1 +- tol)."""
    ok = True
    print(f"CHECK: the live page's decode against the API's (nothing drawn), tokens/s ratios within 1 +- {tol:g}:")
    api = results["api"]
    for mode, rs in results.items():
        if not mode.startswith(("page", "browser")):
            continue
        for part, of in (("speculative", lambda r: r.spec_bench), ("target alone", lambda r: r.base_bench)):
            ratio = med(of(x) / of(y) for x, y in zip(rs, api) if of(y) > 0)
            good = not math.isnan(ratio) and abs(ratio - 1) <= tol
            ok = ok and good
            print(f"  {mode + ' / api':24s}{part:14s}{fmt(ratio, 3):>7s}  {'ok' if good else 'FAILED'}")
    print(f"CHECK {'passed' if ok else 'FAILED'}")
    return ok


def print_profile(i: int, page: Result, api: Result | None) -> None:
    print(f"  --- profile p{i:02d}, {page.mode}: each update (ms; waited: asleep or waiting for events inside the "
          "call; age: its newest round's time in the queue)")
    print(f"  {'at s':>7s}{'rounds':>7s}{'waited':>8s}{'build':>8s}{'gradio':>8s}{'encode':>8s}{'kB':>8s}"
          f"{'age':>8s}")
    for u in page.updates:
        print(f"  {u.at:7.2f}{u.rounds:7d}{u.waited * 1000:8.1f}{u.build * 1000:8.1f}{u.gradio * 1000:8.1f}"
              f"{u.encode * 1000:8.1f}{u.nbytes / 1000:8.1f}{fmt(u.age * 1000, 0):>8s}")
    print("  the decode thread: wall s, its own CPU s, blocked = wall - CPU (the GIL, locks, sleeps), voluntary / "
          "involuntary context switches (blocked / preempted):")
    for r in (page, api):
        if r is None:
            continue
        for phase, u in r.usage.items():
            print(f"    {r.mode:15s} {phase:13s} wall {u.wall:6.2f}  cpu {u.cpu:6.2f}  blocked {u.wall - u.cpu:6.2f}  "
                  f"switches {u.voluntary:5d} / {u.involuntary:5d}")
    if api is not None and len(api.rounds) == len(page.rounds) and page.rounds:
        same = all(a.emitted == b.emitted for a, b in zip(api.rounds, page.rounds))
        d = med(p.draft_seconds / a.draft_seconds for p, a in zip(page.rounds, api.rounds) if a.draft_seconds > 0)
        v = med(p.verify_seconds / a.verify_seconds for p, a in zip(page.rounds, api.rounds) if a.verify_seconds > 0)
        print(f"  per round, {page.mode} / api ({'the same rounds' if same else 'ROUNDS DIFFER'}): draft {fmt(d, 3)}x, "
              f"verify {fmt(v, 3)}x (medians over {len(page.rounds)} rounds)")


# ---------------------------------------------------------------- main
def load(args, on_models_thread: bool = True):
    if getattr(args, "pair", "packaged") == "tiny":
        from tests.browser.tiny_app import TinyPair

        return TinyPair(args.tiny_delay)
    from specviz.ui.session import default_pair_loader

    from specviz.ui.worker import torch_thread

    quiet = (None, None, lambda fraction, message: None)
    return torch_thread.run(default_pair_loader, *quiet) if on_models_thread else default_pair_loader(*quiet)


def prompts_and_pair(args, name: str, on_models_thread: bool = True) -> tuple[list, object, list[list[int]]]:
    """(the first --prompts prompts of --prompts-file, the pair, each prompt's chat-encoded ids): the set-up this
    script shares with scripts/thread_vs_main.py (which loads in its main thread: on the models' thread, that
    thread's OpenMP team would throttle its main-thread way)."""
    from specviz.bench import load_prompts

    prompts = load_prompts(args.prompts_file)[:args.prompts]
    print(f"{name}: {len(prompts)} prompt(s) of {args.prompts_file}; loading the {getattr(args, 'pair', 'packaged')} "
          "pair ...", flush=True)
    pair = load(args, on_models_thread)
    return prompts, pair, [pair.encode_chat(q.text) for q in prompts]


def run_arguments(doc: str):
    """The parser with the arguments both scripts take: the prompts, K, the budget, the seed."""
    from specviz.bench import default_prompts_file

    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    p.add_argument("--prompts", type=int, default=5, help="the first N prompts of the file (default 5)")
    p.add_argument("--prompts-file", default=str(default_prompts_file()),
                   help="JSONL of {\"prompt\", \"category\"} (default: the shared bench prompts when present, "
                        "else assets/prompts.jsonl)")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    return p


def check_sizes(p, args) -> None:
    if not 1 <= args.k <= 16 or not 1 <= args.max_new_tokens <= 512 or not 1 <= args.prompts <= 100:
        p.error("K must be 1-16, --max-new-tokens 1-512, --prompts 1-100")


def parse(argv):
    p = run_arguments(__doc__)
    p.add_argument("--rate", type=float, nargs="+", default=None,
                   help="the page's updates per second while a run streams, one page run per value (default: the "
                        "app's own setting); 0 = one update per batch of rounds, as fast as they come")
    p.add_argument("--torch-threads", type=int, default=0, help="torch.set_num_threads (default 0: torch's choice)")
    p.add_argument("--switch-interval", type=float, default=None,
                   help="sys.setswitchinterval, in ms (default: Python's 5 ms)")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(DEFAULT_MODES),
                   help="the ways to run (default: bench api page); browser: the page in headless Chromium, served by "
                        "this process (needs playwright and /usr/bin/chromium)")
    p.add_argument("--profile", action="store_true", help="every update of the page and the decode thread's waits")
    p.add_argument("--pair", choices=("packaged", "tiny"), default="packaged",
                   help="tiny: the browser tests' tiny random pair (a smoke run of this script)")
    p.add_argument("--tiny-delay", type=float, default=0.0, help="with --pair tiny: seconds per target forward")
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--screenshot", default=None, metavar="PNG",
                   help="with --modes ... browser: save the page after each browser run to PNG (the last run's stays)")
    p.add_argument("--check", type=float, nargs="?", const=0.10, default=None, metavar="TOL",
                   help="the live page against the API in one run: exit 1 unless every page / api and browser / api "
                        "ratio of decode tokens/s is within 1 +- TOL (default 0.10)")
    args = p.parse_args(argv)
    if args.check is not None:
        if not 0 < args.check < 1:
            p.error("--check's tolerance must be between 0 and 1")
        if "api" not in args.modes:
            args.modes = ["api"] + list(args.modes)
        if not any(m in args.modes for m in ("page", "browser")):
            p.error("--check needs page or browser in --modes")
    if args.screenshot and "browser" not in args.modes:
        p.error("--screenshot needs browser in --modes")
    check_sizes(p, args)
    if any(r < 0 or r > 100 for r in args.rate or []):
        p.error("--rate must be 0-100 updates a second")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    import torch

    from specviz.limits import APP_LIVE_UPDATES_PER_S

    rates = args.rate if args.rate is not None else [APP_LIVE_UPDATES_PER_S]
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    args.torch_threads = torch.get_num_threads()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1000)
    prompts, pair, encoded = prompts_and_pair(args, "page_vs_bench")
    drivers = {d.label: d for d in (PageDriver(pair, args, r) for r in rates)} if "page" in args.modes else {}
    if "browser" in args.modes:
        drivers.update({d.label: d for d in (BrowserDriver(pair, args, r) for r in rates)})
    ways = [m for m in args.modes if m not in ("page", "browser")] + list(drivers)
    results: dict[str, list[Result]] = {w: [] for w in ways}

    def run(way: str, prompt, ids, a) -> Result:
        if way == "bench":
            return run_bench(pair, ids, a)
        if way == "api":
            return run_api(pair, ids, a, taps)
        return drivers[way].run(prompt.text, a.max_new_tokens, taps)

    with Taps() as taps:
        if not args.no_warmup:   # the first run of each way pays one-time costs (the page: the pair's bare forwards)
            print("warm-up (untimed) ...", flush=True)
            short = argparse.Namespace(**{**vars(args), "max_new_tokens": max(4, min(16, args.max_new_tokens))})
            for way in ways:
                run(way, prompts[0], encoded[0], short)
        print(f"each prompt runs: {', '.join(ways)} (the order rotates by one per prompt); each run: speculative, "
              "then the target alone.\nper run: tokens (spec+target), spec / target tok/s = speedup, decode seconds, "
              "the page thread's drawing seconds during each part", flush=True)
        for i, (prompt, ids) in enumerate(zip(prompts, encoded)):
            order = ways[i % len(ways):] + ways[:i % len(ways)]
            done: dict[str, Result] = {}
            for way in order:
                r = run(way, prompt, ids, args)
                r.prompt = prompt.id
                done[way] = r
                results[way].append(r)
                print_run(i, r)
            if args.profile:
                for way in drivers:
                    if way.startswith("page"):
                        print_profile(i, done[way], done.get("api"))
    for d in drivers.values():
        if isinstance(d, BrowserDriver):
            d.close()
    BrowserDriver.close_all()
    print_summary(results, args)
    if args.check is not None:
        return 0 if check(results, args.check) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
