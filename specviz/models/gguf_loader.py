"""A transformers model built from a GGUF file, each tensor placed in the form its kernel runs.

Why this exists: transformers loads a GGUF by dequantizing every tensor to fp32, so a 1.5B Q4_K_M target (1 GB on
disk) passed through a 6 GB fp32 copy and a 7B one would need ~30 GB of RAM, although specviz's kernels need only the
file's own 4-bit bytes. Here the model is built on the meta device from the file's own configuration and filled
tensor by tensor from the memory-mapped file:

- a linear layer stored as "q4a8" (specviz's kernels): a Q4_K tensor keeps its codes and 6-bit scales
  (Q4KA8Linear), a Q6_K tensor of a target its own (Q6KA8Linear): read from the blocks, no weight formed; any other
  layer is dequantized alone to fp32 and stored as `weights.converted_linear` stores it (the q4a8 rules: int8 or a
  4-bit grid of our own), then dropped;
- stored as bf16 / int8 / int4: dequantized alone to fp32, converted, dropped; as loaded: kept as an fp32
  `nn.Linear` (the as-loaded reference the fidelity script and the bench compare with, built in memory when asked);
- the token embedding in the file's own form (`GGUFEmbedding`: a row is dequantized when its token is looked up);
  an output layer tied to it (no `output.weight` in the file) is built from the same tensor;
- norms and biases as fp32 parameters, then the whole model in the pair's dtype, as transformers' load would leave it.

Every value is what gguf's own dequantizer (the one transformers uses) gives, so a model built here computes what the
old route through the fp32 copy computed, bit for bit: the same kernels holding the same values
(tests/test_models_gguf.py). llama's q and k rows are un-permuted as transformers does (llama.cpp's converter
interleaves them for its rotary layout); a row permutation moves whole quantized rows, so it is done on the bytes.
"""
from __future__ import annotations

import hashlib
import warnings
from typing import Callable

import numpy as np
import torch

from ..errors import ModelLoadError, step
from .gguf_file import GGUFModelFile, GGUFTensor
from .lean_forward import JOINED
from .packaged import cache_dir
from .quant.kernels import Int8WeightLinear, fast_linear
from .quant import huge_pages, q4k, weights_cache
from .quant.q4a8 import LAYOUT, Q4KA8Linear, Q6KA8Linear, extension, usable
from .quant.q4a8_layout import K4_BLOCK, K6_BLOCK, TILE
from .quant.weights import STORED_KINDS, converted_linear, record_target_weights

Progress = Callable[[float, str], None]
KINDS = ("as-loaded",) + STORED_KINDS
LAYOUT_BLOCKS = {"q4k": K4_BLOCK, "q6k": K6_BLOCK}   # bytes per (tile, super-block) of each repacked form


def dequantized(t: GGUFTensor) -> torch.Tensor:
    """[rows, cols] fp32: gguf's own dequantization of the tensor (F32 as it is)."""
    from gguf import dequantize

    values = np.ascontiguousarray(dequantize(t.data, t.kind), dtype=np.float32)
    if not values.flags.writeable:   # F32 comes back as a view of the mapped file
        values = values.copy()
    return torch.from_numpy(values).reshape(t.rows, t.cols)


def _unpermuted(t: GGUFTensor, heads: int) -> GGUFTensor:
    """llama's q/k rows back in transformers' order (LlamaTensorProcessor._reverse_permute_weights, on whole rows)."""
    dim = t.rows // heads // 2
    order = np.arange(t.rows).reshape(heads, dim, 2).swapaxes(2, 1).reshape(-1)
    return GGUFTensor(t.name, t.kind, t.rows, t.cols, np.ascontiguousarray(t.data[order]))


