"""Structural checks over specviz/: module size, function size, no import cycle, layers that import downward.

Read from the source with `ast`, nothing imported: no module over 400 lines except the word tables
(specviz/strings/), no function over 60 lines (from its `def` to its last line), no function taking more than 8
parameters, no cycle in the graph of imports between specviz modules nor between its sub-packages, counting imports
inside functions (lazy ones) and resolving relative ones, and every sub-package importing only the layers below it.
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
    "spaces": "a Space built from the repository: its front matter, the torch it installs, what it asks of the quota",
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


# ---------------------------------------------------------------- the layers
# Every sub-package (and top-level module) has a layer, from the bottom up; a module imports its own package and
# packages of lower layers only, never one beside it or above it (static and lazy imports alike):
# - the words, the limits and the pure formulas read nothing of specviz; errors read the words;
# - the runtime runs forwards (caches, kernels, masks); it meets a tree only as depths and ancestry;
# - the models load weights onto the runtime; the engine (the algorithm) drafts and verifies on it, meeting a
#   model only as an object: neither imports the other;
# - the trace turns what a round decided into a `Round`; `specviz.generate` composes the engine's rounds with it;
# - the classroom teaches from records, the views draw them, the bench measures runs (and writes its report);
# - the command line and the page sit on top; the package itself (its public names) and `__main__` above them.
# Nothing outside specviz.ui imports Gradio (tests/test_strings.py's probe checks the pure layers at run time).
LAYERS: list[tuple[str, ...]] = [
    ("specviz.strings", "specviz.limits", "specviz.stats", "specviz.theory"),
    ("specviz.errors",),
    ("specviz.runtime",),
    ("specviz.models", "specviz.engine"),
    ("specviz.trace",),
    ("specviz.generate",),
    ("specviz.classroom",),
    ("specviz.viz",),
    ("specviz.bench",),
    ("specviz.cli", "specviz.ui"),
    ("specviz", "specviz.__main__"),
]
PAGE_PACKAGE = "specviz.ui"
PAGE_LIBRARIES = {"gradio"}
# (importer, imported) allowed across a layer rule, each with its reason; none today.
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def package_of(name: str) -> str:
    """The sub-package (or top-level module) a module belongs to: specviz.engine.rule -> specviz.engine."""
    return ".".join(name.split(".")[:2])


def layer_of(name: str, layers: list[tuple[str, ...]] = LAYERS) -> int:
    return next(i for i, tier in enumerate(layers) if package_of(name) in tier)


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between sub-packages (and top-level modules): one edge for any import across two."""
    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(package_of(name), set()).update(package_of(t) for t in targets if package_of(t) != package_of(name))
    return out


def layer_violations(graph: dict[str, set[str]], layers: list[tuple[str, ...]] = LAYERS) -> set[tuple[str, str]]:
    """(importer, imported) pairs where a module imports a package of its own layer or of a higher one."""
    return {(name, t) for name, targets in graph.items() for t in targets
            if package_of(t) != package_of(name) and layer_of(t, layers) >= layer_of(name, layers)} \
        - set(LAYER_EXCEPTIONS)


def test_every_package_has_a_layer():
    assert {package_of(name) for name in modules()} - {p for tier in LAYERS for p in tier} == set()


def test_no_package_import_cycle():
    assert cycles(package_graph(import_graph())) == []


def test_each_layer_imports_only_what_is_below_it():
    assert layer_violations(import_graph()) == set()


def test_the_layer_check_sees_a_forbidden_import_and_a_package_cycle():
    """The broken examples: each import below goes sideways or upwards; and two packages that import each other
    through modules that form no module-level cycle are a package cycle."""
    graph = {"specviz.engine.rule": {"specviz.models.loading", "specviz.runtime.decoding"},
             "specviz.engine.speculative": {"specviz.trace.recording"},
             "specviz.runtime.invariance": {"specviz.engine.tree"},
             "specviz.models.memory": {"specviz.bench.shapes"},
             "specviz.trace.recording": {"specviz.engine.rule"},
             "specviz.bench.suite": {"specviz.ui"},
             "specviz.ui.api": {"specviz.ui.run", "specviz.bench.suite"}}
    assert layer_violations(graph) == {("specviz.engine.rule", "specviz.models.loading"),
                                       ("specviz.engine.speculative", "specviz.trace.recording"),
                                       ("specviz.runtime.invariance", "specviz.engine.tree"),
                                       ("specviz.models.memory", "specviz.bench.shapes"),
                                       ("specviz.bench.suite", "specviz.ui")}
    two_ways = {"specviz.engine.speculative": {"specviz.trace.recording"}, "specviz.trace.recording": {"specviz.engine.rule"}}
    assert cycles(two_ways) == [] and cycles(package_graph(two_ways)) == [["specviz.engine", "specviz.trace"]]


