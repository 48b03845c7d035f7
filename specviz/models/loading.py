"""Load a draft/target model pair: the packaged offline pair, Hub ids, or local folders.

The packaged pair is prepared by `specviz.models.packaged` (assembled from PyPI wheels,
verified, converted once into the cache); device and dtype are chosen by
`specviz.models.devices`. Hub ids and local folders go straight to ``from_pretrained``
(never with ``trust_remote_code``).  Errors a user can cause or fix (a typo in
an id, no network, a corrupted wheel, two models that do not share a tokenizer)
surface as one ``ModelLoadError`` with a short message.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .devices import resolve_device_dtype, default_device_and_dtype, parse_dtype  # noqa: F401 (API)
from ..errors import ModelLoadError, role as role_word, step
from ..runtime.zerogpu import on_zero_gpu
from .sources import looks_like_path, resolve_source, Source, validate_model_id  # noqa: F401 (API)
from .quant.kernels import (DRAFT_ENV_VAR, DRAFT_WEIGHTS, ENV_VAR as LINEAR_ENV_VAR, checked_choice,
                            probe_linear_paths, resolve_draft_weights, resolve_linear_path, use_linear_path)
from .quant.weights import (candidate_weights, probe_target_weights, q4a8_fallback, resolve_target_weights,
                            weights_name)
from .lean_forward import lean_for
from .quant import q4a8, read_ahead
from .quant.weights_cache import convert_cached
from .packaged import PACKAGED_DRAFT, PACKAGED_TARGET, PACKAGED_PAIR_NAME, Progress, cache_dir, packaged_gguf  # noqa: F401
from .gguf_file import GGUFModelFile, first_vocab_difference, is_gguf_path, models_dir
from . import gguf_loader
from . import memory   # memory.check_pair read at call time: tests stand in for it

log = logging.getLogger(__name__)

__all__ = ["ModelLoadError", "ModelPair", "PACKAGED_PAIR_NAME", "WeightOptions", "cache_dir",
           "default_device_and_dtype", "load_pair", "parse_dtype", "validate_model_id"]


def _load_model(src: Source | Path, role: str, device: torch.device, dtype: torch.dtype, auto_map: bool):
    from transformers import AutoModelForCausalLM

    ref = str(src) if isinstance(src, Path) else src.ref
    kwargs = {"dtype": dtype}
    if isinstance(src, Source) and src.local_files_only:
        kwargs["local_files_only"] = True
    if device.type == "cuda" and not on_zero_gpu():
        # "auto" lets accelerate spread a large target over several GPUs (and CPU);
        # otherwise place weights straight on the device without a CPU copy.
        kwargs["device_map"] = "auto" if auto_map else {"": device}
    try:
        model = AutoModelForCausalLM.from_pretrained(ref, **kwargs)
    except ModelLoadError:
        raise
    except torch.cuda.OutOfMemoryError:
        raise ModelLoadError(key="load.gpu_memory", role=role_word(role), ref=ref) from None
    except (OSError, ValueError, KeyError) as e:
        log.warning("cannot load %s model %s: %s", role, ref, _first_line(e))
        raise ModelLoadError(key="load.cannot_load", role=role_word(role), ref=ref) from None
    if "device_map" not in kwargs:
        model.to(device)   # on ZeroGPU the documented way: .to("cuda") at start-up, placed when a call attaches the GPU
    return model.eval()


def _first_line(e: BaseException) -> str:
    """The first line of a loader's exception, for the server's log (a page names the model, never the library's
    own words)."""
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:200]


def _load_tokenizer(src: Source | Path, role: str):
    from transformers import AutoTokenizer

    ref = str(src) if isinstance(src, Path) else src.ref
    kwargs = {"local_files_only": True} if isinstance(src, Source) and src.local_files_only else {}
    try:
        return AutoTokenizer.from_pretrained(ref, **kwargs)
    except (OSError, ValueError, KeyError) as e:
        log.warning("cannot load the tokenizer of %s model %s: %s", role, ref, _first_line(e))
        raise ModelLoadError(key="load.cannot_load_tokenizer", role=role_word(role), ref=ref) from None


def _check_same_vocab(draft_tok, target_tok, draft: str, target: str) -> None:
    """Speculative decoding compares token ids, so both sides must mean the same ids."""
    dv, tv = draft_tok.get_vocab(), target_tok.get_vocab()
    if dv == tv:
        return
    diff = sum(1 for k, v in dv.items() if tv.get(k) != v) + sum(1 for k in tv if k not in dv)
    raise ModelLoadError(key="load.vocab", draft=draft, target=target, draft_n=len(dv), target_n=len(tv), diff=diff)


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
    linear_path: str = "default"   # the kernels of the linear layers: "default" or "onednn" (specviz.models.quant.kernels)
    linear_probe: dict | None = None   # the timings behind an automatic choice (kernels.probe_linear_paths)
    draft_weights: str = "as-loaded"   # "int8": the draft's linear layers hold int8 weights (kernels.Int8WeightLinear)
    draft_source: object = None        # where the draft was loaded from (for draft_as_loaded)
    target_weights: str = "as-loaded"  # how the target stores its weights: as-loaded | bf16 | int8 | int4 | q4a8
    target_probe: dict | None = None   # the timings behind an automatic choice (weights.probe_target_weights)
    target_layers: dict | None = None  # layer counts by storage, e.g. {"int4": 141, "int8": 56}
    read_ahead: dict | None = None     # q4a8 products' read-ahead at one row, measured at load (quant.read_ahead)
    target_source: object = None       # where the target was loaded from (for target_variant)

    def target_variant(self, weights: str):
        """The same target loaded afresh with its weights stored as `weights` (as-loaded | bf16 | int8 | int4):
        the benchmark's other target-alone baselines. An as-loaded fp32 target gets the faster of the
        default and oneDNN kernels, measured, as load_pair would give it."""
        if self.target_source is None:
            raise ModelLoadError("this pair does not know where its target came from")
        kind = resolve_target_weights(weights, self.device, self.dtype)
        if isinstance(self.target_source, GGUFModelFile):   # dequantized in memory, layer by layer, never cached
            kind = q4a8_fallback("q4a8" if kind == "auto" else kind)
            model, _ = gguf_loader.load_gguf_model(self.target_source, kind, self.dtype)
            if kind == "as-loaded":
                use_linear_path(model, resolve_linear_path("auto", self.device, self.dtype, probe_model=model))
            return _placed(model, self.device)
        model = _load_model(self.target_source, "target", self.device, _load_dtype(kind, self.dtype), auto_map=False)
        kind, _, _, _ = _store_target(model, kind, self.device, self.dtype, _noop)
        if kind == "as-loaded":
            use_linear_path(model, resolve_linear_path("auto", self.device, self.dtype, probe_model=model))
        return model

    def weights_label(self, weights: str | None = None) -> str:
        """A configuration as people name it: "int4", "int8", "bf16", "fp32" (as loaded, by dtype)."""
        return weights_name(self.target_weights if weights is None else weights, self.dtype)

    def draft_as_loaded(self):
        """A second copy of the draft as transformers would load it (the pair's dtype, the target's
        kernels): the peers' assistant in the benchmark when specviz drafts with int8 weights."""
        if self.draft_weights == "as-loaded" or self.draft_source is None:
            return self.draft
        if isinstance(self.draft_source, GGUFModelFile):
            model, _ = gguf_loader.load_gguf_model(self.draft_source, "as-loaded", self.dtype)
            return use_linear_path(_placed(model, self.device), self.linear_path)
        model = _load_model(self.draft_source, "draft", self.device, self.dtype, auto_map=False)
        return use_linear_path(model, self.linear_path)

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


