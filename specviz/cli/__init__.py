"""The command line: `python -m specviz generate | bench | agreement` (dispatched by specviz/__main__.py).

    args.py       the shared argument parser (one-line errors, exit code 2) and range-checked types
    generate.py   generate: the decoder round by round in a terminal
    bench.py      bench: the benchmark's options; the measuring lives in specviz.bench
    agreement.py  agreement: how often greedy speculative output equals the target alone
"""
from .generate import round_line

__all__ = ["round_line"]
