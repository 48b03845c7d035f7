"""app.py, the file Spaces and the README run: what must happen before torch loads does, and what must not."""
import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"


def test_openmp_waits_as_libgomp_chooses():
    # OMP_WAIT_POLICY=PASSIVE (set here once, for a browser on the same cores) made every product wake its
    # threads: a target forward 61 -> 110 ms on a 2-core Zen 4 VM (docs/measurements.md, "One thread for the models").
    # The page's threads now spin between products as the bench's do: all model steps on one thread (ui/worker.py).
    text = APP.read_text(encoding="utf-8")
    assert "OMP_WAIT_POLICY" not in text and "GOMP_SPINCOUNT" not in text


def test_zero_gpu_is_imported_before_anything_that_loads_torch():
    body = ast.parse(APP.read_text(encoding="utf-8")).body
    spaces = [i for i, node in enumerate(body) if "import spaces" in ast.unparse(node)]
    loads = [i for i, node in enumerate(body) if isinstance(node, (ast.Import, ast.ImportFrom))
             and any(name.split(".")[0] in ("specviz", "torch", "gradio")
                     for name in ([a.name for a in node.names] if isinstance(node, ast.Import)
                                  else [node.module or ""]))]
    assert spaces and spaces[0] < min(loads)
