"""The command line: `python -m specviz generate | bench | agreement | costs | prepare | export ...` (see specviz/cli/)."""
from __future__ import annotations

import importlib
import sys

# command -> the module under specviz.cli whose main(argv) runs it. Each imports only what it needs,
# so argument errors answer before torch models load.
COMMANDS = {"bench": "bench", "agreement": "agreement", "costs": "costs", "prepare": "prepare", "export": "export"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        module = importlib.import_module(f"specviz.cli.{COMMANDS[argv[0]]}")
        return module.main(argv[1:])
    # "generate", and anything else: its parser names every command and reports the rest.
    from .cli.generate import main as generate_main

    return generate_main(argv)


if __name__ == "__main__":
    sys.exit(main())
