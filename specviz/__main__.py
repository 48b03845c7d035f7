"""The command line: `python -m specviz generate | bench | agreement ...` (see specviz/cli/)."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Each command imports only what it needs, so argument errors answer before torch models load.
    if argv and argv[0] == "bench":
        from .cli.bench import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "agreement":
        from .cli.agreement import main as agreement_main

        return agreement_main(argv[1:])
    # "generate", and anything else: its parser names the valid commands and reports the rest.
    from .cli.generate import main as generate_main

    return generate_main(argv)


if __name__ == "__main__":
    sys.exit(main())