class GGUFEmbedding(torch.nn.Module):
    """The token embedding in the GGUF's own form: the rows a step looks up are dequantized then (a few microseconds
    a token), the rest stay at the file's bytes (the 1.5B target's 151,936 x 1,536 table: 131 MB in Q4_K against
    933 MB in fp32). A row is gguf's dequantization in fp32, then the model's dtype: the values an fp32 table cast
    to that dtype would hold."""

    def __init__(self, t: GGUFTensor):
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.kind = t.rows, t.cols, t.kind
        # The table as bytes, whatever its type: an F32 or F16 table held as floats would be cast by model.to(dtype)
        # with the model's parameters (a bf16 copy numpy cannot read, or F16 values reread as F32 ones).
        # Copied into ordinary pages: a step reads a few rows of it, so 2 MB pages would buy nothing and cost the load
        # their backing (huge_pages.ordinary); copied by torch, not numpy (0.5 s for the pair's two tables).
        with warnings.catch_warnings():   # torch warns of a read-only array; it is only read
            warnings.simplefilter("ignore", UserWarning)
            self.register_buffer("raw", torch.from_numpy(t.data.view(np.uint8)).clone())
        self.register_buffer("anchor", torch.zeros(0))   # follows model.to(dtype): the dtype rows come out in

    @property
    def dtype(self) -> torch.dtype:
        return self.anchor.dtype

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    def dense(self) -> torch.Tensor:
        """The whole table, dequantized (seconds: a step never asks for it; there is no `weight`, so that code which
        reads one fails at once instead of dequantizing the table on every call)."""
        return self.rows(torch.arange(self.num_embeddings))

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        from gguf import dequantize

        picked = self.raw.index_select(0, ids.reshape(-1).to(self.raw.device)).numpy()
        values = torch.from_numpy(np.ascontiguousarray(dequantize(picked, self.kind), dtype=np.float32))
        return values.reshape(-1, self.embedding_dim).to(self.anchor.dtype)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.rows(ids).reshape(*ids.shape, self.embedding_dim).to(self.anchor.device)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, weights={self.kind.name} (dequantized on lookup)"


def repack_form(t: GGUFTensor, kind: str, strict_grid: bool) -> str | None:
    """"q4k" | "q6k": the tiles tensor `t` is repacked into from its blocks when stored as `kind`; None: another way."""
    if kind == "q4a8" and usable(t.cols):
        if t.type_name == "Q4_K":
            return "q4k"
        if t.type_name == "Q6_K" and strict_grid:
            return "q6k"
    return None


def placed_linear(t: GGUFTensor, bias: torch.Tensor | None, kind: str, strict_grid: bool,
                  memory: torch.Tensor | None = None) -> tuple[torch.nn.Module, str]:
    """The linear layer of tensor `t` stored as `kind`, and the name its layer count goes by (weights.converted_linear's
    names; "fp32" as loaded). `memory`: where a repacked layer's tiles are written (joined_memory), else fresh."""
    # The GGUF's own codes and scales, repacked from its blocks into the products' tiles: no weight is formed
    # (the extension's repack_q4k / repack_q6k, byte for byte q4a8_layout's pack_q4k / pack_q6k).
    form = repack_form(t, kind, strict_grid)
    if form is not None:
        layer = Q4KA8Linear if form == "q4k" else Q6KA8Linear
        return layer.from_packed(t.rows, t.cols, bias, _repacked(t, form, memory)), form
    linear = torch.nn.Linear(t.cols, t.rows, bias=bias is not None, device="meta")
    linear.weight = torch.nn.Parameter(dequantized(t), requires_grad=False)
    if bias is not None:
        linear.bias = torch.nn.Parameter(bias, requires_grad=False)
    if kind == "as-loaded":
        return linear, "fp32"
    if kind == "q4a8" and not usable(t.cols):
        return Int8WeightLinear(linear), "int8"
    return converted_linear(linear, kind, strict_grid)


def _tiles_shape(t: GGUFTensor, form: str) -> tuple[int, int, int]:
    supers = t.data.shape[1] // (q4k.BLOCK_BYTES if form == "q4k" else q4k.Q6_BLOCK_BYTES)   # GGUF blocks a row
    return (t.rows + TILE - 1) // TILE, supers, LAYOUT_BLOCKS[form]


