"""`python -m specviz prepare`: convert the packaged pair into the model cache once, ahead of time.

The first load of the packaged pair assembles and converts two GGUF files
(minutes on a 2-core machine); CI and container builds call this before the
tests or the app so that nobody waits for it later. It also builds specviz's q4a8 CPU kernels into the
same cache (about a minute, once per kernel source, torch version and Python environment), which the first load would
otherwise build; where they cannot be built (no compiler) it says why in one line and still succeeds: the
app then runs PyTorch's own 4-bit kernel. When everything is already there it answers in seconds.
"""
from __future__ import annotations

import argparse
import sys
import time

from .args import Parser


def build_parser() -> argparse.ArgumentParser:
    return Parser(prog="python -m specviz prepare", error_prefix="specviz prepare",
                  description="Convert the packaged Qwen2.5-Coder pair into the model cache ($SPECVIZ_CACHE or "
                              "~/.cache/specviz), once; a no-op when it is already there. Exit 0 when the pair "
                              "is ready, 1 when the conversion failed.")


def _already_prepared() -> bool:
    """Whether both packaged models are complete in the cache, without loading them."""
    from ..models.packaged import is_prepared

    return is_prepared()


def build_kernels() -> str:
    """Build (or find) the q4a8 kernels in the cache: one line saying where they are, or why they cannot run here."""
    from ..models.quant import q4a8

    t0 = time.perf_counter()
    was_built = q4a8.built()
    reason = q4a8.unavailable()
    if reason is not None:
        return f"the q4a8 kernels cannot run here ({reason}); the app runs PyTorch's 4-bit kernel instead"
    how = "already built" if was_built else "built"
    return f"the q4a8 kernels are {how} in {q4a8.build_dir()} ({time.perf_counter() - t0:.0f} s)"


def main(argv: list[str] | None = None) -> int:
    """`python -m specviz prepare`; returns the exit code (2 for bad arguments, 1 when converting failed)."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)

    from ..models.loading import ModelLoadError, WeightOptions, cache_dir, load_pair

    t0 = time.perf_counter()
    if _already_prepared():
        from ..models.packaged import add_missing_q4k_scales

        add_missing_q4k_scales()   # a cache prepared before the Q4_K scales were kept (issue 29): ~10 s, once
        print(f"the packaged pair is already prepared in {cache_dir()}")
        print(build_kernels())
        return 0
    last = [""]

    def progress(fraction, message):
        if message != last[0]:   # the assembly reports the same stage many times; print each stage once
            last[0] = message
            print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)

    try:
        load_pair(device="cpu", dtype="fp32", progress=progress,   # converting only
                  weights=WeightOptions(linear="default", draft_weights="as-loaded", target_weights="as-loaded"))
    except ModelLoadError as e:
        print(f"specviz prepare: error: {e}", file=sys.stderr)
        return 1
    print(f"prepared the packaged pair in {cache_dir()} in {time.perf_counter() - t0:.0f} s")
    print(build_kernels())
    return 0
