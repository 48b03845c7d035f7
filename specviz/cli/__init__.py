"""The command line: `python -m specviz generate | bench | agreement | costs | prepare | export` (specviz/__main__.py).

    args.py       the shared argument parser (one-line errors, exit code 2) and range-checked types
    generate.py   generate: the decoder round by round in a terminal
    bench.py      bench: the benchmark's options; the measuring lives in specviz.bench
    agreement.py  agreement: how often greedy speculative output equals the target alone
    costs.py      costs: c, verify_cost and theoretical speedup of known architectures (random weights)
    prepare.py    prepare: convert the packaged pair into the model cache ahead of time
    export.py     export: a trace file as one HTML page that replays the run offline (specviz.viz.export)
"""
from .generate import round_line

__all__ = ["round_line"]
