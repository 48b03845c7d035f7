"""Tiny randomly initialised causal LMs whose output distributions can be enumerated."""
from __future__ import annotations

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from specviz.models.prepare import prepare_models


def tiny_model(seed: int, vocab: int = 16, hidden: int = 32, layers: int = 2, scale: float = 1.0,
               eos_token_id: int | None = None) -> Qwen2ForCausalLM:
    """A 2-layer Qwen2 with a small vocabulary; `scale` sharpens its logits (more peaked distributions). Prepared to
    decode as load_pair prepares its models (`prepare_models`: the runtime configured, the row-invariant attention)."""
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, tie_word_embeddings=False,
                         eos_token_id=eos_token_id, bos_token_id=None, pad_token_id=None)
    model = Qwen2ForCausalLM(config).eval().float()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale * 8.0)   # random init is near-uniform; make it opinionated
    model.generation_config.eos_token_id = eos_token_id
    return prepare_models(model)


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


def fixed_model(probs, hidden: int = 32) -> Qwen2ForCausalLM:
    """A tiny Qwen2 whose next-token distribution is `probs` after every prefix (a fixed table).

    Its layers add nothing to the residual stream (zero output projections) and every token embeds
    alike, so the last hidden state is one constant vector n; the head maps n to log(probs). Tokens
    of probability 0 get a logit of -1e4 (exp underflows to exactly 0 in fp32). Lets a test pin p and q
    exactly while running the decoder's real forwards, drafter, rule and sampling.
    """
    probs = torch.as_tensor(probs, dtype=torch.float64)
    model = tiny_model(0, vocab=len(probs), hidden=hidden)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.fill_(1.0)
        n = model.model.norm(torch.ones(1, hidden))[0].double()
        logits = torch.where(probs > 0, probs.clamp_min(1e-300).log(), torch.tensor(-1e4, dtype=torch.float64))
        model.lm_head.weight.copy_((logits[:, None] * n[None] / n.dot(n)).float())
    return model