def third_party(path: Path) -> set[str]:
    """The top-level names of every absolute import in the file (lazy ones included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}


def test_no_module_below_the_page_imports_gradio():
    assert {name for name, path in modules().items()
            if not within(name, PAGE_PACKAGE) and third_party(path) & PAGE_LIBRARIES} == set()


def test_the_layer_exceptions_are_still_needed():
    graph = import_graph()
    assert [pair for pair in LAYER_EXCEPTIONS if pair[1] not in graph.get(pair[0], set())] == []
    assert all(reason.strip() for reason in LAYER_EXCEPTIONS.values())


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
CLI_PENDING = "pending: the CLI's commands import their machinery on use; no cycle, nothing heavy deferred"
LAZY_IMPORTS = {
    ("specviz", "specviz.models.loading"):
        "specviz.load_pair reads the loader at call time: tests and the CLI stand in for models.loading.load_pair",
    ("specviz.__main__", "specviz.cli.generate"): CLI_PENDING,
    ("specviz.bench.llamacpp", "llama_cpp"): OPTIONAL + " (the llama.cpp baseline)",
    ("specviz.bench.llamacpp", "llama_cpp.llama_speculative"): OPTIONAL + " (the llama.cpp baseline)",
    ("specviz.models.devices", "psutil"): OPTIONAL + " (free memory is then unknown)",
    ("specviz.models.quant.q4a8", "ninja"): OPTIONAL + " (the build tool's wheel, only where PATH has no ninja)",
    ("specviz.bench.shapes", "transformers"): HEAVY,
    ("specviz.bench.suite", "tqdm.auto"): OPTIONAL + " (a progress bar on a terminal)",
    ("specviz.classroom.lab", "transformers"): HEAVY + " (the lab's tiny pair)",
    **{("specviz.classroom.race", m): PURE_CLASSROOM for m in (
        "specviz.engine.baseline", "specviz.engine.options", "specviz.engine.sampling", "specviz.generate")},
    ("specviz.engine.drafter_names", "specviz.engine.options"): PURE_CLASSROOM + " (the race names its drafters)",
    **{("specviz.cli.agreement", m): CLI_PENDING for m in (
        "specviz.engine.baseline", "specviz.generate", "specviz.models.loading",
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
        "specviz.bench.costs", "specviz.bench.shapes", "specviz.models.devices", "specviz.models.loading",
        "specviz.models.prepare", "torch")},
    **{("specviz.cli.generate", m): CLI_PENDING for m in (
        "specviz.engine.baseline", "specviz.generate", "specviz.models.loading", "specviz.runtime.decoding",
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
    ("specviz.models.quick_tokenizer", "transformers"): HEAVY + " (only when a GGUF's tokenizer is written, once)",
    ("specviz.models.gguf_loader", "accelerate"): HEAVY + " (the model built on the meta device)",
    ("specviz.models.gguf_loader", "gguf"): "the GGUF dequantizer, only for a layer that is not repacked",
    ("specviz.models.gguf_loader", "transformers"): HEAVY,
    ("specviz.models.gguf_loader", "transformers.initialization"): HEAVY + " (its switch for skipping weight init, v5)",
    ("specviz.models.gguf_loader", "transformers.modeling_utils"): HEAVY + " (the same switch where it was in 4.x)",
    ("specviz.models.gguf_pair", "transformers"): HEAVY,
    ("specviz.models.quant.q4a8", "torch.utils.cpp_extension"): COMPILER,
    ("specviz.models.quant.q4k", "gguf.quants"): "gguf's Q4_K scale unpacking, only when a GGUF tensor's scales are "
                                                 "read (the module is imported on every load)",
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
