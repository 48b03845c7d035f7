"""A GGUF file as specviz reads it: checked in one sentence, its configuration and tokenizer kept once in the cache.

Why this exists: CPU users keep their models as GGUF files (llama.cpp, LM Studio, Ollama), and the packaged pair ships
as two of them. Reading the file itself (memory-mapped, through the `gguf` package) lets every linear layer go
straight into the form its kernel runs (specviz.models.gguf_loader) instead of through an fp32 copy of the model.

What a file must be to load: a complete GGUF of a supported architecture (`ARCHITECTURES`) whose tensors are all of
supported types (`TYPES`). Anything else is refused in one sentence that names what is supported, before any weight
is read. The configuration, generation configuration and tokenizer transformers derives from the file's metadata
take seconds to parse (the tokenizer's 150 k strings); they are written once to ``<cache>/gguf-meta/<key>/``,
keyed by the file's path, size and modification time, and read from there in well under a second afterwards.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import mmap
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import ModelLoadError, role as role_word
from . import quick_tokenizer
from .packaged import cache_dir

# llama covers the Llama 2/3.x family and the many GGUFs written in its format (Mistral's among them).
ARCHITECTURES = ("qwen2", "llama")
META_VERSION = 2
_MARKER = "specviz-meta.json"
_PATCHING = threading.Lock()   # _parsed_once patches two module attributes: one file's writing at a time


def _types():
    from gguf import GGMLQuantizationType as T

    # Q4_K and Q6_K go into specviz's kernels in their own form; F32/F16/BF16 as they are; the others are
    # dequantized one layer at a time and stored as the load asks (never the whole model in fp32).
    return {T.F32: "F32", T.F16: "F16", T.BF16: "BF16", T.Q4_0: "Q4_0", T.Q4_1: "Q4_1", T.Q5_0: "Q5_0",
            T.Q5_1: "Q5_1", T.Q8_0: "Q8_0", T.Q2_K: "Q2_K", T.Q3_K: "Q3_K", T.Q4_K: "Q4_K", T.Q5_K: "Q5_K",
            T.Q6_K: "Q6_K"}


def supported_types() -> str:
    return ", ".join(_types().values())


def _reader(path: Path):
    """gguf's GGUFReader over a plain view of the mapped file (numpy's memmap subclass costs ~10 µs a slice: 13 s for
    a tokenizer's strings; ~4 s this way, the same bytes and the same parse)."""
    from gguf.gguf_reader import GGUFReader   # the class itself, also while _parsed_once stands in for it

    class Reader(GGUFReader):
        def _build_fields(self, offs, count):
            self.data = self.data.view(np.ndarray)
            return super()._build_fields(offs, count)

    return Reader(str(path))


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor of the file: its raw bytes (a read-only view of the mapped file), type and logical shape."""

    name: str
    kind: object          # gguf.GGMLQuantizationType
    rows: int             # output features (the logical shape's last entry in GGUF's order)
    cols: int             # input features (1 for a vector)
    data: np.ndarray      # [rows, bytes per row] uint8 for quantized types, the values for F32/F16/BF16

    @property
    def type_name(self) -> str:
        return self.kind.name


class GGUFModelFile:
    """A GGUF file on disk, checked: `architecture`, `tensor(name)` (by GGUF name), its `meta_folder()`.

    The first time a file is seen, gguf's reader parses its header (seconds: the tokenizer's strings) and the checks
    run; what the load needs of it (the architecture, each tensor's type, shape and place in the file) is then kept in
    the cache beside its metadata, so later loads map the file and read no header at all."""

    def __init__(self, path: str | Path, role: str = "target"):
        self.path = Path(path).expanduser().resolve()
        self.role = role
        if not self.path.is_file():
            raise ModelLoadError(key="gguf.missing", role=role_word(role), path=str(path))
        index = self._kept_index()
        if index is None:
            index = self._read_index()
            self._keep_index(index)
        self.architecture = index["architecture"]
        self._raw = {t[0]: t[1:] for t in index["tensors"]}   # name -> (type, shape, offset, bytes)
        self._map: np.ndarray | None = None   # mapped on first read, let go by release()
        self._mmap: mmap.mmap | None = None   # the mapping under it, whose read pages drop_read_pages lets go
        self._parse: dict | None = None       # transformers' reading of the header, while its folders are written

    def drop_read_pages(self) -> None:
        """Let go of the file pages read so far (MADV_DONTNEED: they stay in the page cache and a later read maps
        them again), so that a load's resident memory is what it keeps, not the file it has read: placing a 7B
        target's 4.7 GB file peaked at 9.8 GB RSS while the pages stayed mapped until the end, 5.5-5.8 GB when let go
        layer by layer."""
        if self._mmap is not None and hasattr(self._mmap, "madvise"):
            self._mmap.madvise(mmap.MADV_DONTNEED)

    def release(self) -> None:
        """Unmap the file (a load copies what it keeps): the pages it read no longer count in the process's RSS
        (5 GB for a 7B target). A later read maps it again."""
        self._map = self._mmap = None
        self._parse = None
        self.__dict__.pop("_header", None)

    @cached_property
    def _header(self):
        """gguf's reader over the file: the header parsed once for whatever in this process needs it."""
        return _reader(self.path)

    @contextlib.contextmanager
    def _parsed_once(self) -> Iterator[None]:
        """Within this, transformers' readings of this file's header (its config, then again to name the tokenizer's
        model type) use the reader parsed above and the first reading's result: its own reader goes through numpy's
        memmap (~10 s for a 150 k-token vocabulary, each time). Patched module attributes, so one at a time."""
        import gguf
        import transformers.modeling_gguf_pytorch_utils as legacy

        def reader(path, *args, **kwargs):
            same = Path(path).resolve() == self.path
            return self._header if same and not args and not kwargs else reader_class(path, *args, **kwargs)

        def parse(path, return_tensors=False, **kwargs):
            if return_tensors or kwargs or Path(path).resolve() != self.path:
                return load(path, return_tensors, **kwargs)
            if self._parse is None:
                self._parse = load(path, return_tensors=False)
            return {k: dict(v) if isinstance(v, dict) else v for k, v in self._parse.items()}

        with _PATCHING:
            reader_class, load = gguf.GGUFReader, legacy.load_gguf_checkpoint
            gguf.GGUFReader, legacy.load_gguf_checkpoint = reader, parse
            try:
                yield
            finally:
                gguf.GGUFReader, legacy.load_gguf_checkpoint = reader_class, load

    def _index_path(self) -> Path:
        return cache_dir() / "gguf-meta" / f"{self.path.stem[:60]}-{self.key}.tensors.json"

    def _kept_index(self) -> dict | None:
        try:
            index = json.loads(self._index_path().read_text())
        except (OSError, ValueError):
            return None
        return index if index.get("version") == META_VERSION and index.get("size") == self.size else None

    def _keep_index(self, index: dict) -> None:
        path = self._index_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.partial")
            partial.write_text(json.dumps(index))
            os.replace(partial, path)
        except OSError:   # a read-only cache: the next load parses the header again
            pass

    def _read_index(self) -> dict:
        role = role_word(self.role)
        try:
            reader = self._header
            tensors = list(reader.tensors)
            end = max((int(t.data_offset) + int(t.n_bytes) for t in tensors), default=0)
        except Exception:   # noqa: BLE001 - gguf raises ValueError, IndexError, struct errors on a cut or foreign file
            raise ModelLoadError(key="gguf.unreadable", role=role, name=self.path.name) from None
        if not tensors or end > self.size:
            raise ModelLoadError(key="gguf.unreadable", role=role, name=self.path.name)
        field = reader.fields.get("general.architecture")
        arch = bytes(field.parts[field.data[0]]).decode("utf-8", "replace") if field is not None else "?"
        if arch not in ARCHITECTURES:
            raise ModelLoadError(key="gguf.architecture", role=role, name=self.path.name, arch=arch[:40],
                                 supported=", ".join(ARCHITECTURES))
        known = _types()
        for t in tensors:
            if t.tensor_type not in known:
                raise ModelLoadError(key="gguf.type", role=role, name=self.path.name, tensor=t.name,
                                     type=t.tensor_type.name, supported=supported_types())
        return {"version": META_VERSION, "size": self.size, "architecture": arch,
                "tensors": [[t.name, int(t.tensor_type), [int(x) for x in t.shape], int(t.data_offset),
                             int(t.n_bytes)] for t in tensors]}

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    @property
    def label(self) -> str:
        return self.path.name

    def tensor(self, name: str) -> GGUFTensor | None:
        """The tensor `name` (GGUF's own name, e.g. "blk.0.attn_q.weight"), or None: a read-only view of the mapped
        file, typed as gguf's reader types it (F32 and F16 as values, every other type as bytes), [rows, -1]."""
        from gguf import GGMLQuantizationType

        found = self._raw.get(name)
        if found is None:
            return None
        kind, shape, offset, size = found
        kind = GGMLQuantizationType(kind)
        cols, rows = shape[0], int(np.prod(shape[1:])) if len(shape) > 1 else 1   # GGUF's order: inputs first
        if self._map is None:
            mapped = np.memmap(self.path, dtype=np.uint8, mode="r")
            self._map, self._mmap = mapped.view(np.ndarray), getattr(mapped, "_mmap", None)
        data = self._map[offset:offset + size]
        if kind == GGMLQuantizationType.F32:
            data = data.view(np.float32)
        elif kind == GGMLQuantizationType.F16:
            data = data.view(np.float16)
        return GGUFTensor(name, kind, rows, cols, data.reshape(rows, -1))

    def tensor_sizes(self) -> dict[str, tuple[int, int]]:
        """{GGUF name: (rows, bytes)} of every tensor, from the index (no tensor is read)."""
        return {name: (int(np.prod(shape[1:])) if len(shape) > 1 else 1, size)
                for name, (_, shape, _, size) in self._raw.items()}

    @property
    def names(self) -> list[str]:
        return list(self._raw)

    @cached_property
    def key(self) -> str:
        st = self.path.stat()
        text = json.dumps([META_VERSION, str(self.path), st.st_size, st.st_mtime_ns])
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def meta_folder(self) -> Path:
        """A folder holding the file's config.json and generation_config.json, written once (seconds: transformers
        parses the whole header, tokenizer included)."""
        return self._kept_folder("", self._write_config)

    def tokenizer_folder(self) -> Path:
        """A folder holding the tokenizer transformers builds from the file's metadata, written once (~10 s for a
        150 k-token vocabulary); a draft whose tokenizer is never asked for never pays it."""
        return self._kept_folder("-tokenizer", self._write_tokenizer)

    def _kept_folder(self, suffix: str, write) -> Path:
        folder = cache_dir() / "gguf-meta" / f"{self.path.stem[:60]}-{self.key}{suffix}"
        if (folder / _MARKER).is_file():
            return folder
        work = Path(tempfile.mkdtemp(prefix="meta-", dir=_tmp_root()))
        try:
            try:
                with self._parsed_once():
                    write(work)
            except ModelLoadError:
                raise
            except Exception as e:   # noqa: BLE001 - transformers' own reading of the metadata failed
                text = str(e).strip()
                raise ModelLoadError(key="gguf.metadata", role=role_word(self.role), name=self.path.name,
                                     reason=text.splitlines()[0][:160] if text else type(e).__name__) from None
            (work / _MARKER).write_text(json.dumps({"file": str(self.path), "size": self.size, "key": self.key}))
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                work.rename(folder)
            except OSError:   # another process finished first (keep its folder), or a half-written leftover
                if not (folder / _MARKER).is_file():
                    shutil.rmtree(folder, ignore_errors=True)
                    work.rename(folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return folder

    def _write_config(self, work: Path) -> None:
        from transformers import AutoConfig, GenerationConfig

        config = AutoConfig.from_pretrained(str(self.path.parent), gguf_file=self.path.name)
        if hasattr(config, "quantization_config"):   # the weights are ours to place, not transformers'
            del config.quantization_config
        config.save_pretrained(work)
        GenerationConfig.from_model_config(config).save_pretrained(work)

    def _write_tokenizer(self, work: Path) -> None:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(str(self.path.parent), gguf_file=self.path.name).save_pretrained(work)
        quick_tokenizer.make_quick(work)   # read back at every load: ~0.3 s instead of ~0.9 s where it loads the same


def _tmp_root() -> Path:
    root = cache_dir() / "tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ModelLoadError(f"cannot write the model cache at {cache_dir()}: {e.strerror or e}; "
                             f"set SPECVIZ_CACHE to a writable folder") from None
    return root


def is_gguf_path(spec: str) -> bool:
    """Whether a model reference names a GGUF file (by its suffix)."""
    return isinstance(spec, str) and spec.strip().lower().endswith(".gguf")


def first_vocab_difference(draft_tok, target_tok) -> str | None:
    """The first token id whose text the two tokenizers disagree on, as a short phrase; None when they agree."""
    dv, tv = draft_tok.get_vocab(), target_tok.get_vocab()
    if dv == tv:
        return None
    d_by_id = {i: s for s, i in dv.items()}
    t_by_id = {i: s for s, i in tv.items()}
    for i in range(max(len(d_by_id), len(t_by_id)) + 1):
        a, b = d_by_id.get(i), t_by_id.get(i)
        if a != b:
            return f"id {i}: {a!r} vs {b!r}"[:120]
    return None


def models_dir() -> Path | None:
    """The folder the server's owner names for GGUF files (SPECVIZ_MODELS_DIR), or None."""
    value = os.environ.get("SPECVIZ_MODELS_DIR", "").strip()
    return Path(value).expanduser().resolve() if value else None


# ---------------------------------------------------------------- the pairs a server's owner offers

MAX_OFFERED_FILES = 40   # the models folder is read once a page is built: a folder of thousands is not a catalogue


@dataclass(frozen=True)
class LocalPair:
    """Two GGUF files of the server's models folder that can run as a pair: `value` is what the page sends back
    (file names only, never a path), `draft` and `target` the files."""

    value: str
    draft: Path
    target: Path

    @property
    def gigabytes(self) -> float:
        return (self.draft.stat().st_size + self.target.stat().st_size) / 1e9


def local_pairs() -> list[LocalPair]:
    """The pairs among the GGUF files directly inside SPECVIZ_MODELS_DIR: a smaller file drafting for a larger one
    with as many token rows (the load then compares the two tokenizers token by token). Files that cannot be read
    are left out (a load of one names what is wrong); none without the variable."""
    root = models_dir()
    if root is None or not root.is_dir():
        return []
    files = sorted(root.glob("*.gguf"))[:MAX_OFFERED_FILES]
    return list(_pairs_of(tuple((p, p.stat().st_size, p.stat().st_mtime_ns) for p in files)))


@functools.lru_cache(maxsize=4)
def _pairs_of(files: tuple[tuple[Path, int, int], ...]) -> tuple[LocalPair, ...]:
    """`local_pairs` for these files (path, size, modification time): every page build and form check asks, the
    files' headers are read once per change of the folder."""
    rows = {}
    for path, _, _ in files:
        try:
            file = GGUFModelFile(path)
            embedding = file.tensor("token_embd.weight")
        except (ModelLoadError, OSError):
            continue
        if embedding is not None:
            rows[path] = (embedding.rows, path.stat().st_size)
    return tuple(LocalPair(f"gguf:{d.name}:{t.name}", d, t) for d in rows for t in rows
                 if d != t and rows[d][0] == rows[t][0] and rows[d][1] < rows[t][1])
