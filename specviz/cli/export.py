"""`python -m specviz export TRACE.json -o run.html [--lang es]`: a trace as one HTML page that replays it offline.

The page (specviz.viz.export) needs no server, no model and no network: a teacher copies one file to a class.
A trace that cannot be used (missing, over the page's 20 MB upload limit, malformed, too many rounds) is refused in
one line, as the page refuses it, with exit code 1; a bad argument gets argparse's one line and exit code 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..strings import LANGUAGES
from ..trace.files import TraceFormatError
from ..viz.export import read_trace, write_html
from .args import Parser

PREFIX = "specviz export"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m specviz export", error_prefix=PREFIX,
               description="Write a trace file (saved by the app's download or `generate --json`) as one "
                           "self-contained HTML page that replays the run round by round in any browser, offline.")
    p.add_argument("trace", help="the trace file (.json)")
    p.add_argument("-o", "--output", default=None, help="the page to write (default: the trace's name with .html)")
    p.add_argument("--lang", default="en", choices=LANGUAGES, help="the page's language (default: en)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Returns the exit code: 0 written, 1 the trace or the page's file could not be used, 2 a bad argument."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)
    source = Path(args.trace)
    out = Path(args.output) if args.output else source.with_suffix(".html")
    if out.resolve() == source.resolve():
        return _refuse(f"the page would overwrite its own trace {source}: name another file with -o")
    try:
        trace = read_trace(source)
    except TraceFormatError as e:
        return _refuse(f"{source} cannot be exported: {e.text(args.lang)}")
    except OSError as e:
        return _refuse(f"{source} cannot be read: {e.strerror or 'the file could not be read'}")
    try:
        write_html(trace, out, args.lang)
    except TraceFormatError as e:   # a valid trace too long for one page
        return _refuse(f"{source} cannot be exported: {e.text(args.lang)}")
    except OSError as e:
        return _refuse(f"{out} cannot be written: {e.strerror or 'the file could not be written'}")
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} KB, {len(trace.rounds)} rounds, {args.lang}): "
          "open it in any browser; it needs no server and no network")
    return 0


def _refuse(sentence: str) -> int:
    print(f"{PREFIX}: error: {sentence}", file=sys.stderr)
    return 1
