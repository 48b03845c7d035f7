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
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .devices import resolve_device_dtype, default_device_and_dtype, parse_dtype  # noqa: F401 (API)
from ..errors import ModelLoadError, role as role_word, step
from ..runtime.zerogpu import on_zero_gpu
from .sources import resolve_source, Source, validate_model_id  # noqa: F401 (API)
from .quant.kernels import resolve_draft_weights, resolve_linear_path, use_linear_path
from .quant.weights import q4a8_fallback, resolve_target_weights, weights_name
from .prepare import prepare_models
from .quant import read_ahead
from .packaged import PACKAGED_PAIR_NAME, Progress, cache_dir  # noqa: F401 (API)
from .gguf_file import GGUFModelFile, is_gguf_path
from . import gguf_loader, gguf_pair, storing
from .storing import WeightOptions  # noqa: F401 (API)
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
        """The same target loaded afresh with its weights stored as `weights` (as-loaded | bf16 | int8 | int4) and
        prepared to decode as load_pair prepares its target: the benchmark's other target-alone baselines. An as-loaded fp32 target gets the faster of the
        default and oneDNN kernels, measured, as load_pair would give it."""
        if self.target_source is None:
            raise ModelLoadError("this pair does not know where its target came from")
        kind = resolve_target_weights(weights, self.device, self.dtype)
        if isinstance(self.target_source, GGUFModelFile):   # dequantized in memory, layer by layer, never cached
            kind = q4a8_fallback("q4a8" if kind == "auto" else kind)
            model, _ = gguf_loader.load_gguf_model(self.target_source, kind, self.dtype)
            if kind == "as-loaded":
                use_linear_path(model, resolve_linear_path("auto", self.device, self.dtype, probe_model=model))
            return prepare_models(gguf_pair.placed(model, self.device))
        model = _load_model(self.target_source, "target", self.device, storing.load_dtype(kind, self.dtype), auto_map=False)
        kind, _, _, _ = storing.store_target(model, kind, self.device, self.dtype, _noop)
        if kind == "as-loaded":
            use_linear_path(model, resolve_linear_path("auto", self.device, self.dtype, probe_model=model))
        return prepare_models(model)

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
            return use_linear_path(gguf_pair.placed(model, self.device), self.linear_path)
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
        loaded = gguf_pair.load_gguf_pair(draft, target, dev, dt, weights, (path, draft_weights, target_weights),
                                          allow_local, report)
        return ModelPair(**loaded.fields, load_seconds=time.perf_counter() - t0)
    loaded = _load_both(draft, target, dev, dt, storing.load_dtype(target_weights, dt), allow_local, report)
    target_weights, target_probe, target_layers, ahead = storing.store_target(loaded.target, target_weights, dev, dt, report)
    path, probe = storing.target_kernels(loaded.target, path, weights.linear, target_weights, report)
    draft_weights = storing.store_draft(loaded.draft, storing.draft_kind(weights.draft_weights, draft_weights, target_weights),
                                 path, report)
    prepare_models(loaded.target, loaded.draft)   # the runtime configured and both models set up, before any run
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