@dataclass(frozen=True)
class WeightOptions:
    """How a loaded pair stores its weights and which kernels multiply them; "auto" everywhere by default.

    ``linear`` picks the linear layers' kernels (auto | default | onednn, see specviz.models.quant.kernels);
    ``draft_weights`` how the draft stores its weights (auto | as-loaded | int8: auto is int8 on a CPU);
    ``target_weights`` how the target stores them (auto | as-loaded | bf16 | int8 | int4: auto is the fastest
    one-token layer measured at load on a CPU, as loaded elsewhere; see specviz.models.quant.weights).
    """

    linear: str = "auto"
    draft_weights: str = "auto"
    target_weights: str = "auto"


def load_pair(draft: str | None = None, target: str | None = None, device=None, dtype=None,
              progress: Progress | None = None, allow_local: bool = True,
              weights: WeightOptions = WeightOptions()) -> ModelPair:
    """Load a draft/target pair in eval mode on ``device`` in ``dtype``, its weights stored as ``weights`` says
    (a `WeightOptions`).

    ``draft`` and ``target`` both None: the packaged offline pair.  Otherwise each
    is a Hub id or (when ``allow_local``) a local model folder.  ``progress`` is
    called as ``progress(fraction, message)`` at each stage.
    """
    t0 = time.perf_counter()
    report = progress or _noop
    dev, dt = resolve_device_dtype(device, dtype)
    try:
        path = resolve_linear_path(weights.linear, dev, dt)   # checked before minutes of loading
        draft_weights = resolve_draft_weights(weights.draft_weights, dev, dt)
        target_weights = resolve_target_weights(weights.target_weights, dev, dt)
        read_ahead.forced()   # a bad SPECVIZ_Q4_READ_AHEAD is refused here too
    except ValueError as e:
        raise ModelLoadError(str(e)) from None

    if (draft is None) != (target is None):
        raise ModelLoadError("give both a draft and a target model, or neither for the packaged pair")
    if draft is None or is_gguf_path(draft) or is_gguf_path(target):
        return _load_gguf_pair(draft, target, dev, dt, path, weights, draft_weights, target_weights, allow_local,
                               report, t0)
    loaded = _load_both(draft, target, dev, dt, _load_dtype(target_weights, dt), allow_local, report)
    target_weights, target_probe, target_layers, ahead = _store_target(loaded.target, target_weights, dev, dt, report)
    path, probe = _target_kernels(loaded.target, path, weights.linear, target_weights, report)
    draft_weights = _store_draft(loaded.draft, _draft_kind(weights.draft_weights, draft_weights, target_weights),
                                 path, report)
    for model in (loaded.target, loaded.draft):   # built here, not in a request's first verify or draft step
        lean_for(model)                           # (0.07-0.5 s each on a 2-core Zen 4: the joined weights' copy)
    report(1.0, step("load.ready"))
    return ModelPair(target=loaded.target, draft=loaded.draft, tokenizer=loaded.tokenizer, name=loaded.name,
                     device=dev, dtype=dt, load_seconds=time.perf_counter() - t0,
                     draft_name=loaded.draft_name, target_name=loaded.target_name, linear_path=path,
                     linear_probe=probe, draft_weights=draft_weights, draft_source=loaded.draft_source,
                     target_weights=target_weights, target_probe=target_probe, target_layers=target_layers,
                     read_ahead=ahead, target_source=loaded.target_source)


