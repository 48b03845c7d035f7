"""A decoder layer stack in a few lines of tensor code: the same operations as transformers' forward, without its
modules.

Why: on a 2-core CPU a one-token step of the 0.5B draft spent a third of its time outside the products, in ~1,500
Python module calls and small tensor operations a step (norms spelled in seven operations, rotary halves, one Python
call per projection). For a Qwen2- or Llama-family model whose every projection is one of specviz's int8-activation
layers (models.quant.q4a8), this stack makes the same tensor operations in the same order, each on the same values,
so its logits are transformers' bit for bit (tests/test_models_lean_forward.py compares them, 1 to 16 rows and tree
forwards); what it leaves out is the modules around them, and it makes one product of q, k and v (and one of gate and
up) where the layers are of one kind: each output column of a product is computed alone, so joining their weights
changes no bit. One-token steps on a 2-core Zen 4: the packaged 0.5B draft 37.2 -> 28.8 ms, the 1.5B target 76.1 ->
65.3 ms (docs/measurements.md, "The layers without their modules"). The rotary embedding and the norm's elementwise
tail are one extension call each (csrc/lean_ops.cpp), rounding as ATen's ops do; the norm's sum stays ATen's. The loop
over the layers runs in C++ (csrc/lean_stack.cpp: the same steps, with the KV cache's growth, the residual adds and
the casts also as the extension's exact elementwise calls) where the cache is a dynamic one already filled by a
prefill: one-token steps 0.84 (draft) and 0.93 (target) of the Python loop's time, then 0.93 and 0.98 in a later
measurement. The Python loop stays for the rest and as the spelled-out reference the tests compare.

It is built when the model is prepared at load (`lean_for`, runtime.setup) and runs where the decoder's forwards take
it (`runtime.decoding`): a batch of one, a dynamic cache, at most `limits.LEAN_MAX_ROWS` new positions (the one-token
step, a chain's verify, the draft's catch-up, a tree's verify or draft step), with specviz's one-query attention kernel
(every row is then computed as transformers computes it here). Anything else, the prompt's prefill among them, keeps
transformers' forward.
"""
from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

from ..runtime import attention
from ..runtime.state import runtime_of
from .quant import huge_pages, q4a8

FAMILIES = ("qwen2", "llama")
# The projections of one input made one product where their layers are of one kind; a GGUF load writes their tiles
# side by side already (gguf_loader.joined_memory), so that joining them here copies nothing.
JOINED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class LeanForward:
    """`forward(ids [n], cache: KVCache, keep) -> hidden [keep, H]` (after the final norm) for one model."""

    def __init__(self, model):
        cfg, base = model.config, model.model
        # Its modules, never the model: the stack is kept in the model's Runtime, which must not hold the model.
        self.embed, self.rotary, self.norm = base.embed_tokens, base.rotary_emb, base.norm.weight
        self.eps = cfg.rms_norm_eps
        self.heads = cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.layers = [_Layer(layer, _embedding_dtype(self.embed)) for layer in base.layers]
        # The same loop in C++ (or None): one extension call a forward instead of ~40 Python tensor calls a layer.
        self.stack = _stack(self.layers, self.heads, self.head_dim, _embedding_dtype(self.embed))
        self.first, self.dtype = _first_projection(model), model.dtype   # what `serves` recognises the model by

    def serves(self, model) -> bool:
        """Whether this stack still computes `model`: its layers not replaced and its dtype unchanged since."""
        return _first_projection(model) is self.first and getattr(model, "dtype", None) == self.dtype

    def __call__(self, ids: torch.Tensor, cache, keep: int, positions: torch.Tensor | None = None,
                 allowed: torch.Tensor | None = None) -> torch.Tensor:
        """`positions` [n] and `allowed` [n, kv] (a tree's forward) or neither (a chain: the next positions, causal)."""
        n, start = ids.shape[0], cache.length
        x = self.embed(ids)                                                   # [n, H]
        if positions is None:
            positions = torch.arange(start, start + n, device=ids.device)
        cos, sin = self.rotary(x[None], positions[None])                      # as Qwen2Model computes them
        cos, sin = cos[0][:, None], sin[0][:, None]                           # [n, 1, D]
        rows = attention.causal_rows(start, n) if allowed is None else attention.masked_rows(allowed)
        layers = _dynamic_layers(cache.cache, len(self.layers)) if self.stack is not None else None
        if layers is not None:   # one extension call for the whole stack; the cache takes its grown tensors
            x, keys, values = self.stack.forward(x, [c.keys for c in layers], [c.values for c in layers], cos, sin,
                                                 rows.flat, rows.offsets)
            for c, k, v in zip(layers, keys, values):
                c.keys, c.values = k, v
        else:
            for i, layer in enumerate(self.layers):
                x = layer(x, cache.cache, i, cos, sin, rows, self)
        cache.length += n
        return _rms(x[-keep:], self.norm, self.eps)


