"""Converted weights kept on disk: the 4-bit grid search costs ~25 s a load on 2 cores, reading it back ~1 s.

`convert_cached` is `weights.convert_target_weights` with a copy of the result in the model cache
(``$SPECVIZ_CACHE/converted/``). An entry is keyed by the model's weight files (folder, names,
sizes, modification times), the storage kind and torch's version (the packed 4-bit layout is
torch's own), so new weights or a new torch make a new entry. q4a8 entries add the packed
layout's version (q4a8.LAYOUT): a copy written in an older layout is never read as the new one. Before a cached
copy is trusted, the smallest layer of each stored class is converted afresh from the loaded weights and must match
it bit for bit; otherwise the entry is dropped and everything is converted again. Models that do not come from a
local folder of safetensors files (nothing to key them by) are converted every time.

Each new key leaves the old entry behind (1-1.5 GB for the packaged target), so writing an entry also removes those no
load has read for `STALE_DAYS` (a load marks what it reads) and the partial files of a writer that died.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import torch

from . import huge_pages
from .kernels import Int8WeightLinear
from ..packaged import cache_dir
from .q4a8 import LAYOUT as Q4A8_LAYOUT, Q4A8Linear, Q4HA8Linear, Q4KA8Linear, Q6KA8Linear, Q8A8Linear
from .weights import (LINEAR_TYPES, Bf16WeightLinear, Int4WeightLinear, converted_linear, convert_target_weights,
                      record_target_weights)

VERSION = 1
STALE_DAYS = 30   # an entry no load has read for this long is removed when another is written
STORED = {cls.__name__: cls for cls in (Int4WeightLinear, Int8WeightLinear, Bf16WeightLinear, Q4A8Linear, Q4KA8Linear,
                                        Q4HA8Linear, Q6KA8Linear, Q8A8Linear)}


def entry_path(model, kind: str, strict_grid: bool) -> Path | None:
    """Where the converted copy of `model` lives, or None when its weights have no local files to key by."""
    folder = Path(str(getattr(model.config, "_name_or_path", "") or ""))
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    parts = [VERSION, kind, strict_grid, torch.__version__, str(folder.resolve()),
             [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]]
    if kind == "q4a8":   # specviz's own packed layout: a new layout makes a new entry
        parts.append(Q4A8_LAYOUT)
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]
    return cache_dir() / "converted" / f"{digest}.safetensors"


def _linear_slots(model) -> list[tuple[str, torch.nn.Module, str]]:
    """(qualified name, parent, attribute) of every linear layer, in module order."""
    return [(f"{prefix}.{name}" if prefix else name, module, name)
            for prefix, module in model.named_modules() for name, child in module.named_children()
            if type(child) in LINEAR_TYPES]


def convert_cached(model: torch.nn.Module, kind: str, strict_grid: bool = True) -> dict[str, int]:
    """`convert_target_weights(model, kind, strict_grid)`, read from the cache when a valid copy is there."""
    path = entry_path(model, kind, strict_grid)
    if path is not None and path.is_file():
        counts = _load(model, path, kind, strict_grid)
        if counts is not None:
            return counts
    counts = convert_target_weights(model, kind, strict_grid)
    huge_pages.into_huge_pages(model, tuple(STORED.values()))   # as a cached copy's load places them
    if path is not None:
        try:
            _save(model, path, counts)
        except OSError:   # a full or read-only cache costs the next load time, never this one
            pass
    return counts


def _save(model, path: Path, counts: dict[str, int]) -> None:
    tensors, layers = {}, {}
    for prefix, module in model.named_modules():
        if type(module).__name__ not in STORED or module is model:
            continue
        attrs = {a: v for a, v in vars(module).items()
                 if not a.startswith("_") and a != "training" and isinstance(v, (int, float, str, bool))}
        layers[prefix] = {"class": type(module).__name__, "attrs": attrs, "buffers": list(module._buffers)}
        tensors.update({f"{prefix}::{b}": t.contiguous() for b, t in module._buffers.items() if t is not None})
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    save_file(tensors, str(partial), metadata={"layers": json.dumps(layers), "counts": json.dumps(counts)})
    os.replace(partial, path)   # a reader never sees half a file
    prune(path.parent, keep=path)


def prune(folder: Path, keep: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the entries of `folder` no load has read for STALE_DAYS and partial files older than a day (never
    `keep`); returns what it removed. A file another process removes first, or cannot remove, is left to it."""
    now = time.time() if now is None else now
    removed = []
    for f, age in [(f, STALE_DAYS * 86400) for f in folder.glob("*.safetensors")] + \
                  [(f, 86400) for f in folder.glob("*.partial")]:
        try:
            if f != keep and now - f.stat().st_mtime > age:
                f.unlink()
                removed.append(f)
        except OSError:
            pass
    return removed


def _rebuilt(info: dict, tensors: dict, prefix: str) -> torch.nn.Module:
    cls = STORED[info["class"]]
    module = cls.__new__(cls)
    torch.nn.Module.__init__(module)
    module.__dict__.update(info["attrs"])
    for name in info["buffers"]:
        module.register_buffer(name, tensors.get(f"{prefix}::{name}"))
    return module


