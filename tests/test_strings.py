"""The strings table: every key used exists, every key exists for a reason, placeholders agree everywhere."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specviz import strings
from specviz.strings import DEFAULT_LANG, LANGUAGES, placeholders, t, table, template

PACKAGE = Path(__file__).resolve().parents[1] / "specviz"
LOOKUPS = {"t", "rich"}          # the functions that take a strings key as their first argument


def _sources():
    """The modules that look text up (they import from specviz.strings), parsed."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if "strings" in path.relative_to(PACKAGE).parts:
            continue
        source = path.read_text(encoding="utf-8")
        if "strings import" in source:
            yield path, ast.parse(source)


def _lookups():
    """(path, key, keyword names or None when **values is passed) for every t("key", ...) / rich("key", ...)."""
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in LOOKUPS \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names = None if any(k.arg is None for k in node.keywords) else \
                    {k.arg for k in node.keywords if k.arg != "lang"}
                yield path, node.args[0].value, names


def _literals() -> set[str]:
    return {n.value for _, tree in _sources() for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_key_used_exists_with_the_values_it_needs():
    keys = table(DEFAULT_LANG)
    seen = 0
    for path, key, names in _lookups():
        seen += 1
        assert key in keys, f"{path.name}: unknown string key {key!r}"
        if names is not None:
            assert names == placeholders(key), f"{path.name}: {key!r} given {sorted(names)}, needs {sorted(placeholders(key))}"
    assert seen > 100


def test_no_key_is_unused():
    used = _literals()
    unused = sorted(k for k in table(DEFAULT_LANG) if k not in used)
    assert not unused, f"keys in en.py that no module uses: {unused}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_placeholders_agree_across_languages(lang):
    reference = table(DEFAULT_LANG)
    for key, text in table(lang).items():
        assert key in reference, f"{lang}: key {key!r} is not in {DEFAULT_LANG}.py"
        assert placeholders(text) == placeholders(reference[key]), (lang, key)


def test_every_language_has_every_key_with_the_same_placeholders():
    """A key or a {placeholder} missing in any language fails here (the fallback would hide it in the page)."""
    reference = table(DEFAULT_LANG)
    assert len(LANGUAGES) >= 2
    for lang in LANGUAGES:
        missing = sorted(set(reference) - set(table(lang)))
        assert not missing, f"{lang}.py lacks {missing}"
        for key, text in reference.items():
            assert placeholders(table(lang)[key]) == placeholders(text), (lang, key)
            t(key, lang, **{name: "x" for name in placeholders(text)})   # every text formats


def test_spanish_is_a_translation_not_a_copy():
    en, es = table("en"), table("es")
    same = [k for k in en if en[k] == es[k] and len(en[k]) > 12 and " " in en[k]]
    # Formulas and notation stay as they are; prose must be translated.
    assert all(any(s in en[k] for s in ("min(1", "p/q", "{", "Qwen", "·")) for k in same), same


def test_lookup_fills_placeholders_and_falls_back_to_english():
    assert t("status.round", n=3, tokens=12, total=64) == "Round 3 · 12 / 64 tokens"
    assert t("status.ready", lang="xx") == t("status.ready")            # unknown language: English
    assert placeholders("status.round") == {"n", "tokens", "total"}
    assert template("status.round").startswith("Round {n}")


def test_unknown_key_or_missing_value_is_a_clear_key_error():
    with pytest.raises(KeyError, match="unknown string key 'no.such_key'"):
        t("no.such_key")
    with pytest.raises(KeyError, match="needs the value 'tokens'"):
        t("status.round", n=1, total=2)


def test_table_is_read_only():
    with pytest.raises(TypeError):
        table()["status.ready"] = "x"          # type: ignore[index]
    assert strings.DEFAULT_LANG in LANGUAGES


def test_no_gradio_or_torch_below_the_ui():
    for name in ("strings/__init__.py", "strings/en.py", "strings/es.py", "compare.py", "viz/format.py", "viz/html.py",
                 "viz/charts.py", "viz/classroom.py", "classroom/steps.py", "classroom/whatif.py",
                 "classroom/lessons.py"):
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
        assert not mods & {"gradio", "torch", "transformers"}, (name, mods)