def _first_projection(model):
    layers = getattr(getattr(model, "model", None), "layers", None)
    return layers[0].self_attn.q_proj if layers else None


def _stack(layers: list, heads: int, head_dim: int, dtype: torch.dtype):
    """The layers' loop as one extension object (csrc/lean_stack.cpp: the same calls as `_Layer`, made from C++), or
    None where a norm's weight is not in the activations' dtype (the Python loop then spells that case)."""
    ext = q4a8.extension()
    if ext is None or not hasattr(ext, "LeanStack") or not layers:
        return None
    if any(w.dtype != dtype for layer in layers for w in (layer.norm1, layer.norm2)):
        return None
    stack = ext.LeanStack(heads, head_dim, float(layers[0].scaling))
    for layer in layers:
        stack.add_layer(layer.norm1, layer.norm2, float(layer.eps), layer.qkv.parts, layer.qkv.widths, layer.o.parts,
                        layer.gate_up.parts, layer.gate_up.widths, layer.down.parts)
    return stack


def _dynamic_layers(cache, count: int) -> list | None:
    """A dynamic cache's `count` layers where each is a plain DynamicLayer already holding keys (a prefill made them):
    what the C++ loop grows as DynamicLayer.update does; anything else takes the Python loop and the cache's own
    update."""
    layers = getattr(cache, "layers", None)
    if layers is None or len(layers) != count or getattr(cache, "offloading", False):
        return None
    if not all(type(c) is DynamicLayer and c.is_initialized and c.keys.dim() == 4 for c in layers):
        return None
    return layers


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Qwen2RMSNorm / LlamaRMSNorm, operation for operation: h = x in fp32, weight * (h * rsqrt(mean(h^2) + eps)).to(
    x's dtype). One extension call (csrc/lean_ops.cpp): ATen's sum inside it (a reduction keeps ATen's order), the
    other six operations rounded as ATen's are."""
    if weight.dtype != x.dtype:   # a promoted product: the ops as transformers spells them
        h = x.to(torch.float32)
        return weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return q4a8.extension().norm(x.reshape(-1, x.shape[-1]), weight, eps).view(x.shape)


def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin (apply_rotary_pos_emb) for x [n, heads, D], cos and sin [n, 1, D]: one
    extension call rounding as ATen's ops do (csrc/lean_ops.cpp)."""
    return q4a8.extension().rotary(x, cos, sin)


class _Layer:
    """One decoder layer's weights, its projections joined where they are of one kind."""

    def __init__(self, layer, dtype: torch.dtype):
        attn, mlp = layer.self_attn, layer.mlp
        self.norm1, self.norm2 = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        self.eps = layer.input_layernorm.variance_epsilon
        qkv, gate_up = JOINED
        self.qkv = _Joined([getattr(attn, name) for name in qkv], dtype)
        self.o, self.down = _Joined([attn.o_proj], dtype), _Joined([mlp.down_proj], dtype)
        self.gate_up = _Joined([getattr(mlp, name) for name in gate_up], dtype)
        self.scaling = attn.scaling

    def __call__(self, x, cache, index: int, cos, sin, rows, lean: LeanForward) -> torch.Tensor:
        n, heads, d = x.shape[0], lean.heads, lean.head_dim
        q, k, v = (t.view(n, -1, d) for t in self.qkv(_rms(x, self.norm1, self.eps)))
        q, k = _rotary(q, cos, sin), _rotary(k, cos, sin)                          # apply_rotary_pos_emb
        keys, values = cache.update(k.transpose(0, 1)[None], v.transpose(0, 1)[None], index)
        out = attention.rows_attention(q, keys[0], values[0], rows, self.scaling)      # [n, heads, d]
        x = x + self.o(out.reshape(n, heads * d))[0]
        gate, up = self.gate_up(_rms(x, self.norm2, self.eps))
        return x + self.down(torch.nn.functional.silu(gate) * up)[0]


class _Joined:
    """Projections of one input as one product where their layers are of one kind, else one product each."""

    def __init__(self, linears: list, dtype: torch.dtype):
        self.widths = [m.out_features for m in linears]
        # One kind, whole tiles before the last, and a bias on all or none (adding a zero bias turns -0.0 into +0.0).
        one_kind = (len({type(m) for m in linears}) == 1 and all(w % q4a8.TILE == 0 for w in self.widths[:-1])
                    and len({m.bias is None for m in linears}) == 1)
        groups = [linears] if one_kind else [[m] for m in linears]
        self.parts = [_joined_part(group, dtype) for group in groups]

    def __call__(self, x: torch.Tensor) -> list[torch.Tensor]:
        ext = q4a8.extension()
        outs = [ext.linear(x, packed, width, scales, bias, kind)
                for packed, width, scales, bias, kind in self.parts]
        return list(outs[0].split(self.widths, dim=-1)) if len(outs) < len(self.widths) else outs


def _joined_part(linears: list, dtype: torch.dtype) -> tuple:
    """(packed, width, scales, bias, kind) of layers of one kind as one product. The modules then hold views into
    the joined weights, so no second copy stays in memory and transformers' forward still runs on them. The bias is
    in the activations' `dtype` once here (the product converts it to x's dtype: the draft's q/k/v bias is fp32
    beside bf16 activations, converted by every product before)."""
    first = linears[0]
    kind = q4a8.KINDS["q8"] if isinstance(first, q4a8.Q8A8Linear) else first.kind
    if len(linears) == 1:
        bias = None if first.bias is None else first.bias.to(dtype)
        return first.packed, first.out_features, getattr(first, "scales", None), bias, kind
    rows = sum(m.packed.shape[0] for m in linears)
    packed = _side_by_side([m.packed for m in linears], rows)
    if packed is None:   # written once, into 2 MB pages as the layers' own at load
        packed = torch.cat([m.packed for m in linears], out=huge_pages.empty((rows, *first.packed.shape[1:]),
                                                                              first.packed.dtype))
    at = 0
    for m in linears:
        tiles = m.packed.shape[0]
        m.packed = packed[at:at + tiles]
        at += tiles
    scales = torch.cat([m.scales for m in linears]) if kind == q4a8.KINDS["q8"] else None
    bias = None if first.bias is None else torch.cat([m.bias for m in linears]).to(dtype)
    return packed, sum(m.out_features for m in linears), scales, bias, kind


def _side_by_side(parts: list[torch.Tensor], rows: int) -> torch.Tensor | None:
    """parts [tiles_i, ...] as one tensor [rows = sum of tiles_i, ...] where they already lie one after another in
    one storage (a GGUF load wrote them so: 0.6 s of a warm load went to copying them together), else None."""
    first, at = parts[0], parts[0].storage_offset()
    for part in parts:
        if (part.untyped_storage().data_ptr() != first.untyped_storage().data_ptr() or not part.is_contiguous()
                or part.storage_offset() != at or part.shape[1:] != first.shape[1:] or part.dtype != first.dtype):
            return None
        at += part.numel()
    return first.as_strided((rows, *first.shape[1:]), first.stride())


def _embedding_dtype(embed) -> torch.dtype:
    """The activations' dtype: the embedding's (a table in its GGUF form says it without a dense weight)."""
    return embed.dtype if hasattr(embed, "dense") else embed.weight.dtype


def eligible(model) -> bool:
    """Whether `model` is one this stack computes exactly as transformers does."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in FAMILIES or not hasattr(model, "model"):
        return False
    if getattr(cfg, "use_sliding_window", False) or getattr(cfg, "hidden_act", "silu") != "silu":
        return False
    if getattr(cfg, "mlp_bias", False) or any(t != "full_attention" for t in getattr(cfg, "layer_types", None) or []):
        return False
    layers = getattr(model.model, "layers", [])
    linear_types = (q4a8.Q4A8Linear, q4a8.Q8A8Linear)
    for layer in layers:
        attn, mlp = layer.self_attn, layer.mlp
        mods = [attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj, mlp.gate_proj, mlp.up_proj, mlp.down_proj]
        if not all(isinstance(m, linear_types) for m in mods) or attn.o_proj.bias is not None:
            return False
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return (bool(layers) and heads % kv_heads == 0 and head_dim % 8 == 0
            and model.dtype in (torch.float32, torch.bfloat16) and q4a8.extension() is not None)


def lean_for(model) -> LeanForward | None:
    """Build (once) and keep in the model's Runtime its lean stack, or None where it would not compute what
    transformers computes: the lean builder the runtime is configured with (runtime.setup), run when the model is
    prepared at load, never by a forward. Built again when the model's layers were replaced (a target converted to
    another precision gets new modules) or its dtype changed; the decoder meanwhile keeps transformers' forward
    (`LeanForward.serves`)."""
    runtime = runtime_of(model)
    if runtime.lean is None or not runtime.lean.serves(model):
        runtime.lean = LeanForward(model) if eligible(model) else None
    return runtime.lean