def _repacked(t: GGUFTensor, form: str, memory: torch.Tensor | None = None) -> torch.Tensor:
    """Tensor `t`'s blocks repacked into `form`'s tiles ("q4k" | "q6k"), read straight from the mapped file (the
    repack only reads it: no copy of the file's bytes first) and written once into the memory they stay in (2 MB
    pages where the machine gives them: huge_pages; `memory` where given), not copied there afterwards: 0.5 s + 1.4 s
    of a warm load."""
    out = huge_pages.empty(_tiles_shape(t, form), torch.uint8) if memory is None else memory
    with warnings.catch_warnings():   # torch warns of a read-only array; the extension never writes it
        warnings.simplefilter("ignore", UserWarning)
        raw = torch.from_numpy(np.ascontiguousarray(t.data))   # a view unless llama's q/k rows were reordered
    repack = extension().repack_q4k if form == "q4k" else extension().repack_q6k
    return repack(raw, out)


def joined_memory(slots: list[str], tensor_of, kind: str, strict_grid: bool) -> dict[str, torch.Tensor]:
    """{slot: the memory its tiles are written into} for the projections the lean stack makes one product of
    (lean_forward.JOINED: q, k, v; gate, up) where they are repacked into one form, whole tiles before the last: one
    buffer, each layer's tiles right after the previous one's, so that joining them copies nothing (0.6 s of a warm
    load). `tensor_of(slot)`: the slot's GGUFTensor, or None."""
    memory: dict[str, torch.Tensor] = {}
    present = set(slots)
    for slot in slots:
        stem, _, name = slot.rpartition(".")
        group = next((g for g in JOINED if g[0] == name), None)
        if group is None or not all(f"{stem}.{n}" in present for n in group):
            continue
        tensors = [tensor_of(f"{stem}.{n}") for n in group]
        forms = {None if t is None else repack_form(t, kind, strict_grid) for t in tensors}
        if len(forms) != 1 or None in forms or any(t.rows % TILE for t in tensors[:-1]):
            continue
        form = forms.pop()
        shapes = [_tiles_shape(t, form) for t in tensors]
        if len({shape[1:] for shape in shapes}) != 1:
            continue
        whole = huge_pages.empty((sum(shape[0] for shape in shapes), *shapes[0][1:]), torch.uint8)
        at = 0
        for n, shape in zip(group, shapes):
            memory[f"{stem}.{n}"] = whole[at:at + shape[0]]
            at += shape[0]
    return memory


def _name_map(file: GGUFModelFile, layers: int):
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

    arch = next(k for k, v in MODEL_ARCH_NAMES.items() if v == file.architecture)
    return get_tensor_name_map(arch, layers)