@dataclass
class _Loaded:
    """Both models and the tokenizer as from_pretrained gave them, with where each came from."""
    target: object
    draft: object
    tokenizer: object
    name: str
    draft_name: str
    target_name: str
    draft_source: object
    target_source: object


def _load_both(draft: str, target: str, dev, dt, target_dt, allow_local: bool, report) -> _Loaded:
    """Two Hub ids / folders, loaded in `dt` (the target in `target_dt`)."""
    report(0.0, step("load.checking_ids"))
    dsrc = resolve_source(draft, "draft", allow_local)
    tsrc = resolve_source(target, "target", allow_local)
    report(0.05, step("load.tokenizers"))
    draft_tok = _load_tokenizer(dsrc, "draft")
    tokenizer = _load_tokenizer(tsrc, "target")
    _check_same_vocab(draft_tok, tokenizer, dsrc.ref, tsrc.ref)
    del draft_tok
    _refuse_what_does_not_fit(dsrc, tsrc, dev, target_dt)
    report(0.1, step("load.draft_named", name=dsrc.ref))
    draft_model = _load_model(dsrc, "draft", dev, dt, auto_map=False)
    report(0.4, step("load.target_named", name=tsrc.ref))
    target_model = _load_model(tsrc, "target", dev, target_dt, auto_map=dev.type == "cuda" and dev.index is None)
    return _Loaded(target_model, draft_model, tokenizer, f"{draft.strip()} → {target.strip()}", dsrc.ref, tsrc.ref,
                   dsrc, tsrc)


