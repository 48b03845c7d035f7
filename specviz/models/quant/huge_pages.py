"""The target's stored weights in 2 MB pages where Linux offers them (transparent huge pages, asked for with madvise).

Why: a CPU decode step streams every weight once. In 4 KB pages the packaged 1.5B target's 1.2 GB of products is
~300,000 pages a token, each a TLB miss. Measured on a 2-core Zen 4 EPYC, the same process switching between both
copies of every weight (docs/measurements.md, "Weights in 2 MB pages", "A warm load in about 3 s"): the products of a
verify (2-8 rows, whose software read-ahead runs into pages the TLB has not seen) 0-9 % faster, one row 0-2 %
(scripts/huge_pages_ab.py). The weights are written into such memory where they are written anyway (the repacked
tiles at load, the converted cache's copy, the joined projections), never copied a second time for it; only a fresh
conversion, seconds long already, moves its layers afterwards. The values are the same: every bit of every output
stays. A draft's layers and the embedding tables stay in ordinary pages (`ordinary`): on a VM whose host takes back
free memory, backing a fresh 2 MB page costs ~4 ms, more than their one-row reads gain.

Only where it can be: Linux with transparent huge pages not set to "never", CPU tensors of at least 2 MB.
SPECVIZ_HUGE_PAGES=0 keeps the 4 KB pages (an A/B, or a host that wants none). Elsewhere, or where the kernel has no
2 MB page free at the copy, the weights stay in ordinary pages, as before.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import mmap
import os
import sys
from pathlib import Path

import torch

SMAPS = Path("/proc/self/smaps")
PAGE = 2 << 20                     # one transparent huge page on x86-64 and most arm64 kernels
ENV_VAR = "SPECVIZ_HUGE_PAGES"     # "0": keep the weights in the pages they were allocated in
THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


_ORDINARY = contextvars.ContextVar("specviz_ordinary_pages", default=False)


@contextlib.contextmanager
def ordinary():
    """Within this (this thread or task only), nothing is asked into 2 MB pages: what a load places here stays in
    ordinary pages. For a draft: on a VM whose host takes back free memory (free page reporting, as on this
    project's machines) backing a fresh 2 MB page cost ~4 ms, 0.53 GB/s, ~0.5 s of a load for the packaged draft's
    276 MB, whose one-row steps 2 MB pages sped up by 1-2 % at most (docs/measurements.md)."""
    token = _ORDINARY.set(True)
    try:
        yield
    finally:
        _ORDINARY.reset(token)


def available() -> bool:
    """Whether weights can be asked into 2 MB pages here (Linux, madvise's MADV_HUGEPAGE, THP not "never"), and now
    (not within `ordinary()`)."""
    if os.environ.get(ENV_VAR, "").strip() == "0" or _ORDINARY.get():
        return False
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"):
        return False
    try:
        return "[never]" not in THP_SETTING.read_text()
    except OSError:
        return False


def huge_storage(nbytes: int) -> tuple[torch.Tensor, int]:
    """(a fresh uint8 tensor over an anonymous mapping advised into 2 MB pages, the byte offset of its first 2 MB
    boundary). Nothing is touched yet: the pages are huge when first written (the copy)."""
    # Private: a shared anonymous mapping is shmem, whose huge pages follow another setting.
    region = mmap.mmap(-1, nbytes + PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)   # one spare page to align
    region.madvise(mmap.MADV_HUGEPAGE)
    raw = torch.frombuffer(region, dtype=torch.uint8)    # keeps the mapping alive as long as any view of it
    return raw, -raw.data_ptr() % PAGE


def empty(shape, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised contiguous CPU tensor, in 2 MB pages where `available()` and it is 2 MB or more (else
    torch.empty)."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < PAGE or not available():
        return torch.empty(shape, dtype=dtype)
    raw, start = huge_storage(nbytes)
    return raw[start:start + nbytes].view(dtype).view(shape)


def move_storages(tensors: list[torch.Tensor]) -> int:
    """Each distinct CPU storage of at least 2 MB among `tensors` copied into 2 MB pages, unless it lies in memory
    advised into them already (its mapping's VmFlags say "hg"); every tensor on it re-pointed in place (set_: the
    same tensor objects, so whatever holds them reads the new copy). Returns the bytes moved."""
    by_storage: dict[int, list[torch.Tensor]] = {}
    advised = [(start, end) for start, end, fields in mappings() if "hg" in fields.get("VmFlags", "").split()]
    for t in tensors:
        if t is None or t.device.type != "cpu" or t.untyped_storage().nbytes() < PAGE:
            continue
        at = t.untyped_storage().data_ptr()
        if not any(start <= at < end for start, end in advised):   # else written into 2 MB pages already (empty)
            by_storage.setdefault(at, []).append(t)
    moved = 0
    with torch.no_grad():
        for group in by_storage.values():
            old = group[0].untyped_storage()
            raw, start = huge_storage(old.nbytes())
            raw[start:start + old.nbytes()].copy_(torch.empty(0, dtype=torch.uint8).set_(old))
            for t in group:
                size = t.element_size()
                typed = torch.empty(0, dtype=t.dtype).set_(raw.untyped_storage())  # the new bytes in t's dtype
                t.set_(typed.untyped_storage(), (start + t.storage_offset() * size) // size, t.size(), t.stride())
            moved += old.nbytes()
    return moved


def into_huge_pages(model: torch.nn.Module, stored: tuple[type, ...]) -> int:
    """The buffers of `model`'s `stored` layers (specviz's weight-only kinds) moved into 2 MB pages where
    `available()` (a fresh conversion's: a cached copy is loaded straight into them, joined weights are joined into
    them); returns the bytes moved (0 where not, or where a buffer trains)."""
    buffers = [b for m in model.modules() if isinstance(m, stored) for b in m._buffers.values()]
    if not available() or any(b is not None and b.requires_grad for b in buffers):
        return 0
    return move_storages(buffers)


def mappings() -> list[tuple[int, int, dict[str, str]]]:
    """This process's mappings from /proc/self/smaps: (start, end, {field: value}); [] where there is none."""
    try:
        lines = SMAPS.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        head = line.split(maxsplit=1)[0] if line.strip() else ""
        if "-" in head and not head.endswith(":"):   # a mapping's first line: start-end perms offset ...
            start, end = (int(x, 16) for x in head.split("-"))
            found.append((start, end, {}))
        elif found and ":" in line:
            key, _, value = line.partition(":")
            found[-1][2][key] = value.strip()
    return found


def mapping_fields(address: int) -> dict[str, str] | None:
    """The smaps fields of the mapping holding `address` (THPeligible, AnonHugePages, ...), or None."""
    return next((fields for start, end, fields in mappings() if start <= address < end), None)


def advised_bytes(model: torch.nn.Module, stored: tuple[type, ...]) -> int:
    """Bytes of `model`'s `stored` layers' weights (storages of 2 MB or more) lying in memory advised into 2 MB pages:
    what a benchmark reports beside its figures, with `process_huge_bytes()` (whether the kernel gave them)."""
    spans: dict[int, tuple[int, int]] = {}   # storage -> (first, last) byte its tensors use (not the padding)
    for b in (b for m in model.modules() if isinstance(m, stored) for b in m._buffers.values()):
        if b is not None and b.device.type == "cpu" and b.untyped_storage().nbytes() >= PAGE:
            lo, hi = spans.get(b.untyped_storage().data_ptr(), (b.data_ptr(), b.data_ptr()))
            spans[b.untyped_storage().data_ptr()] = (min(lo, b.data_ptr()),
                                                     max(hi, b.data_ptr() + b.numel() * b.element_size()))
    found = mappings()
    return sum(hi - lo for lo, hi in spans.values()
               if any(start <= lo < end and fields.get("THPeligible") == "1" for start, end, fields in found))


def process_huge_bytes() -> int:
    """This process's anonymous memory in 2 MB pages now (smaps' AnonHugePages over all its mappings). Adjacent
    mappings merge, so this is counted per process, not per model."""
    return sum(int(fields.get("AnonHugePages", "0 kB").split()[0]) * 1024 for _, _, fields in mappings())
