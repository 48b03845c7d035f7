"""The specviz app on tiny random models, for browser tests and screenshots.

`python tests/browser/tiny_app.py [--port 7861] [--delay 0.03]` serves it; the
browser tests call `serve()` in-process. The fake tokenizer's vocabulary holds hostile strings
(`<script>`, `<img onerror>`, quotes, ampersands) so escaping is exercised end
to end, and a small per-forward delay makes streaming visible to a browser.
"""
from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from specviz.errors import step  # noqa: E402
from specviz.models.loading import ModelLoadError, ModelPair, validate_model_id  # noqa: E402
from tests.tiny import tiny_model  # noqa: E402

VOCAB = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", ' "quoted"', " &amp; ", " the", " cat",
         "\n", " sat", " on", " a", " mat", "'", " dog", "<b>bold</b>", " ran", "."]


class FakeTokenizer:
    """Enough of a tokenizer for the decoder and the app: id <-> text over VOCAB."""

    chat_template = None
    eos_token_id = None

    def batch_decode(self, seqs, **kw):
        return ["".join(VOCAB[i] for i in s) for s in seqs]

    def decode(self, ids, **kw):
        return "".join(VOCAB[i] for i in ids)

    def encode(self, text, **kw):
        return [ord(c) % len(VOCAB) for c in text][:48] or [0]


class Hold:
    """Holds the target's forwards, once armed, until every run that was going when it first held is stopped.

    A test of Stop proves Stop, not a race with the run's own end: `arm(after=n)` lets n more target forwards
    through, then the next one waits until Stop (or a newer run, or the page closing) has halted the run it belongs
    to; that forward then goes on and the run ends at its next round. `limit_s` bounds the wait (a test that never
    presses Stop fails on its own assertions instead of hanging the suite)."""

    def __init__(self, limit_s: float = 120.0):
        self._lock = threading.Lock()
        self._left: int | None = None     # forwards still let through; None: not armed
        self.limit_s = limit_s
        self.held = 0                     # forwards that waited here (the test checks the hold took effect)

    def arm(self, after: int) -> None:
        with self._lock:
            self._left, self.held = after, 0

    def disarm(self) -> None:
        with self._lock:
            self._left = None

    def wait(self) -> None:
        with self._lock:
            if self._left is None:
                return
            if self._left > 0:
                self._left -= 1
                return
            self.held += 1
        from specviz.ui import session

        with session._RUNS_LOCK:
            going = [s.run for s in session._SESSIONS.values() if s.run is not None and s.run.active]
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.limit_s and not all(run.stop.is_set() for run in going):
            time.sleep(0.01)


HOLD = Hold()   # one per process: the browser tests serve the tiny app in their own process


class Slow:
    """A model wrapper that sleeps before each forward (so a browser can see the stream): `delay` per forward plus
    `position_delay` per position it reads (a long prompt's prefill then takes seconds, as a real model's does)."""

    def __init__(self, model, delay: float, position_delay: float = 0.0, hold: Hold | None = None):
        self._model, self._delay, self._position_delay, self._hold = model, delay, position_delay, hold

    def __getattr__(self, name):
        return getattr(self._model, name)

    def __call__(self, *args, **kwargs):
        ids = kwargs.get("input_ids")
        pause = self._delay + (self._position_delay * ids.shape[-1] if ids is not None else 0.0)
        if pause:
            time.sleep(pause)
        if self._hold is not None:
            self._hold.wait()
        return self._model(*args, **kwargs)


class TinyPair(ModelPair):
    """A real `specviz.models.loading.ModelPair` around tiny random models and the fake tokenizer (its chat prompt: two fixed
    ids, then the text), so the app and the CLI meet the attributes every loaded pair has."""

    def __init__(self, delay: float = 0.0, position_delay: float = 0.0):
        target = tiny_model(1)
        draft = tiny_model(1)
        with torch.no_grad():  # the draft: the target with noise, so it agrees often but not always
            g = torch.Generator().manual_seed(7)
            for p in draft.parameters():
                p.add_(0.3 * p.std() * torch.randn(p.shape, generator=g))
        # A draft is cheaper than its target (here 10×), which is what makes speculative decoding pay off.
        draft_name, target_name = "tiny-draft <i>x</i>", 'tiny-target "&"'
        super().__init__(target=Slow(target, delay, position_delay, HOLD), draft=Slow(draft, delay / 10, position_delay / 10),
                         tokenizer=FakeTokenizer(),
                         name=f"{draft_name} → {target_name}", device=torch.device("cpu"), dtype=torch.float32,
                         load_seconds=0.0, draft_name=draft_name, target_name=target_name)

    __eq__ = object.__eq__       # one pair is one pair (the app caches by identity)
    __hash__ = object.__hash__

    def encode_chat(self, text):
        return [4, 5] + self.tokenizer.encode(text)


def tiny_loader(delay: float = 0.0, position_delay: float = 0.0):
    pairs: dict = {}

    def load(draft, target, progress):
        if draft is not None or target is not None:
            validate_model_id(draft or "")
            validate_model_id(target or "")
            raise ModelLoadError(f"draft model {draft} was not found (this test server only has tiny models)")
        progress(0.5, step("load.tokenizer"))
        if "pair" not in pairs:
            pairs["pair"] = TinyPair(delay, position_delay)
        progress(1.0, step("load.ready"))
        return pairs["pair"]

    return load


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int | None = None, delay: float = 0.03, replay_delay: float = 0.05, position_delay: float = 0.0,
          **kwargs):
    """Start the app on 127.0.0.1 in this process (background threads); returns (demo, url)."""
    from specviz.ui import PageSettings, build_app, launch_app

    port = port or free_port()
    settings = PageSettings(max_new_tokens=40, prompt="Tell me <script>alert('p')</script> & \"more\"")
    demo = build_app(tiny_loader(delay, position_delay), replay_delay=replay_delay, settings=settings, **kwargs)
    launch_app(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    return demo, f"http://127.0.0.1:{port}/"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7861)
    ap.add_argument("--delay", type=float, default=0.03)
    ap.add_argument("--position-delay", type=float, default=0.0)
    ap.add_argument("--replay-delay", type=float, default=0.05)
    args = ap.parse_args()
    demo, url = serve(args.port, args.delay, replay_delay=args.replay_delay, position_delay=args.position_delay)
    print(url, flush=True)
    while True:
        time.sleep(3600)
