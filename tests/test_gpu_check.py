"""The GPU check script's smoke run (scripts/gpu_check.py --smoke): its logic on a CPU with tiny widths, so the
first GPU it meets runs a script that already ran. The alpha = 1 pair and the ZeroGPU-like calls (fresh processes,
graphs' buffers inside them; captured on a GPU)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_smoke_run_gives_every_figure_of_the_graphs_path(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--smoke", "--out", str(tmp_path),
                           "--pairs", "3", "--skip", "lossless,greedy", "--tokens", "12"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "gpu.json").read_text())
    pair = results["qwen2.5-1.5b->qwen2.5-1.5b"]
    assert "error" not in pair, pair
    assert set(pair["c"]) == {"off", "graphs"} and all(v > 0 for v in pair["c"].values())
    assert pair["tokens_per_s"]["target_graphs"] > 0 and pair["tokens_per_s"]["specviz_graphs_notrace"] > 0
    assert pair["warmup_seconds_first_call"]["specviz_graphs"] > 0      # measured apart from tokens/s
    assert "graphs_fallback" not in pair
    calls = results["zerogpu"]["calls"]
    assert len(calls) == 2 and all("error" not in c and c["capture_s"] > 0 and c["tokens_per_s"] > 0 for c in calls)
    assert results["lossless"] == "skipped: --skip"
    # ahead-of-time compilation against CUDA graphs: a GPU route, one line on a CPU
    assert results["aoti"].startswith("skipped: no CUDA device") and "\n" not in results["aoti"]