def _refuse_what_does_not_fit(dsrc: Source, tsrc: Source, dev, dtype) -> None:
    """Parameters x bytes plus the KV caches against free memory, before any weight is read (specviz.models.memory)."""
    refused = memory.check_pair(dsrc.ref, tsrc.ref, dev, dtype, local_files_only=tsrc.local_files_only)
    if refused:
        raise ModelLoadError(refused)


def _target_kernels(model, path: str, linear: str, target_weights: str, report) -> tuple[str, dict | None]:
    """The linear kernels of a target kept as loaded (oneDNN where it measures faster); a stored one has its own."""
    if target_weights != "as-loaded":
        return ("default" if path == "onednn" else path), None
    probe = None
    if path == "onednn" and linear == "auto" and not os.environ.get(LINEAR_ENV_VAR):
        report(0.9, step("load.timing_kernels"))
        probe = probe_linear_paths(model)
        path = probe["choice"]
    if path != "default":
        report(0.95, step("load.preparing_kernels", path=path))
        use_linear_path(model, path)
    return path, probe


def _draft_kind(asked: str, resolved: str, target_weights: str) -> str:
    """An auto draft follows the target onto specviz's q4a8 kernels where the load's probe measured them fastest:
    the probe times one row, which is all a draft step runs (the packaged draft's c 0.50 -> 0.46, Ice Lake Xeon)."""
    auto = checked_choice(asked, DRAFT_WEIGHTS, "draft weights", DRAFT_ENV_VAR) == "auto"
    return "q4a8" if auto and resolved == "int4" and target_weights == "q4a8" else resolved


def _store_draft(model, draft_weights: str, path: str, report) -> str:
    """The draft's weights as chosen: int8/int4/q4a8 (cheaper drafting, the same exact output) or on the
    target's path; returns the kind stored."""
    if draft_weights == "q4a8":   # PyTorch's int4 where specviz's kernels cannot be built (said at load)
        _ready_q4a8(report)
        draft_weights = q4a8_fallback(draft_weights)
    if draft_weights in ("int8", "int4", "q4a8"):
        report(0.97, step("load.storing_draft", weights=draft_weights))
    if draft_weights in ("int4", "q4a8"):
        convert_cached(model, draft_weights, strict_grid=False)
    else:
        use_linear_path(model, "int8" if draft_weights == "int8" else path)
    return draft_weights


def _load_dtype(target_weights: str, dtype: torch.dtype) -> torch.dtype:
    """fp32 for a target requantized on a CPU: a bf16 copy would knock a Q4_K tensor off its 4-bit grid."""
    return torch.float32 if target_weights in ("auto", "bf16", "int8", "int4", "q4a8") else dtype


