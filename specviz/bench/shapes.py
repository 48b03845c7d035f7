"""Known architectures as random-weight models: what c and verify_cost would be for a pair we cannot download.

The cost of a forward depends on the shapes (hidden size, layers, heads, kv
heads, MLP width, vocabulary), not on the weights, so a model with the public
config's shapes and random weights times like the real one. Nothing is
downloaded: the table below copies the numbers from each model's public
config.json. The model is built on the meta device (no memory, no init), its
size checked against the device's free memory, then materialised directly in
the target dtype and filled with small random values (never left
uninitialised: garbage memory can hold NaNs or denormals, which are slow on a
CPU and would distort the timing).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Shape:
    family: str          # "qwen2" (Qwen2Config: q/k/v biases) or "llama" (LlamaConfig)
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tie_embeddings: bool


# From the public config.json of each model (Qwen/Qwen2.5-*, HuggingFaceTB/SmolLM2-*).
SHAPES = {
    "qwen2.5-0.5b": Shape("qwen2", 896, 24, 14, 2, 4864, 151936, True),
    "qwen2.5-1.5b": Shape("qwen2", 1536, 28, 12, 2, 8960, 151936, True),
    "qwen2.5-3b": Shape("qwen2", 2048, 36, 16, 2, 11008, 151936, True),
    "qwen2.5-7b": Shape("qwen2", 3584, 28, 28, 4, 18944, 152064, False),
    "qwen2.5-14b": Shape("qwen2", 5120, 48, 40, 8, 13824, 152064, False),
    "qwen2.5-32b": Shape("qwen2", 5120, 64, 40, 8, 27648, 152064, False),
    "smollm2-135m": Shape("llama", 576, 30, 9, 3, 1536, 49152, True),
    "smollm2-360m": Shape("llama", 960, 32, 15, 5, 2560, 49152, True),
    "smollm2-1.7b": Shape("llama", 2048, 24, 32, 32, 8192, 49152, True),
}


def config_of(shape: Shape, layers: int | None = None, max_positions: int = 32768):
    """The transformers config of `shape` (optionally with fewer or more layers)."""
    from transformers import LlamaConfig, Qwen2Config

    kind = Qwen2Config if shape.family == "qwen2" else LlamaConfig
    return kind(vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.intermediate,
                num_hidden_layers=layers or shape.layers, num_attention_heads=shape.heads,
                num_key_value_heads=shape.kv_heads, tie_word_embeddings=shape.tie_embeddings,
                max_position_embeddings=max_positions, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def _model_class(config):
    from transformers import LlamaForCausalLM, Qwen2ForCausalLM

    return Qwen2ForCausalLM if config.model_type == "qwen2" else LlamaForCausalLM


def meta_model(config):
    """The model on the meta device: shapes only, no memory, no initialisation."""
    with torch.device("meta"):
        return _model_class(config)(config).eval()


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())   # tied matrices counted once


def materialize(model, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """Give a meta model real, small random weights in `dtype` on `device`; returns it."""
    config = model.config
    model = model.to(dtype).to_empty(device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02, generator=gen)
        if config.tie_word_embeddings:
            model.tie_weights()   # to_empty gave the head its own storage
        # The rotary frequencies are buffers computed at init: recompute them on the device, in fp32.
        with torch.device(device):
            model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    return model.eval()


def bytes_needed(params: int, dtype: torch.dtype, vocab: int, ks: int) -> int:
    """Weights (params x bytes per element), plus 10% and the fp32 logits of the widest forward."""
    per = torch.empty((), dtype=dtype).element_size()
    return int(params * per * 1.1) + 4 * vocab * (ks + 1) * 4 + (64 << 20)
