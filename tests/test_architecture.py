"""Structural checks over specviz/ (issue 19): module size, function size, no import cycle.

Read from the source with `ast`, nothing imported: no module over 400 lines except the word tables
(specviz/strings/), no function over 60 lines (from its `def` to its last line), no function taking more than 8
parameters (issue 28), and no cycle in the graph of imports between specviz modules, counting imports inside
functions (lazy ones) and resolving relative ones.
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


# ---------------------------------------------------------------- no function takes more than 8 parameters
# More than 8 is a group that wants a name: a frozen dataclass of what belongs together (engine.options.DecodeOptions
# is the pattern), or the rarely used ones folded into **kwargs where a library fixes the signature.
MAX_PARAMETERS = 8
# Known exceptions, each with its reason ({dotted name: reason}).
ALLOWED_LONG_SIGNATURES: dict[str, str] = {}


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> int:
    """Every parameter: positional (positional-only too), keyword-only, *args and **kwargs; not a method's `self`
    (or a classmethod's `cls`), which the caller never passes."""
    a = fn.args
    positional = a.posonlyargs + a.args
    count = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return count - 1 if method and positional and positional[0].arg in ("self", "cls") else count


def signatures(tree: ast.AST, prefix: str = "", in_class: bool = False):
    """(qualified name, parameters) of every function and method, nested ones included (as `functions`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", parameters(node, in_class)
            yield from signatures(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from signatures(node, f"{prefix}{node.name}.", in_class=True)
        else:
            yield from signatures(node, prefix, in_class)


def long_signatures() -> dict[str, int]:
    return {f"{name}.{fn}": n for name, path in modules().items()
            for fn, n in signatures(ast.parse(path.read_text(encoding="utf-8"))) if n > MAX_PARAMETERS}


def test_no_function_takes_more_than_8_parameters():
    assert {name: n for name, n in long_signatures().items() if name not in ALLOWED_LONG_SIGNATURES} == {}


def test_the_long_signature_exceptions_are_still_needed():
    assert set(ALLOWED_LONG_SIGNATURES) - set(long_signatures()) == set()   # one fixed is taken off the list
    assert all(reason.strip() for reason in ALLOWED_LONG_SIGNATURES.values())


def test_the_parameter_count_sees_every_kind():
    """Each kind counts once; `self` and `cls` do not; a nested function is counted on its own."""
    source = ("def f(a, b, /, c, *args, d, e=1, **kwargs):\n    pass\n"
              "class A:\n    def m(self, a, b, c, d, e, f, g, h):\n        def inner(x, *, y):\n            pass\n"
              "    @classmethod\n    def make(cls, a):\n        pass\n"
              "    async def fetch(self, *parts, **options):\n        pass\n")
    assert dict(signatures(ast.parse(source))) == {"f": 7, "A.m": 8, "A.m.inner": 2, "A.make": 1, "A.fetch": 2}
    # The broken example: nine, one of them keyword-only behind *args, is one too many.
    broken = "def g(a, b, c, d, e, *rest, f, g=0, **more):\n    pass\n"
    assert [name for name, n in signatures(ast.parse(broken)) if n > MAX_PARAMETERS] == ["g"]


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
    "isolation": "tests/isolated.py: the real-pair tests in processes of their own (CI's peak memory)",
    "app": "app.py, the entry point the README and Spaces run (not a module of the package)",
    "scripts": "every script in scripts/ answers --help and writes nothing (CI runs none of them whole)",
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


# ---------------------------------------------------------------- the layers (issue 28)
# What each layer may not import, by package prefix. Read from today's graph, from the bottom up:
# - the engine (the algorithm) imports the runtime (how forwards run) and the records (trace), never the models
#   (loading, precision: it meets a model only as an object, and its kernel path through runtime.state), nor
#   anything that draws, measures or teaches;
# - the runtime imports neither the models nor the records; it imports the engine only in its harness
#   (LAYER_EXCEPTIONS);
# - the records (trace) import the engine and the runtime (a recorder reads a round's tensors), never a page;
# - nothing outside specviz.ui imports specviz.ui, and nothing outside it imports Gradio (static, lazy imports
#   included; tests/test_strings.py's probe checks at run time that the pure layers do not reach it either).
ABOVE_THE_ENGINE = ("specviz.models", "specviz.ui", "specviz.viz", "specviz.bench", "specviz.classroom", "specviz.cli")
FORBIDDEN = {
    "specviz.engine": ABOVE_THE_ENGINE,
    "specviz.runtime": ABOVE_THE_ENGINE + ("specviz.engine", "specviz.trace"),
    "specviz.trace": ("specviz.models", "specviz.ui", "specviz.viz", "specviz.bench", "specviz.classroom", "specviz.cli"),
}
PAGE_PACKAGE = "specviz.ui"
PAGE_LIBRARIES = {"gradio"}
# (importer, imported) allowed across a layer rule, each with its reason.
LAYER_EXCEPTIONS = {
    ("specviz.runtime.invariance", "specviz.engine.tree"):
        "the row-invariance harness checks the engine's tree verify (its mask and positions) against one-row forwards",
}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs that break FORBIDDEN, or import the page from outside it."""
    bad = set()
    for name, targets in graph.items():
        refused = [p for layer, ps in FORBIDDEN.items() if within(name, layer) for p in ps]
        if not within(name, PAGE_PACKAGE):
            refused.append(PAGE_PACKAGE)
        bad |= {(name, t) for t in targets if any(within(t, p) for p in refused)}
    return bad - set(LAYER_EXCEPTIONS)


def third_party(path: Path) -> set[str]:
    """The top-level names of every absolute import in the file (lazy ones included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}


def test_each_layer_imports_only_what_is_below_it():
    assert layer_violations(import_graph()) == set()


def test_no_module_below_the_page_imports_gradio():
    assert {name for name, path in modules().items()
            if not within(name, PAGE_PACKAGE) and third_party(path) & PAGE_LIBRARIES} == set()


def test_the_layer_exceptions_are_still_needed():
    graph = import_graph()
    assert [pair for pair in LAYER_EXCEPTIONS if pair[1] not in graph.get(pair[0], set())] == []


def test_the_layer_check_sees_a_forbidden_import():
    graph = {"specviz.engine.rule": {"specviz.models.loading", "specviz.runtime.decoding"},
             "specviz.runtime.graphs": {"specviz.trace.records"},
             "specviz.trace.files": {"specviz.ui.inputs"},
             "specviz.bench.suite": {"specviz.ui"},
             "specviz.ui.api": {"specviz.ui.run", "specviz.bench.suite"},
             "specviz.runtime.invariance": {"specviz.engine.tree"}}
    assert layer_violations(graph) == {("specviz.engine.rule", "specviz.models.loading"),
                                       ("specviz.runtime.graphs", "specviz.trace.records"),
                                       ("specviz.trace.files", "specviz.ui.inputs"),
                                       ("specviz.bench.suite", "specviz.ui")}


def test_the_gradio_check_sees_a_lazy_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import json\n\ndef f():\n    from gradio import Blocks\n    import numpy.linalg\n")
    assert third_party(path) == {"json", "gradio", "numpy"}


# ---------------------------------------------------------------- no private name crosses a module
# (importer, "module:name") allowed, each with its reason; none today.
PRIVATE_EXCEPTIONS: dict[tuple[str, str], str] = {}


def private_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """"module:name" for every `_name` the module takes from another specviz module: by `from m import _x`, or by
    `m._x` on a specviz module bound by an import (dunders are Python's, not private)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, bound = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            module = (".".join(base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                      if node.level else node.module or "")
            for alias in node.names:
                if f"{module}.{alias.name}" in known:
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif module in known and _private(alias.name):
                    found.add(f"{module}:{alias.name}")
        elif isinstance(node, ast.Import):
            bound.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name in known})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and _private(node.attr)):
            found.add(f"{bound[node.value.id]}:{node.attr}")
    return found


