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


# The category whose prompts the shared file has too few of: the assets add theirs to the default set.
EXTRA_CATEGORY = "code-edit"


def default_prompts(shared: Path, assets: Path) -> list[Prompt]:
    """The shared file's prompts plus the assets' code-edit prompts it lacks; the assets alone without it.

    The shared file is read-only and common to the project's machines; the
    code-edit prompts (outputs that repeat the prompt, where prompt lookup
    shines) live in assets/ and are appended (same text counted once).
    """
    if not shared.is_file():
        return load_prompts(assets)
    prompts = load_prompts(shared)
    seen_texts, seen_ids = {p.text for p in prompts}, {p.id for p in prompts}
    for p in load_prompts(assets):
        if p.category == EXTRA_CATEGORY and p.text not in seen_texts:
            if p.id in seen_ids:   # a positional id (p05) that the shared file already uses
                p = Prompt(f"{EXTRA_CATEGORY}-{p.id}", p.category, p.text)
            prompts.append(p)
            seen_texts.add(p.text)
            seen_ids.add(p.id)
    return prompts


def select_categories(prompts: list[Prompt], categories: list[str] | None) -> list[Prompt]:
    """The prompts of the given categories (all without); an unknown category is an error naming the known ones."""
    if not categories:
        return prompts
    known = sorted({p.category for p in prompts})
    unknown = [c for c in categories if c not in known]
    if unknown:
        raise BenchError(f"no prompts in categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                         f"the prompts have: {', '.join(known)}")
    return [p for p in prompts if p.category in categories]