def checked_slots(slots: list, layers: dict) -> list:
    """The layers a load converts afresh before it trusts a cached entry: the smallest of each stored class, so every
    conversion path the entry holds (a 4-bit grid found, one of our own, int8, ...) is checked once. Not the
    first in module order: that is the output layer, the largest (converting it again took ~5 of the packaged pair's
    ~10 s load)."""
    smallest: dict[str, tuple[int, tuple]] = {}
    for slot in slots:
        name, parent, attr = slot
        layer = getattr(parent, attr)
        size = layer.in_features * layer.out_features   # nn.Linear and OneDNNLinear alike
        kind = layers[name]["class"]
        if kind not in smallest or size < smallest[kind][0]:
            smallest[kind] = (size, slot)
    return [slot for _, slot in smallest.values()]


# safetensors' dtype names (its format's header) -> torch's.
_DTYPES = {"BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16, "I32": torch.int32,
           "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64}


def read_tensors(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """A safetensors file's tensors and metadata, each tensor read by the OS straight into memory of our own
    (aligned; in 2 MB pages where Linux offers them: the weight-only kernels crashed on the file's mapping). Read by
    hand from the format's header (8 bytes of length, then JSON) rather than through `safe_open`: its tensors are
    copies already, which a second copy then moved into 2 MB pages: 0.37-0.55 s for the packaged draft's 276 MB
    of layers against 0.06 s here. Raises ValueError on a cut or foreign file."""
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        length = int.from_bytes(f.read(8), "little")
        if not 0 < length <= size - 8:
            raise ValueError("not a safetensors file")
        header = json.loads(f.read(length))
        meta = header.pop("__metadata__", None) or {}
        tensors = {}
        for key, entry in header.items():
            start, end = (8 + length + at for at in entry["data_offsets"])
            if entry["dtype"] not in _DTYPES or end > size:
                raise ValueError(f"{key}: an unknown type or past the end of the file")
            raw = huge_pages.empty((end - start,), torch.uint8)
            view, at = memoryview(raw.numpy()), 0
            while at < end - start:   # one read returns at most ~2 GB
                got = os.preadv(f.fileno(), [view[at:]], start + at)
                if got <= 0:
                    raise ValueError(f"{key}: cut short")
                at += got
            tensors[key] = raw.view(_DTYPES[entry["dtype"]]).view(entry["shape"])
    return tensors, meta


def _load(model, path: Path, kind: str, strict_grid: bool) -> dict[str, int] | None:
    try:
        tensors, meta = read_tensors(path)
        layers, counts = json.loads(meta["layers"]), json.loads(meta["counts"])
        slots = _linear_slots(model)
        if sorted(name for name, _, _ in slots) != sorted(layers):
            raise ValueError("the model's layers are not the cached ones")
        checked = checked_slots(slots, layers)
        for name, parent, attr in checked:
            fresh, _ = converted_linear(getattr(parent, attr), kind, strict_grid)
            cached = _rebuilt(layers[name], tensors, name)
            pairs = list(zip(fresh.buffers(), cached.buffers()))
            if len(pairs) != len(list(fresh.buffers())) or not all(torch.equal(a, b) for a, b in pairs):
                raise ValueError(f"the cached {name} differs from a fresh conversion")
    except Exception:   # noqa: BLE001 - a stale, cut or foreign entry: convert afresh and write it again
        path.unlink(missing_ok=True)
        return None
    for name, parent, attr in slots:
        setattr(parent, attr, _rebuilt(layers[name], tensors, name))
    record_target_weights(model, kind)
    try:
        os.utime(path)   # read now: not stale (prune)
    except OSError:
        pass
    return counts


# ---------------------------------------------------------------- single layers (models.gguf_loader's requantized ones)

def save_layers(layers: dict, path: Path) -> None:
    """{name: (stored layer, count name)} into `path`, in this module's format; a full or read-only cache is left
    alone (the next load makes them again)."""
    tensors, info = {}, {}
    for name, (module, got) in layers.items():
        attrs = {a: v for a, v in vars(module).items()
                 if not a.startswith("_") and a != "training" and isinstance(v, (int, float, str, bool))}
        info[name] = {"class": type(module).__name__, "attrs": attrs, "buffers": list(module._buffers), "got": got}
        tensors.update({f"{name}::{b}": t.contiguous() for b, t in module._buffers.items() if t is not None})
    from safetensors.torch import save_file

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        save_file(tensors, str(partial), metadata={"layers": json.dumps(info)})
        os.replace(partial, path)   # a reader never sees half a file
        prune(path.parent, keep=path)
    except OSError:
        pass


def read_layers(path: Path) -> tuple[dict, dict] | None:
    """`save_layers`' entry read back: ({name: (layer, count name)}, its metadata), or None (none, or unreadable:
    then removed)."""
    if not path.is_file():
        return None
    try:
        tensors, meta = read_tensors(path)
        info = json.loads(meta["layers"])
        return {name: (_rebuilt(i, tensors, name), i["got"]) for name, i in info.items()}, info
    except Exception:   # noqa: BLE001 - a cut or foreign entry
        path.unlink(missing_ok=True)
        return None


def touch(path: Path) -> None:
    try:
        os.utime(path)   # read now: not stale (prune)
    except OSError:
        pass