def _private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def test_no_private_name_is_imported_across_modules():
    known = set(modules())
    found = {(name, p) for name, path in modules().items() for p in private_imports(name, path, known)}
    assert found - set(PRIVATE_EXCEPTIONS) == set()
    assert set(PRIVATE_EXCEPTIONS) - found == set()          # an exception no longer needed is taken off the list


def test_the_private_check_sees_both_forms(tmp_path):
    pkg = tmp_path / "specviz" / "pkg"
    pkg.mkdir(parents=True)
    path = pkg / "a.py"
    path.write_text("from .b import _hidden, shown\nfrom . import c as cc\nfrom .b import __version__\n"
                    "def f():\n    return cc._inner(), cc.public()\n")
    known = {"specviz.pkg", "specviz.pkg.a", "specviz.pkg.b", "specviz.pkg.c"}
    assert private_imports("specviz.pkg.a", path, known) == {"specviz.pkg.b:_hidden", "specviz.pkg.c:_inner"}


# ---------------------------------------------------------------- imports inside functions
# Each (module, what it imports inside a function) with its reason: it breaks a cycle, or defers an optional or
# heavy dependency. Anything else goes to the top of its module (a module read at call time, where tests stand in
# for one of its functions, is imported whole: `from . import memory`, then `memory.check_pair(...)`).
HEAVY = "defers a heavy library until a model is really loaded or converted"
OPTIONAL = "an optional dependency, absent where the feature is not used"
PURE_CLASSROOM = ("the classroom's logic is read without torch (tests/test_strings.py's guard: the page's checks and "
                  "views use it); the decoder is imported when a lane runs")
