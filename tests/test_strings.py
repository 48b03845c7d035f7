"""The strings table: every key used exists, every key exists for a reason, placeholders agree everywhere."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from specviz import strings
from specviz.strings import DEFAULT_LANG, LANGUAGES, placeholders, t, table, template

PACKAGE = Path(__file__).resolve().parents[1] / "specviz"
LOOKUPS = {"t", "rich", "step"}  # the functions that take a strings key as their first argument


def _sources():
    """The modules that look text up (they import from specviz.strings, or name keys for specviz.errors), parsed."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if "strings" in path.relative_to(PACKAGE).parts:
            continue
        source = path.read_text(encoding="utf-8")
        if "strings import" in source or "errors import" in source:
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


# ---------------------------------------------------------------- what may import Gradio and torch
PAGE_AND_MODEL = {"gradio", "torch", "transformers"}
# The words, the drawing, the classroom's logic and the theory are read and tested without a model or a page.
# classroom/lab.py and lab_compare.py are left out on purpose: the lab samples through the real rule, in torch.
LAB_TORCH = ("lab.py", "lab_compare.py")
PURE = sorted([*PACKAGE.glob("strings/*.py"), *PACKAGE.glob("viz/*.py"),
               *(p for p in PACKAGE.glob("classroom/*.py") if p.name not in LAB_TORCH),
               *(PACKAGE / name for name in ("trace/compare.py", "theory.py", "stats.py", "limits.py", "errors.py"))])
# The page's input checks are tested without a page, but they build the decoder's own types (torch).
NO_PAGE = [PACKAGE / "ui" / "inputs.py"]
GUARDED = [(path, PAGE_AND_MODEL) for path in PURE] + [(path, {"gradio"}) for path in NO_PAGE]

# Run in a fresh interpreter: imports `name` with `refused` blocked (and recorded, even where caught) and
# prints what was tried. The packages above `name` are made bare, so only the module's own import chain
# counts: specviz/__init__.py imports the decoder (the public API) and ui/__init__.py the app.
PROBE = """
import importlib, os, sys, types
refused, name, root = set(sys.argv[1].split(",")), sys.argv[2], sys.argv[3]
tried = []
class Refuse:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in refused:
            tried.append(fullname)
            raise ImportError(fullname + " is refused here")
sys.meta_path.insert(0, Refuse())
parts = name.split(".")
for i in range(1, len(parts)):
    bare = types.ModuleType(".".join(parts[:i]))
    bare.__path__ = [os.path.join(root, *parts[:i])]
    sys.modules[bare.__name__] = bare
try:
    importlib.import_module(name)
except ImportError:
    if not tried:
        raise
print(" ".join(tried))
"""


def imports_tried(root: Path, name: str, refused: set[str]) -> list[str]:
    """The refused modules that importing `name` (a module under `root`) reaches for, in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", PROBE, ",".join(sorted(refused)), name, str(root)],
                       capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_guard_covers_the_pure_layers():
    names = {_module_name(path) for path, _ in GUARDED}
    assert {"specviz.viz.pays", "specviz.viz.report", "specviz.ui.inputs", "specviz.classroom.steps",
            "specviz.strings.en", "specviz.theory"} <= names
    assert not {"specviz.classroom.lab", "specviz.classroom.lab_compare"} & names


def test_the_guard_sees_an_import_through_another_module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import json\n")
    (pkg / "heavy.py").write_text("try:\n    import torch\nexcept ImportError:\n    torch = None\n")
    (pkg / "light.py").write_text("from . import heavy\n")
    (pkg / "clean.py").write_text("import json\n")
    assert imports_tried(tmp_path, "pkg.light", PAGE_AND_MODEL) == ["torch"]
    assert imports_tried(tmp_path, "pkg.clean", PAGE_AND_MODEL) == []


@pytest.mark.parametrize("path,refused", GUARDED, ids=[_module_name(path) for path, _ in GUARDED])
def test_no_gradio_or_torch_below_the_ui(path, refused):
    name = path.relative_to(PACKAGE).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    assert not mods & refused, (name, mods)                      # lazy imports too, which the probe cannot see
    assert not imports_tried(PACKAGE.parent, _module_name(path), refused), name


def _spanish_texts():
    """Every Spanish text a visitor reads: the strings table, the examples' labels, the lessons' names and notes."""
    import json

    assets = PACKAGE.parent / "assets"
    yield from table("es").items()
    for i, row in enumerate(json.loads((assets / "examples.es.json").read_text(encoding="utf-8"))):
        yield f"examples.es.json[{i}]", row.get("label", "")
    for lesson in json.loads((assets / "lessons" / "index.json").read_text(encoding="utf-8"))["lessons"]:
        for field, value in lesson.items():
            if isinstance(value, dict) and "es" in value:
                yield f"lessons/{lesson.get('name')}.{field}", value["es"]


def test_spanish_says_voraz_not_greedy():
    """Spanish sentences name greedy decoding in Spanish ("voraz"); the English word stays only in keys."""
    left = [key for key, text in _spanish_texts() if "greedy" in str(text).lower()]
    assert not left, left
