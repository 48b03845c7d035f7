"""Prepared lessons: traces in assets/lessons/ listed by index.json, each with a title and description per language.

A lesson opens with no model loaded (it is a recorded trace), so a class on
phones or without a model pair starts at once. Every file is checked before it
is used: names are short slugs, files stay inside the lessons folder, sizes are
bounded, and traces go through the strict `Trace.from_json`. A bad file raises
`LessonError`, whose `key` and `values` name a message in the strings table.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..limits import APP_MAX_TRACE_BYTES, ASSETS
from ..strings import DEFAULT_LANG
from ..trace.records import Trace, TraceFormatError
from .state import StepState

LESSONS_DIR = ASSETS / "lessons"
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
MAX_INDEX_BYTES = 256 * 1024


class LessonError(ValueError):
    """A lesson that cannot be opened; `key` is a strings key, `values` its placeholders."""

    def __init__(self, key: str, **values):
        super().__init__(f"{key}: {values}")
        self.key, self.values = key, values


@dataclass(frozen=True)
class Lesson:
    name: str
    file: str
    start: int               # the round (1-based) the step mode opens at
    title: dict
    description: dict
    step: int | None = None  # the decision (1-based, counted from the trace's start) it opens at, when not a round's
                             # first: e.g. the rejection a lesson is named after; a link's ?step=N overrides it

    def opening(self, rounds) -> StepState:
        """Where the step mode opens: the lesson's own step, else the first decision of its start round."""
        if self.step is not None:
            return StepState.at_step(rounds, self.step)
        return StepState.opened(min(self.start, len(rounds)) - 1)

    def text(self, field: str, lang: str = DEFAULT_LANG) -> str:
        """The title or description in `lang`, English where the lesson lacks it."""
        values = self.title if field == "title" else self.description
        return str(values.get(lang) or values.get(DEFAULT_LANG) or self.name)


def _read(path: Path, limit: int) -> bytes:
    try:
        if path.stat().st_size > limit:
            raise LessonError("cls.lesson_too_big", name=path.name)
        return path.read_bytes()
    except OSError:
        raise LessonError("cls.lesson_missing", name=path.name) from None


def index(folder: Path = LESSONS_DIR) -> list[Lesson]:
    """The lessons of index.json, in order; LessonError if the index is unreadable or malformed."""
    raw = _read(folder / "index.json", MAX_INDEX_BYTES)
    try:
        data = json.loads(raw)
        out = []
        for e in data["lessons"]:
            name, file = str(e["name"]), str(e["file"])
            if not NAME.match(name) or not isinstance(e["title"], dict) or not isinstance(e["description"], dict):
                raise ValueError(name)
            step = max(1, int(e["step"])) if e.get("step") is not None else None
            out.append(Lesson(name, file, max(1, int(e.get("start", 1))), dict(e["title"]), dict(e["description"]),
                              step))
        return out
    except (ValueError, KeyError, TypeError) as e:
        raise LessonError("cls.lesson_index_bad", error=str(e)[:200]) from None


def find(name: str, folder: Path = LESSONS_DIR) -> Lesson:
    name = str(name or "")[:80]
    for lesson in index(folder):
        if lesson.name == name:
            return lesson
    raise LessonError("cls.lesson_unknown", name=name)


def load(name: str, folder: Path = LESSONS_DIR) -> tuple[Lesson, Trace]:
    """The lesson and its trace; LessonError for an unknown name, a path outside the folder or a bad trace."""
    lesson = find(name, folder)
    path = (folder / lesson.file).resolve()
    if path.parent != folder.resolve() or path.suffix != ".json":
        raise LessonError("cls.lesson_bad", name=lesson.name, error=lesson.file[:80])
    try:
        trace = Trace.from_json(_read(path, APP_MAX_TRACE_BYTES))
    except TraceFormatError as e:
        raise LessonError("cls.lesson_bad", name=lesson.name, error=str(e)[:300]) from None
    if not trace.rounds:
        raise LessonError("cls.lesson_bad", name=lesson.name, error="no rounds")
    return lesson, trace