COMPILER = "the compiler's stack (dynamo, triton, the C++ toolchain) only when compiling is asked about"
# Not yet justified: no cycle, and nothing heavy deferred (importing any specviz module already loads torch through
# specviz/__init__.py). Kept until they are hoisted; the tests stand in for models.loading.load_pair at call time,
# so the CLI must then read it through the module.
CLI_PENDING = "pending (issue 28): the CLI's commands import their machinery on use; no cycle, nothing heavy deferred"
LAZY_IMPORTS = {
    ("specviz", "specviz.models.loading"):
        "specviz.load_pair reads the loader at call time: tests and the CLI stand in for models.loading.load_pair",
    ("specviz.__main__", "specviz.cli.generate"): CLI_PENDING,
    ("specviz.bench.llamacpp", "llama_cpp"): OPTIONAL + " (the llama.cpp baseline)",
    ("specviz.bench.llamacpp", "llama_cpp.llama_speculative"): OPTIONAL + " (the llama.cpp baseline)",
    ("specviz.bench.shapes", "psutil"): OPTIONAL + " (free memory is then unknown)",
    ("specviz.models.quant.q4a8", "ninja"): OPTIONAL + " (the build tool's wheel, only where PATH has no ninja)",
    ("specviz.bench.shapes", "transformers"): HEAVY,
    ("specviz.bench.suite", "tqdm.auto"): OPTIONAL + " (a progress bar on a terminal)",
    ("specviz.classroom.lab", "transformers"): HEAVY + " (the lab's tiny pair)",
    **{("specviz.classroom.race", m): PURE_CLASSROOM for m in (
        "specviz.engine.baseline", "specviz.engine.sampling", "specviz.engine.speculative")},
    **{("specviz.cli.agreement", m): CLI_PENDING for m in (
        "specviz.engine.baseline", "specviz.engine.speculative", "specviz.models.loading", "specviz.runtime.attention",
        "specviz.runtime.invariance", "specviz.strings", "specviz.viz.html")},
    **{("specviz.cli.args", m): CLI_PENDING for m in (
        "specviz.models.loading", "specviz.models.quant.kernels", "specviz.models.quant.weights",
        "specviz.runtime.forwards")},
    **{("specviz.cli.bench", m): CLI_PENDING for m in (
        "specviz.models.loading", "specviz.models.quant.huge_pages",
        "specviz.models.quant.q4a8", "specviz.models.quant.weights_cache")},
    ("specviz.cli.bench", "transformers"): HEAVY,
    ("specviz.cli.bench", "transformers.utils"): HEAVY,
    **{("specviz.cli.costs", m): CLI_PENDING for m in (
        "specviz.bench.costs", "specviz.bench.shapes", "specviz.models.loading", "torch")},
    **{("specviz.cli.generate", m): CLI_PENDING for m in (
        "specviz.engine.baseline", "specviz.engine.speculative", "specviz.models.loading", "specviz.runtime.decoding",
        "specviz.runtime.invariance", "specviz.strings", "specviz.viz.html")},
    ("specviz.cli.prepare", "specviz.models.loading"): CLI_PENDING,
    ("specviz.cli.prepare", "specviz.models.packaged"): CLI_PENDING,
    ("specviz.cli.prepare", "specviz.models.quant.q4a8"):
        "imports torch and may compile: only after the arguments were accepted and the pair is converted",
    ("specviz.errors", "specviz.strings"):
        "the records and the decoder stay below the words (tests/test_trace.py): their keyed errors load the table "
        "only when someone reads a sentence",
    ("specviz.runtime.zerogpu", "specviz.strings"):
        "the decoder stays below the words (tests/test_trace.py): the table loads only to refuse a bad slice size",
    ("specviz.models.loading", "transformers"): HEAVY,
    ("specviz.models.memory", "transformers"): HEAVY,
    ("specviz.models.gguf_file", "gguf"): "the GGUF reader, only the first time a file is seen (its index is kept)",
    ("specviz.models.gguf_file", "transformers"): HEAVY + " (a GGUF's config and tokenizer, written once)",
    ("specviz.models.gguf_file", "gguf.gguf_reader"): "the GGUF reader, only the first time a file is seen",
    ("specviz.models.gguf_file", "transformers.modeling_gguf_pytorch_utils"): HEAVY + " (its header reading, "
                                                                                    "stood in for while written)",
    ("specviz.models.gguf_loader", "accelerate"): HEAVY + " (the model built on the meta device)",
    ("specviz.models.gguf_loader", "gguf"): "the GGUF dequantizer, only for a layer that is not repacked",
    ("specviz.models.gguf_loader", "transformers"): HEAVY,
    ("specviz.models.gguf_pair", "transformers"): HEAVY,
    ("specviz.models.quant.q4a8", "torch.utils.cpp_extension"): COMPILER,
    **{("specviz.models.quant.q4k", m): "the GGUF reader, only while a packaged model is prepared (the module is "
       "imported on every load)" for m in ("gguf", "gguf.quants")},
    ("specviz.models.quant.weights_cache", "safetensors"): HEAVY,
    ("specviz.models.quant.weights_cache", "safetensors.torch"): HEAVY,
    ("specviz.models.sources", "huggingface_hub"): HEAVY + " (the Hub client, only for a Hub id)",
    ("specviz.models.sources", "huggingface_hub.errors"): HEAVY + " (the Hub client, only for a Hub id)",
    ("specviz.runtime.forwards", "torch._dynamo"): COMPILER,
    ("specviz.runtime.zerogpu", "torch._dynamo"): COMPILER,
    ("specviz.runtime.zerogpu", "torch.utils._triton"): COMPILER,
    ("specviz.ui.gpu_calls", "spaces"): OPTIONAL + " (ZeroGPU's package, on Hugging Face Spaces only)",
}


