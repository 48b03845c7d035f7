"""The errors a user can cause or fix, and the loader's progress words.

A message may be keyed, like `TraceFormatError`: `ModelLoadError(key="load.not_found", role=Role("draft"), ...)`
names a text in `specviz.strings`, rendered only when someone reads it: `str()` in English (logs, the command
line), `text(lang)` for a page. An unkeyed message (`ModelLoadError("...")`) is English only; a page in another
language shows a general sentence instead (`specviz.ui.inputs.error_message`). The word table is loaded only when a
sentence is rendered, so the decoder and the trace reader, which raise keyed errors, never load it.
"""
from __future__ import annotations

import functools


class Key(str):
    """A message value that is itself a strings key (e.g. "load.role.draft"): rendered in the message's language."""


_ROLES = {"draft": "load.role.draft", "target": "load.role.target"}


def role(name: str) -> Key:
    """The word for a model's role ("draft" or "target") as a key, so each language says it its own way."""
    return Key(_ROLES[name])


def render(key: str, values: dict, lang: str | None = None) -> str:
    """The text of `key` in `lang` (English by default), a `Key` value rendered in the same language."""
    from .strings import DEFAULT_LANG, t   # only a reader of the sentence needs the word table

    lang = lang or DEFAULT_LANG
    return t(key, lang, **{n: t(v, lang) if isinstance(v, Key) else v for n, v in values.items()})


class KeyedError(ValueError):
    """A bad input or file, said in the reader's language: `key` names the sentence in `specviz.strings`, `values`
    fill it; `str()` is the English sentence, `text(lang)` the page's."""

    def __init__(self, key: str, **values):
        super().__init__(key, values)
        self.key, self.values = key, values

    def __reduce__(self):   # the values are keywords, which the default pickling would pass positionally
        return functools.partial(type(self), self.key, **self.values), ()

    def text(self, lang: str | None = None) -> str:
        return render(self.key, self.values, lang)

    def __str__(self) -> str:
        return self.text()


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message is meant for the user, as is (in English unless keyed)."""

    def __init__(self, message: str = "", *, key: str | None = None, **values):
        super().__init__(message or key or "")
        self.key, self.values = key, values

    def __reduce__(self):   # keyword values would be passed positionally by the default pickling
        return _rebuild, (self.args[0] if self.key is None else "", self.key, self.values)

    def text(self, lang: str | None = None) -> str | None:
        """The sentence in `lang`; None for an unkeyed message in a language other than English."""
        if self.key is not None:
            return render(self.key, self.values, lang)
        return str(self.args[0]) if lang in (None, "en") else None

    def __str__(self) -> str:
        return self.text() or ""


class StepMessage(str):
    """A loader's progress message: the English text (what the command line prints) that knows its key, so a page
    can say it in its own language (`text(lang)`)."""

    def __new__(cls, key: str, **values):
        self = super().__new__(cls, render(key, values))
        self.key, self.values = key, values
        return self

    def text(self, lang: str | None = None) -> str:
        return render(self.key, self.values, lang)


def step(key: str, **values) -> StepMessage:
    return StepMessage(key, **values)


def step_text(message, lang: str) -> str:
    """A loader's progress message in `lang`: a `StepMessage`'s own text; another loader's plain message only on an
    English page (it is English), an ellipsis elsewhere."""
    if isinstance(message, StepMessage):
        return message.text(lang)
    return str(message) if lang == "en" else "…"


def _rebuild(message: str, key: str | None, values: dict) -> ModelLoadError:
    return ModelLoadError(message, key=key, **values)
