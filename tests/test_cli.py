"""The command line answers bad arguments with one line and exit code 2, before loading any model."""
import subprocess
import sys

import pytest

from specviz.cli import round_line
from specviz.trace import Choice, DraftToken, Round


@pytest.mark.parametrize("args, says", [
    (["generate"], "--prompt"),
    (["generate", "--prompt", "  "], "--prompt is empty"),
    (["generate", "--prompt", "x", "--k", "0"], "--k must be in [1, 32]"),
    (["generate", "--prompt", "x", "--k", "four"], "--k must be a whole number"),
    (["generate", "--prompt", "x", "--temperature", "-1"], "--temperature"),
    (["generate", "--prompt", "x", "--top-p", "0"], "--top-p"),
    (["generate", "--prompt", "x", "--max-new-tokens", "100000"], "--max-new-tokens"),
    (["generate", "--prompt", "x", "--adaptive", "2"], "--adaptive"),
    (["generate", "--prompt", "x", "--draft", "bad id!!", "--target", "Qwen/Qwen2.5-1.5B"], "invalid model id"),
    (["bench", "--k", "0"], "K"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_clear_line(args, says):
    done = subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and says in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_round_line_marks_each_verdict():
    t = lambda i, ok: DraftToken(i, "x", 0.5, 0.4, 0.8, 0.9 if not ok else 0.1, ok, 0.5, 0.4)  # noqa: E731
    rnd = Round(index=2, drafted=[t(1, True), t(2, False), t(3, False)], rejected_at=1,
                correction=Choice(9, "y", 0.7), bonus=None, emitted=[1, 9], draft_seconds=0.1,
                verify_seconds=0.2)
    line = round_line(rnd, lambda ids: "".join(map(str, ids)))
    assert "round   3" in line and "[✓✗·]" in line and "+2 (correction)" in line and "'19'" in line
