"""The command line: `python -m specviz generate ...` and `python -m specviz bench ...`."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from .bench import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "agreement":
        from .agreement import main as agreement_main

        return agreement_main(argv[1:])
    from .cli import main as generate_main

    return generate_main(argv)


if __name__ == "__main__":
    sys.exit(main())
