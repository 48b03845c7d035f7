"""Tokens/s of one greedy run in the served app (via gradio_client) vs the CLI, same prompt, same settings.

    python scripts/app_vs_cli.py                     # K 4, 96 tokens, two runs each after a warm-up
    python scripts/app_vs_cli.py --k 3 --runs 3 --port 7903

Starts app.py on a port of its own, calls its /generate API once to load and warm up, then takes turns: the API, then
`python -m specviz generate` with the same settings; prints both rates and app/cli per turn.
"""
import argparse
import os
import re
import subprocess
import sys
import time

from gradio_client import Client

from specviz.limits import REPO_ROOT as ROOT

PROMPT = "Write a Python function that returns the n-th Fibonacci number using memoization."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--runs", type=int, default=2, help="turns of (app, cli) after the warm-up (default 2)")
    ap.add_argument("--port", type=int, default=7902, help="the port app.py is started on (default 7902)")
    args = ap.parse_args()

    env = dict(os.environ, GRADIO_SERVER_PORT=str(args.port), GRADIO_SERVER_NAME="127.0.0.1", PYTHONPATH=str(ROOT))
    app = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        client = None
        for _ in range(60):
            try:
                client = Client(f"http://127.0.0.1:{args.port}/", verbose=False)
                break
            except Exception:
                time.sleep(1)
        if client is None:
            sys.exit(f"app.py did not answer on port {args.port} within a minute")

        def app_run() -> float:
            # The API's /generate (named parameters, see specviz.ui.api.Api.generate): the same settings as the CLI's.
            out = client.predict(prompt=PROMPT, k=args.k, max_new_tokens=args.max_new_tokens, temperature=0.0, seed=0,
                                 drafter="model", compare=False, api_name="/generate")
            return float(out["metrics"]["tokens_per_s"])

        app_run()  # loads the models, warms up
        for _ in range(args.runs):
            a = app_run()
            cli = subprocess.run([sys.executable, "-m", "specviz", "generate", "--prompt", PROMPT, "--k", str(args.k),
                                  "--max-new-tokens", str(args.max_new_tokens)], env=env, cwd=ROOT,
                                 capture_output=True, text=True)
            b = float(re.search(r"([\d.]+) tokens/s", cli.stdout.splitlines()[-1]).group(1))
            print(f"app {a:.2f} tok/s   cli {b:.2f} tok/s   app/cli {a / b:.3f}", flush=True)
    finally:
        app.terminate()


if __name__ == "__main__":
    main()