def load_gguf_model(file: GGUFModelFile, kind: str, dtype: torch.dtype, strict_grid: bool = True,
                    progress: Progress | None = None, lo: float = 0.0, hi: float = 1.0, linear_path: str = "default"):
    """The model in `file`, its linear layers stored as `kind` (see KINDS), the rest in `dtype`; returns (model,
    layer counts by storage). `strict_grid=False` (a draft): q4a8 requantizes every layer that is not Q4_K to a 4-bit
    grid of its own, as weights.converted_linear does for a draft. `linear_path` (as loaded only): each fp32 layer put
    on that path (kernels.fast_linear: oneDNN's packed copy) as soon as it is placed, so the whole dense model and its
    packed copy never sit in memory together (14.8 GB for the packaged pair, done afterwards)."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    if kind not in KINDS:
        raise ValueError(f"unknown weights {kind!r}")
    report = progress or (lambda f, m: None)
    folder = file.meta_folder()
    config = AutoConfig.from_pretrained(str(folder))
    with init_empty_weights(include_buffers=False), _no_init():   # every weight is the file's: none initialised
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig.from_pretrained(str(folder))
    model.config._name_or_path = str(file.path)
    text = config.get_text_config()
    names = _name_map(file, text.num_hidden_layers)
    heads = {"q_proj": text.num_attention_heads, "k_proj": text.num_key_value_heads}

    def gguf_tensor(hf_name: str) -> GGUFTensor | None:
        stem, _, suffix = hf_name.rpartition(".")
        found = names.get_name(stem)
        return None if found is None else file.tensor(f"{found}.{suffix}")

    memory = joined_memory([full for full, _, _, _ in _slots(model)], lambda slot: gguf_tensor(f"{slot}.weight"),
                           kind, strict_grid)

    def place(full: str, child) -> tuple[torch.nn.Module, str]:
        t = gguf_tensor(f"{full}.weight")
        if t is None and child is model.get_output_embeddings():   # tied: the output layer is the embedding table
            t = gguf_tensor(f"{_embedding_name(model)}.weight")
        if t is None:
            raise ModelLoadError(key="gguf.tensor_missing", name=file.label, tensor=f"{full}.weight")
        if type(child) is torch.nn.Embedding:
            return GGUFEmbedding(t), "embedding"
        if file.architecture == "llama" and full.rpartition(".")[2] in heads:
            t = _unpermuted(t, heads[full.rpartition(".")[2]])
        b = gguf_tensor(f"{full}.bias")
        return placed_linear(t, None if b is None else dequantized(b).reshape(-1).clone(), kind, strict_grid,
                             memory.get(full))

    def said(i: int, n: int) -> None:
        file.drop_read_pages()   # each layer is a copy once placed: its file pages need not stay resident
        if i % 16 == 0:
            report(lo + (hi - lo) * i / n, step("load.placing", name=file.label, done=i, total=n))

    counts = _place_layers(model, _KeptLayers.for_model(model, file, kind, strict_grid, place), place, linear_path,
                           said)
    _fill_parameters(model, gguf_tensor, file.label)
    file.release()   # everything placed is a copy: the mapped pages need not stay in this process
    if kind in STORED_KINDS:
        record_target_weights(model, kind)
    huge_pages.into_huge_pages(model, tuple(weights_cache.STORED.values()))   # read faster; a kept layer already is
    if next(model.parameters()).dtype != dtype:   # as transformers' load then a cast left it (a stored layer's
        model.to(dtype)                            # bf16 scales stay bf16 in an fp32 model)
    return model.eval(), counts


def _no_init():
    """transformers' own switch for skipping its weight initialisation (as its from_pretrained does): on the meta
    device it only costs time, ~0.06 s a model."""
    try:
        from transformers.initialization import no_init_weights   # transformers 5
    except ImportError:
        from transformers.modeling_utils import no_init_weights   # 4.x
    return no_init_weights()


def _slots(model) -> list[tuple[str, torch.nn.Module, str, torch.nn.Module]]:
    """(qualified name, parent, attribute, module) of every linear layer and embedding table, in module order."""
    return [(f"{prefix}.{name}" if prefix else name, parent, name, child) for prefix, parent in model.named_modules()
            for name, child in parent.named_children() if type(child) in (torch.nn.Linear, torch.nn.Embedding)]


def _place_layers(model, kept: "_KeptLayers", place, linear_path: str, said) -> dict[str, int]:
    """Every linear layer and the embedding placed (from the kept entry where it holds them); the layer counts."""
    slots = _slots(model)
    counts: dict[str, int] = {}
    for i, (full, parent, name, child) in enumerate(slots):
        layer, got = kept.get(full) or place(full, child)
        if linear_path != "default" and type(layer) is torch.nn.Linear:
            layer = fast_linear(layer, linear_path)
        setattr(parent, name, layer)
        kept.made(full, layer, got)
        if got != "embedding":
            counts[got] = counts.get(got, 0) + 1
        said(i, len(slots))
    kept.save()
    return counts


def _fill_parameters(model, gguf_tensor, label: str) -> None:
    """Every parameter still on the meta device (the norms) from its tensor in the file, in fp32."""
    for hf_name, param in list(model.named_parameters()):
        if param.is_meta:
            t = gguf_tensor(hf_name)
            if t is None:
                raise ModelLoadError(key="gguf.tensor_missing", name=label, tensor=hf_name)
            owner, _, attr = hf_name.rpartition(".")
            setattr(model.get_submodule(owner), attr,
                    torch.nn.Parameter(dequantized(t).reshape(param.shape).clone(), requires_grad=False))


def _embedding_name(model) -> str:
    emb = model.get_input_embeddings()
    return next(n for n, m in model.named_modules() if m is emb)


def largest_linear(file: GGUFModelFile) -> tuple[str, GGUFTensor]:
    """The file's largest linear tensor other than the output layer (what the load's weight probe times): of those
    of the largest size, one of the type holding most of the layers' bytes (a Q4_K_M file's Q4_K ffn_gate, not the
    Q6_K ffn_down of its first layer, which is as large)."""
    linear = [(n, t) for n, t in ((n, file.tensor(n)) for n in file.names if n.startswith("blk.") and
                                  n.endswith(".weight")) if t.cols > 1 and t.rows > 1]
    if not linear:
        return None
    held: dict[str, int] = {}
    for _, t in linear:
        held[t.type_name] = held.get(t.type_name, 0) + t.data.nbytes
    size = max(t.rows * t.cols for _, t in linear)
    return max(((n, t) for n, t in linear if t.rows * t.cols == size), key=lambda nt: held[nt[1].type_name])


# Layers requantized at load for specviz's kernels (a draft's Q5_0 / Q8_0 / Q6_K layers onto a 4-bit grid of its
# own: ~6 s of the packaged draft's load on 2 cores) are kept in the cache; the layers repacked from their blocks
# (Q4_K, a target's Q6_K) and the embedding are not: they take no longer to place than to read back. The other
# precisions (bf16, int8, int4: the bench's and the tests' baselines) are made in memory when asked, never kept.
REQUANTIZED = ("q4h", "q4a8", "q8a8")


class _KeptLayers:
    """A model's requantized layers as stored in ``<cache>/converted/gguf-<key>.safetensors`` (weights_cache's
    format), keyed by the file (path, size, modification time), the storage kind, the grid and torch's and the
    layouts' versions. Before an entry is trusted, the smallest layer of each stored class is placed afresh from the
    file and must match it bit for bit; otherwise the entry is dropped and the layers are made again."""

    def __init__(self, file: GGUFModelFile, kind: str, strict_grid: bool, slots: dict, place):
        self._cache = weights_cache
        key = f"{file.key}-{kind}-{int(strict_grid)}-{LAYOUT}-{weights_cache.VERSION}-{torch.__version__}"
        self.path = cache_dir() / "converted" / f"gguf-{hashlib.sha256(key.encode()).hexdigest()[:24]}.safetensors"
        self.layers: dict[str, tuple[torch.nn.Module, str]] = {}
        self._made: dict[str, tuple[torch.nn.Module, str]] = {}
        self._wanted = kind == "q4a8"
        if self._wanted:
            self.layers = self._read(slots, place)

    def _read(self, slots: dict, place) -> dict:
        found = self._cache.read_layers(self.path)
        if found is None:
            return {}
        layers, counted = found
        smallest: dict[str, tuple[int, str]] = {}
        for name, (layer, got) in layers.items():
            size = layer.in_features * layer.out_features
            if name not in slots:
                return self._drop()
            if got not in smallest or size < smallest[got][0]:
                smallest[got] = (size, name)
        for _, name in smallest.values():
            fresh, _ = place(name, slots[name])
            pairs = list(zip(fresh.buffers(), layers[name][0].buffers()))
            if type(fresh) is not type(layers[name][0]) or not all(torch.equal(a, b) for a, b in pairs):
                return self._drop()
        self._cache.touch(self.path)
        return layers

    def _drop(self) -> dict:
        self.path.unlink(missing_ok=True)
        return {}

    @classmethod
    def for_model(cls, model, file: GGUFModelFile, kind: str, strict_grid: bool, place) -> "_KeptLayers":
        return cls(file, kind, strict_grid, {full: child for full, _, _, child in _slots(model)}, place)

    def get(self, name: str) -> tuple[torch.nn.Module, str] | None:
        return self.layers.get(name)

    def made(self, name: str, layer: torch.nn.Module, got: str) -> None:
        if self._wanted and not self.layers and got in REQUANTIZED:
            self._made[name] = (layer, got)

    def save(self) -> None:
        if self._made:
            self._cache.save_layers(self._made, self.path)
