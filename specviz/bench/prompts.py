"""The benchmark's prompts: a JSONL file of {"prompt", "category", "id"} objects (or bare strings)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Prompt:
    id: str
    category: str
    text: str


class BenchError(Exception):
    """A problem the user can fix (bad file, bad value): reported in one line, exit code 2."""


def load_prompts(path: str | Path) -> list[Prompt]:
    """Every non-blank line as a Prompt; a missing id becomes p01, p02, ... and a missing category "uncategorized"."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BenchError(f"prompts file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"cannot read prompts file {path}: {e}") from None
    prompts = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise BenchError(f"{path}:{n}: not valid JSON ({e.msg})") from None
        if isinstance(obj, str):
            obj = {"prompt": obj}
        text = obj.get("prompt") if isinstance(obj, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise BenchError(f"{path}:{n}: expected an object with a non-empty \"prompt\" string")
        pid = str(obj.get("id") or f"p{len(prompts) + 1:02d}")
        prompts.append(Prompt(pid, str(obj.get("category") or "uncategorized"), text))
    if not prompts:
        raise BenchError(f"no prompts in {path}")
    return prompts
