"""Structural checks over specviz/ (issue 19): module size, function size, no import cycle.

Read from the source with `ast`, nothing imported: no module over 400 lines except the word tables
(specviz/strings/), no function over 60 lines (from its `def` to its last line), and no cycle in the graph
of imports between specviz modules, counting imports inside functions (lazy ones) and resolving relative ones.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "specviz"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
WORD_TABLES = "specviz.strings"

# Known exceptions, each with its reason; none today.
ALLOWED_LONG_FUNCTIONS: set[str] = set()
ALLOWED_CYCLES: list[list[str]] = []


def modules() -> dict[str, Path]:
    """{dotted name: path} of every module of the package (a package is named by its __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node.end_lineno - node.lineno + 1
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The specviz modules `name` imports anywhere in its source (module level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:      # `from . import x`: the module x when there is one, else the package
                targets.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module)
    found = set()
    for target in targets:
        while target and target not in known:   # `import specviz.a.b` also runs specviz.a: count the deepest known
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imported(name, path, set(mods)) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_is_over_400_lines_but_the_word_tables():
    long = {name: n for name, path in modules().items()
            if not name.startswith(WORD_TABLES) and (n := len(path.read_text(encoding="utf-8").splitlines()))
            > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_is_over_60_lines():
    long = {f"{name}.{fn}": n for name, path in modules().items()
            for fn, n in functions(ast.parse(path.read_text(encoding="utf-8")))
            if n > MAX_FUNCTION_LINES and f"{name}.{fn}" not in ALLOWED_LONG_FUNCTIONS}
    assert long == {}


def test_no_import_cycle_lazy_imports_included():
    assert [c for c in cycles(import_graph()) if c not in ALLOWED_CYCLES] == []


def test_the_checks_see_what_they_look_for():
    """The graph resolves relative and lazy imports, and the cycle finder finds a cycle."""
    graph = import_graph()
    assert "specviz.ui.inputs" in graph["specviz.ui.tabs.sweep"]                  # from .. import inputs
    assert "specviz.trace.compare" in graph["specviz.ui.tabs.sweep"]                    # from ...compare import ...
    assert "specviz.models.loading" in graph["specviz.ui.session"]                     # inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert list(functions(ast.parse("class A:\n  def f(self):\n    def g():\n      pass\n    return g\n"))) == [
        ("A.f", 4), ("A.f.g", 2)]


# ---------------------------------------------------------------- test modules mirror the code they test
TESTS = Path(__file__).resolve().parent
SCRIPTS = PACKAGE.parent / "scripts"
# Suites about a promise that cuts across modules rather than one module, each with its reason.
CROSS_CUTTING = {
    "architecture": "the package's structure",
    "real_pair": "the packaged model pair end to end (slow, real weights)",
    "hostile_inputs": "every input of the page and the API against hostile values",
    "stop": "Stop across the decoders, the worker and the page",
}


def mirrored(test_name: str, code: set[str]) -> bool:
    """Whether tests/test_<name>.py names a module (specviz.a.b -> a_b) or a script, optionally + _<aspect>."""
    return any(test_name == name or test_name.startswith(name + "_") for name in code)


def code_names() -> set[str]:
    names = {dotted.removeprefix("specviz.").replace(".", "_") for dotted in modules() if dotted != "specviz"}
    return names | {path.stem for path in SCRIPTS.glob("*.py")}


def test_test_modules_mirror_the_code_modules_they_test():
    code = code_names()
    stray = [path.name for path in sorted(TESTS.glob("test_*.py"))
             if path.stem[5:] not in CROSS_CUTTING and not mirrored(path.stem[5:], code)]
    assert not stray, f"name these after the module they test (tests/test_<package>_<module>.py): {stray}"


def test_the_mirror_check_sees_a_stray_name():
    code = {"ui_inputs", "rule", "bench"}
    assert mirrored("rule", code) and mirrored("ui_inputs_hostile", code) and mirrored("bench_costs", code)
    assert not mirrored("statistical", code) and not mirrored("rules", code)
