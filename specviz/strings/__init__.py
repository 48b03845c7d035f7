"""User-facing text, looked up by key: `t("status.ready")`, `t("status.round", n=3, tokens=12, total=64)`.

One module per language holds one dict, key -> text with `{placeholders}`
(`en.py` is the reference). A language is added by dropping in `xx.py` with a
`STRINGS` dict and naming it in `LANGUAGES`; a key it lacks, or a language code
nobody wrote, falls back to English, so a partial translation still runs.

No Gradio, no torch: `specviz.viz` and `specviz.ui` both sit on top of this.
Text may carry `**bold**` and `*italic*`; `specviz.viz.html.rich` turns those
into tags *after* escaping, so no string here is ever trusted as markup.

A count agrees with its noun through a plural placeholder, `{rounds:round|rounds}`:
the number followed by the singular form when it is 1, else the plural form
("1 round", "3 rounds"; "1 ronda", "3 rondas"). Both languages of this app put
only 1 in the singular; a language with other rules would extend `_singular`.
"""
from __future__ import annotations

import string
from importlib import import_module
from types import MappingProxyType
from typing import Mapping

DEFAULT_LANG = "en"
LANGUAGES = ("en", "es")    # module names in this package; the first is the app's root page

_TABLES: dict[str, Mapping[str, str]] = {}


def _singular(count) -> bool:
    """Whether a count takes the singular form: exactly one (an int, or a text such as "1")."""
    if isinstance(count, bool):
        return False
    if isinstance(count, int):
        return count == 1
    return str(count).strip() == "1"


class _PluralFormatter(string.Formatter):
    """str.format, plus the plural spec `{n:one|other}` that writes the count and the noun in agreement."""

    def format_field(self, value, format_spec: str):
        if "|" in format_spec:
            one, other = format_spec.split("|", 1)
            return f"{value} {one if _singular(value) else other}"
        return super().format_field(value, format_spec)


_FORMATTER = _PluralFormatter()


def fill(text: str, **values) -> str:
    """A template's placeholders filled (plural specs included); KeyError names a missing value."""
    return _FORMATTER.vformat(text, (), values)


def table(lang: str = DEFAULT_LANG) -> Mapping[str, str]:
    """The key -> text table of a language (read-only); an unknown language gives English."""
    lang = lang if lang in LANGUAGES else DEFAULT_LANG
    if lang not in _TABLES:
        _TABLES[lang] = MappingProxyType(dict(import_module(f"{__name__}.{lang}").STRINGS))
    return _TABLES[lang]


def template(key: str, lang: str = DEFAULT_LANG) -> str:
    """The raw text of `key` in `lang` (English where the language lacks it), placeholders unfilled."""
    text = table(lang).get(key)
    if text is None:
        text = table(DEFAULT_LANG).get(key)
    if text is None:
        raise KeyError(f"unknown string key {key!r} (add it to specviz/strings/{DEFAULT_LANG}.py)")
    return text


def placeholders(key_or_text: str, lang: str = DEFAULT_LANG) -> set[str]:
    """The placeholder names in a key's text (or in a text given directly, when it is not a key)."""
    text = template(key_or_text, lang) if key_or_text in table(DEFAULT_LANG) else key_or_text
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(text) if name}


def t(key: str, lang: str = DEFAULT_LANG, **values) -> str:
    """The text of `key` in `lang` with its placeholders filled; KeyError names a missing key or value."""
    text = template(key, lang)
    try:
        return fill(text, **values)
    except KeyError as e:
        raise KeyError(f"string {key!r} needs the value {e.args[0]!r} (it has {sorted(placeholders(key, lang))})") \
            from None


__all__ = ["DEFAULT_LANG", "LANGUAGES", "fill", "placeholders", "t", "table", "template"]
