"""A hostile walk of the page in headless Chromium: every input the page has, given hostile values, in English and
Spanish at 1366 and 390 px wide; the API's HTTP edge; Stop timed for each kind of work.

    python scripts/hostile_walk.py                 # the tiny test pair (tests/browser/tiny_app.py), ~10 minutes
    python scripts/hostile_walk.py --real-pair     # the packaged pair (app.py): a quiet machine, longer

For each input it records the page's answer and judges it: good is a sentence in the page's language; bad is a raw
error or "Error" toast without a sentence, an English sentence on the Spanish page, Python's words, a value run as
something else than typed (a silent change), no answer within 30 s, a script that ran (a dialog), or a traceback in
the server's log. It prints a table, then one summary line: inputs tried, good, bad by kind, Stop times (each must be
at most 2 s). Debian's Chromium (/usr/bin/chromium) through Python Playwright; no browser is downloaded.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STOP_LIMIT_S = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--real-pair", action="store_true", help="serve app.py (the packaged pair) instead of the tiny one")
    ap.add_argument("--only", default="", help="run only the cases whose area or text contains this (a quick look)")
    ap.add_argument("--no-stop", action="store_true", help="skip the Stop timings")
    ap.add_argument("--stops-only", action="store_true", help="only the Stop timings")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="specviz-walk-"))
    t_start = time.time()
    results = [] if args.stops_only else walk(args, tmp)
    stops = []
    if not args.no_stop and not args.only:   # on a slower server: each piece of work lasts long enough to be stopped
        stops = timed_stops(args.real_pair, tmp)
    return report(results, stops, time.time() - t_start)


def walk(args, tmp: Path) -> list:
    """Every hostile input, one page load each, on a server whose log is read after each one."""
    from playwright.sync_api import sync_playwright

    from tests.browser.walk_cases import CONFIGS, cases, field_specs
    from tests.browser.walker import Browser, Result, Server, judge, server_log
    from tests.test_hostile_inputs import ENGLISH, PYTHON

    server = Server(args.real_pair, tmp / "server.log")
    results = []
    try:
        server.wait_up()
        specs = field_specs()
        todo = [c for c in cases(specs, tmp) if args.only in f"{c[2]} {c[3]}"]
        with sync_playwright() as p:
            br = Browser(p, server.url)
            for lang, width, area, what, run in sorted(todo, key=lambda c: CONFIGS.index((c[0], c[1]))):
                r = Result(lang, width, area, what)
                n_dialogs, n_errors = len(br.dialogs), len(br.errors)
                said_in = lang
                try:
                    out = run(br, server, specs, lang, width)
                    kind, text, r.seconds, expect = out[:4]
                    said_in = out[4] if len(out) > 4 else lang   # a language switch answers in the other one
                except Exception as e:   # the walk itself could not act: say so in the row, go on
                    kind, text, expect = None, f"walk failed: {type(e).__name__}: {str(e)[:120]}", "refuse"
                    r.bad("walk could not act")
                judge(r, kind, text, said_in, expect, (PYTHON, ENGLISH), api=area == "api")
                if area == "language" and r.seconds > 10:   # the page left behind still held the queue
                    r.bad("left-behind work held the queue")
                if len(br.dialogs) > n_dialogs:
                    r.bad("a script ran")
                if len(br.errors) > n_errors:
                    r.bad("page error")
                time.sleep(0.3)   # the server's log may trail the answer
                server_log(r, server.new_log())
                results.append(r)
                print(f"{r.verdict:4} {lang} {width:4} {area:9} {what[:38]:38} {r.seconds:5.1f}s {','.join(r.kinds)}"
                      f" | {r.answer[:110]}", flush=True)
            br.close()
    finally:
        server.close()
    return results


def timed_stops(real_pair: bool, tmp: Path) -> list:
    from playwright.sync_api import sync_playwright

    from tests.browser.walk_stop import measure, stop_cases
    from tests.browser.walker import Browser, Server

    server = Server(real_pair, tmp / "server-stop.log", delay=0.1, position_delay=0.05)
    try:
        server.wait_up()
        with sync_playwright() as p:
            br = Browser(p, server.url)
            try:
                return measure(br, server, stop_cases(tmp))
            finally:
                br.close()
    finally:
        server.close()


def report(results, stops, seconds: float) -> int:
    from collections import Counter

    bad = Counter(k for r in results for k in r.kinds)
    good = sum(r.verdict == "good" for r in results)
    print("\nStop (click to the page saying it stopped):")
    for what, took, said in stops:
        flag = "ok " if took is not None and took <= STOP_LIMIT_S else "BAD"
        print(f"  {flag} {what:34} {'-' if took is None else f'{took:.2f} s':>8} | {said[:100]}")
    stop_txt = ", ".join(f"{w} {'—' if s is None else f'{s:.1f}'}" for w, s, _ in stops)
    print(f"\nSUMMARY: {len(results)} inputs tried, {good} good, {len(results) - good} bad"
          f" ({', '.join(f'{k}: {n}' for k, n in bad.most_common()) or 'none'}); Stop s: {stop_txt or 'not measured'};"
          f" {seconds / 60:.1f} min")
    slow = [w for w, s, _ in stops if s is None or s > STOP_LIMIT_S]
    return 1 if good < len(results) or slow else 0


if __name__ == "__main__":
    sys.exit(main())
