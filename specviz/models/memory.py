"""Whether a pair fits the device, checked in words before minutes of loading.

Weights: the parameter count of the architecture built on the meta device
(no memory, any architecture transformers knows) x bytes per parameter, with
headroom for activations and the CUDA graphs' pool; KV cache: both models'
static caches at MEMORY_KV_TOKENS positions. Against what is free: CUDA's
`mem_get_info`, or the host's available memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..limits import MEMORY_HEADROOM, MEMORY_KV_TOKENS
from ..runtime.zerogpu import on_zero_gpu, slice_bytes
from ..strings import DEFAULT_LANG, t
from . import devices   # devices.available_memory read at call time: tests stand in for it

GB = 1e9


def parameter_count(config) -> int:
    """Parameters of a model with this config (built on the meta device; tied matrices counted once)."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def kv_cache_bytes(config, tokens: int, dtype: torch.dtype) -> int:
    """A static KV cache of `tokens` positions: keys and values of every layer."""
    text = config.get_text_config()
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    per = torch.empty((), dtype=dtype).element_size()
    return 2 * text.num_hidden_layers * heads * head_dim * tokens * per


@dataclass(frozen=True)
class Fit:
    weights: float      # bytes, with headroom
    cache: float        # bytes
    free: float | None  # bytes free on the device, None if unknown

    @property
    def need(self) -> float:
        return self.weights + self.cache

    @property
    def fits(self) -> bool:
        return self.free is None or self.need <= self.free


def pair_fit(configs, params: list[int], dtype: torch.dtype, free: float | None,
             tokens: int = MEMORY_KV_TOKENS) -> Fit:
    """Both models' weights (`params` each, in `dtype`) and caches against `free` bytes."""
    per = torch.empty((), dtype=dtype).element_size()
    weights = sum(params) * per * MEMORY_HEADROOM
    cache = sum(kv_cache_bytes(c, tokens, dtype) for c in configs)
    return Fit(weights, cache, free)


def free_bytes(device: torch.device) -> int | None:
    if torch.device(device).type == "cuda" and on_zero_gpu():
        return slice_bytes()
    return devices.available_memory(torch.device(device))


def refusal(fit: Fit, name: str, dtype: torch.dtype, device, lang: str | None = None) -> str | None:
    """The sentence that refuses a pair that does not fit, or None when it fits (or the free memory is unknown)."""
    if fit.fits:
        return None

    return t("memory.refused", lang or DEFAULT_LANG, name=name, need=f"{fit.need / GB:.1f}",
             weights=f"{fit.weights / GB:.1f}", cache=f"{fit.cache / GB:.1f}",
             dtype=str(dtype).removeprefix("torch."), device=str(device), free=f"{fit.free / GB:.1f}")


def check_pair(draft_ref: str, target_ref: str, device: torch.device, dtype: torch.dtype,
               local_files_only: bool = False) -> str | None:
    """`refusal` for two Hub ids or folders, from their config files only; None when a config cannot be read."""
    from transformers import AutoConfig

    try:
        configs = [AutoConfig.from_pretrained(ref, local_files_only=local_files_only) for ref in (draft_ref, target_ref)]
        params = [parameter_count(c) for c in configs]
    except Exception:  # noqa: BLE001 - an unreadable config: loading will say what is wrong
        return None
    return refusal(pair_fit(configs, params, dtype, free_bytes(device)), f"{draft_ref} → {target_ref}", dtype, device)


def check_files(draft_file, target_file, device: torch.device, dtype: torch.dtype) -> str | None:
    """`refusal` for two GGUF files (specviz.models.gguf_file.GGUFModelFile): their bytes as they lie on disk (the
    kernels hold about as many), with headroom, plus both KV caches."""
    from transformers import AutoConfig

    configs = [AutoConfig.from_pretrained(str(f.meta_folder())) for f in (draft_file, target_file)]
    cache = sum(kv_cache_bytes(c, MEMORY_KV_TOKENS, dtype) for c in configs)
    fit = Fit((draft_file.size + target_file.size) * MEMORY_HEADROOM, cache, free_bytes(device))
    return refusal(fit, f"{draft_file.label} → {target_file.label}", dtype, device)