def _ready_q4a8(report) -> None:
    """specviz's 4-bit kernels built (once, cached) or, where they cannot be, one line saying why:
    PyTorch's kernels run instead (a q4a8 choice becomes int4, auto leaves q4a8 out)."""
    if not q4a8.built():
        report(0.86, step("load.building_kernels"))
    with q4a8.reporting_build_waits(lambda seconds: report(0.86, step("load.waiting_kernels", seconds=seconds))):
        why = q4a8.unavailable()
    if why is not None:
        report(0.87, step("load.kernels_unavailable", reason=why))


def _store_target(model, choice: str, device, dtype, report) -> tuple[str, dict | None, dict | None, dict | None]:
    """The target's weights as `choice` ("auto": measured here), the rest of the model in `dtype`; returns the kind
    stored, the timings behind an auto choice, the layer counts and (q4a8) the read-ahead measured on its products.

    The model arrives in fp32 when it is to be requantized (see _load_dtype); bf16 weights in a bf16
    pair are simply the pair's dtype, so they count as loaded."""
    probe = None
    if choice in ("auto", "q4a8") and torch.device(device).type == "cpu":
        _ready_q4a8(report)
    if choice == "auto":
        report(0.88, step("load.timing_weights"))
        probe = probe_target_weights(model, candidate_weights(device, torch.float32))
        choice = probe["choice"]
    choice = q4a8_fallback(choice)
    if choice == "bf16" and dtype == torch.bfloat16:
        choice = "as-loaded"
    layers = None
    if choice != "as-loaded":
        report(0.9, step("load.storing_target", weights=choice))
        layers = convert_cached(model, choice)
    if next(model.parameters()).dtype != dtype:
        model.to(dtype)
    ahead = None
    if choice == "q4a8":   # one row's read-ahead, timed on these very products (the draft's follow it)
        report(0.93, step("load.timing_read_ahead"))
        ahead = read_ahead.choose(model)
    return choice, probe, layers, ahead


# --------------------------------------------------------------------------- #
# GGUF files: the packaged pair and a user's own
# --------------------------------------------------------------------------- #


def gguf_file(spec: str, role: str, allow_local: bool) -> GGUFModelFile:
    """A GGUF file named by a user, checked. Where folders are not allowed (the app's visitors), only the files inside
    the server's SPECVIZ_MODELS_DIR are: a visitor never reads another server path by naming it."""
    path = Path(str(spec).strip()).expanduser()
    if not allow_local:
        root = models_dir()
        inside = root is not None and root in path.resolve().parents and path.resolve().is_file()
        if not inside:
            raise ModelLoadError(key="gguf.outside", role=role_word(role), name=path.name[:80])
    return GGUFModelFile(path, role)


