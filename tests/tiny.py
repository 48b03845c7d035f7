"""Tiny randomly initialised causal LMs whose output distributions can be enumerated."""
from __future__ import annotations

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def tiny_model(seed: int, vocab: int = 16, hidden: int = 32, layers: int = 2, scale: float = 1.0,
               eos_token_id: int | None = None) -> Qwen2ForCausalLM:
    """A 2-layer Qwen2 with a small vocabulary; `scale` sharpens its logits (more peaked distributions)."""
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, tie_word_embeddings=False,
                         eos_token_id=eos_token_id, bos_token_id=None, pad_token_id=None)
    model = Qwen2ForCausalLM(config).eval().float()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale * 8.0)   # random init is near-uniform; make it opinionated
    model.generation_config.eos_token_id = eos_token_id
    return model


def noisy_copy(model, seed: int, noise: float) -> Qwen2ForCausalLM:
    """A draft that agrees with the target often but not always: exercises every branch."""
    draft = tiny_model(0, vocab=model.config.vocab_size, hidden=model.config.hidden_size,
                       layers=model.config.num_hidden_layers)
    draft.load_state_dict(model.state_dict())
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(noise * torch.randn(w.shape, generator=g) * w.std().clamp_min(1e-3))
    return draft
