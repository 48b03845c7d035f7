"""app.py, the file Spaces and the README run: what must happen before torch loads does."""
import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"


def test_idle_openmp_threads_sleep_is_set_before_anything_imports_torch():
    # libgomp reads OMP_WAIT_POLICY once, when torch loads (issue 27: docs/performance.md); set later, it does nothing.
    body = ast.parse(APP.read_text(encoding="utf-8")).body
    sets = [i for i, node in enumerate(body) if "OMP_WAIT_POLICY" in ast.unparse(node) and "setdefault" in ast.unparse(node)]
    imports = [i for i, node in enumerate(body) if isinstance(node, (ast.Import, ast.ImportFrom))
               and any(name.split(".")[0] in ("specviz", "torch", "spaces", "gradio")
                       for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]))]
    ifs = [i for i, node in enumerate(body) if isinstance(node, ast.If) and "import" in ast.unparse(node)]
    assert sets, "app.py no longer sets OMP_WAIT_POLICY"
    assert sets[0] < min(imports + ifs), "OMP_WAIT_POLICY must be set before the first import that loads torch"
    assert "PASSIVE" in ast.unparse(body[sets[0]])