def lazy_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """What the module imports inside its functions: the deepest specviz module, or a library's dotted name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                module = (".".join(base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                          if node.level else node.module or "")
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
            else:
                continue
            for target in targets:
                inner = target
                while inner.startswith("specviz") and inner not in known:
                    inner = inner.rpartition(".")[0]
                found.add(inner or target)
    return found


def test_no_import_inside_a_function_unless_listed_with_its_reason():
    known = set(modules())
    found = {(name, t) for name, path in modules().items() for t in lazy_imports(name, path, known)}
    assert found - set(LAZY_IMPORTS) == set()
    assert set(LAZY_IMPORTS) - found == set()                # one no longer lazy is taken off the list
    assert all(reason.strip() for reason in LAZY_IMPORTS.values())


def test_the_lazy_import_check_sees_nested_and_relative_imports(tmp_path):
    pkg = tmp_path / "specviz" / "pkg"
    pkg.mkdir(parents=True)
    path = pkg / "a.py"
    path.write_text("import json\nfrom . import b\n\nclass C:\n    def m(self):\n        def inner():\n"
                    "            from .b import thing\n            import torch._dynamo\n        return inner\n")
    known = {"specviz.pkg", "specviz.pkg.a", "specviz.pkg.b"}
    assert lazy_imports("specviz.pkg.a", path, known) == {"specviz.pkg.b", "torch._dynamo"}


# ---------------------------------------------------------------- the C++ sources keep the modules' size limit
# The extension's sources (specviz/models/quant/csrc/) are read as text: no file over MAX_MODULE_LINES either, so
# that each holds one concern (the products' tiles per instruction set, their quantizer, their epilogue, their
# dispatch, the bindings).
CPP_SUFFIXES = (".cpp", ".h")


def test_no_cpp_source_is_over_400_lines():
    sources = [path for path in sorted(PACKAGE.rglob("*")) if path.suffix in CPP_SUFFIXES]
    assert sources   # the check sees the extension's files
    long = {str(path.relative_to(PACKAGE.parent)): n for path in sources
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
