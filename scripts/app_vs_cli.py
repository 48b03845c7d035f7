"""Tokens/s of one greedy run in the served app (via gradio_client) vs the CLI, same prompt, same settings."""
import os
import re
import subprocess
import sys
import time

from gradio_client import Client

from specviz.limits import REPO_ROOT as ROOT
PROMPT = "Write a Python function that returns the n-th Fibonacci number using memoization."
port = 7902
env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", PYTHONPATH=str(ROOT))
app = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(60):
        try:
            c = Client(f"http://127.0.0.1:{port}/", verbose=False); break
        except Exception:
            time.sleep(1)
    def app_run():
        # The API's /generate (named parameters, see specviz.ui.api.Api.generate): the same settings as the CLI's.
        out = c.predict(prompt=PROMPT, k=4, max_new_tokens=96, temperature=0.0, seed=0, drafter="model",
                        compare=False, api_name="/generate")
        return float(out["metrics"]["tokens_per_s"])
    app_run()  # loads models, warms up
    for i in range(2):
        a = app_run()
        cli = subprocess.run([sys.executable, "-m", "specviz", "generate", "--prompt", PROMPT, "--k", "4",
                              "--max-new-tokens", "96"], env=env, cwd=ROOT, capture_output=True, text=True)
        b = float(re.search(r"([\d.]+) tokens/s", cli.stdout.splitlines()[-1]).group(1))
        print(f"app {a:.2f} tok/s   cli {b:.2f} tok/s   app/cli {a/b:.3f}", flush=True)
finally:
    app.terminate()