def _load_gguf_pair(draft, target, dev, dt, path, weights: WeightOptions, draft_weights, target_weights,
                    allow_local: bool, report, t0: float) -> ModelPair:
    """The packaged pair (both None) or two GGUF files, each tensor placed for its kernel (specviz.models.gguf_loader)."""
    if draft is None:
        dfile = GGUFModelFile(packaged_gguf("draft", report, 0.0, 0.15), "draft")
        tfile = GGUFModelFile(packaged_gguf("target", report, 0.15, 0.4), "target")
        name, draft_name, target_name = PACKAGED_PAIR_NAME, PACKAGED_DRAFT.label, PACKAGED_TARGET.label
    else:
        if not (is_gguf_path(draft) and is_gguf_path(target)):
            raise ModelLoadError(key="gguf.both")
        dfile, tfile = gguf_file(draft, "draft", allow_local), gguf_file(target, "target", allow_local)
        name, draft_name, target_name = f"{dfile.label} → {tfile.label}", dfile.label, tfile.label
    for file, at in ((tfile, 0.42), (dfile, 0.46)):
        report(at, step("load.reading_metadata", name=file.label))
        file.meta_folder()
    report(0.5, step("load.tokenizer"))
    tokenizer = _load_tokenizer(tfile.meta_folder(), "target")
    if draft is not None:
        first = first_vocab_difference(_load_tokenizer(dfile.meta_folder(), "draft"), tokenizer)
        if first is not None:
            raise ModelLoadError(key="load.vocab_first", draft=dfile.label, target=tfile.label, first=first)
        refused = memory.check_files(dfile, tfile, dev, dt)
        if refused:
            raise ModelLoadError(refused)
    probe = None
    if target_weights in ("auto", "q4a8") and dev.type == "cpu":
        _ready_q4a8(report)
    if target_weights == "auto" and dev.type == "cpu":
        report(0.55, step("load.timing_weights"))
        probe = _probe_gguf(tfile)
        target_weights = probe["choice"]
    target_weights = q4a8_fallback(target_weights)
    if target_weights == "bf16" and dt == torch.bfloat16:
        target_weights = "as-loaded"
    report(0.6, step("load.target_named", name=tfile.label))
    target_model, layers = gguf_loader.load_gguf_model(tfile, target_weights, dt, True, report, 0.6, 0.85)
    kind = _draft_kind(weights.draft_weights, draft_weights, target_weights)
    if kind == "q4a8":
        _ready_q4a8(report)
        kind = q4a8_fallback(kind)
    report(0.86, step("load.draft_named", name=dfile.label))
    draft_stored = kind if kind in gguf_loader.KINDS else "as-loaded"
    draft_model, _ = gguf_loader.load_gguf_model(dfile, draft_stored, dt, False, report, 0.86, 0.95)
    target_model, draft_model = _placed(target_model, dev), _placed(draft_model, dev)
    path, linear_probe = _target_kernels(target_model, path, weights.linear, target_weights, report)
    if draft_stored == "as-loaded":
        use_linear_path(draft_model, path)
    ahead = None
    if target_weights == "q4a8":   # one row's read-ahead, timed on these very products (the draft's follow it)
        report(0.96, step("load.timing_read_ahead"))
        ahead = read_ahead.choose(target_model)
    for model in (target_model, draft_model):   # built here, not in a request's first verify or draft step
        lean_for(model)
    report(1.0, step("load.ready"))
    return ModelPair(target=target_model, draft=draft_model, tokenizer=tokenizer, name=name, device=dev, dtype=dt,
                     load_seconds=time.perf_counter() - t0, draft_name=draft_name, target_name=target_name,
                     linear_path=path, linear_probe=linear_probe, draft_weights=kind, draft_source=dfile,
                     target_weights=target_weights, target_probe=probe,
                     target_layers=layers if target_weights != "as-loaded" else None, read_ahead=ahead,
                     target_source=tfile)


def _probe_gguf(file: GGUFModelFile) -> dict:
    """The load's weight probe (weights.probe_layer) on the file's largest linear layer, dequantized alone."""
    from .quant.q4k import block_scales
    from .quant.weights import candidate_weights, probe_layer

    _, t = gguf_loader.largest_linear(file)
    layer = torch.nn.Linear(t.cols, t.rows, bias=False, device="meta")
    layer.weight = torch.nn.Parameter(gguf_loader.dequantized(t), requires_grad=False)
    q4k = None
    if t.type_name == "Q4_K":
        scales = block_scales(t.data, t.rows)
        q4k = (scales["d"], scales["sc"], scales["dmin"], scales["m"])
    result = probe_layer(layer, candidate_weights("cpu", torch.float32), q4k)
    result["layer"] = f"{t.cols}x{t.rows}"
    return result


def _placed(model, device):
    """A model built on the CPU, on `device`; elsewhere than a CPU its embedding table dense (the lookup dequantizes
    with numpy)."""
    if torch.device(device).type == "cpu":
        return model
    emb = model.get_input_embeddings()
    if isinstance(emb, gguf_loader.GGUFEmbedding):
        dense = torch.nn.Embedding(emb.num_embeddings, emb.embedding_dim, device="meta")
        dense.weight = torch.nn.Parameter(emb.dense(), requires_grad=False)
        model.set_input_embeddings(dense)
    return model.to(device)
