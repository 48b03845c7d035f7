"""Models straight from a GGUF file (specviz.models.gguf_file, gguf_loader, gguf_pair: load_pair's GGUF route).

Tiny qwen2 and llama models are written here with gguf's own GGUFWriter (hidden size 256, so Q4_K and Q6_K
super-blocks fit; a 38-token byte-level BPE vocabulary in the file's metadata, read by transformers' own GGUF
tokenizer conversion), then loaded two ways: specviz's loader and transformers' from_pretrained(gguf_file=...),
which dequantizes every tensor with gguf's own dequantizer. gguf-py 0.19 quantizes no K-quant type
(gguf.quants.quantize raises NotImplementedError for Q4_K and Q6_K), so the blocks are made here by a plain
min/max quantizer (`q4k_quantized`, `q6k_quantized`) whose output gguf's dequantizer reads back within a step.

The q4a8 kernels are the session's (conftest's `ext`), loaded from the default cache before this module points
SPECVIZ_CACHE at a folder of its own (`module_cache`): the files' metadata folders, tensor indexes and converted
layers go there, the compiled kernels stay where every test module finds them.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gguf_blocks import q4k_blocks, q6k_blocks
from specviz.errors import ModelLoadError
from specviz.models import gguf_loader, gguf_pair, loading
from specviz.models.gguf_file import GGUFModelFile
from specviz.models.quant import q4a8, q4a8_layout, q4k

pytestmark = pytest.mark.usefixtures("one_thread", "module_cache")

LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
MERGES = ["Ġ t", "t h", "Ġt h", "h e", "i n", "e r", "a n", "Ġ a", "o n", "r e"]
TOKENS = LETTERS + ["Ġ"] + [m.replace(" ", "") for m in MERGES] + ["<|endoftext|>"]
EOS = len(TOKENS) - 1
PROMPTS = ["the cat sat on the mat", "in an hour", "there", "zebra queen jumps over"]
STEPS = 6


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    """SPECVIZ_CACHE in a folder of this module's, the compiled kernels first loaded from the default cache (only
    where they are already built there: a build is the `ext` fixture's, for the tests that ask for it)."""
    if q4a8.built():
        q4a8.extension()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECVIZ_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("SPECVIZ_MODELS_DIR", raising=False)
        yield


# --------------------------------------------------------------------------- K-quant blocks made here


def _fp16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16)


def q4k_quantized(w: np.ndarray) -> np.ndarray:
    """fp32 [rows, cols] -> Q4_K blocks [rows, cols/256 * 144] uint8 (per group of 32: its min and max on a 6-bit
    scale and minimum of the super-block's fp16 d and dmin; codes to nearest)."""
    rows, cols = w.shape
    x = w.astype(np.float32).reshape(-1, 8, 32)
    lo = np.minimum(x.min(-1), 0)
    scale = (x.max(-1) - lo) / 15
    d, dmin = _fp16(scale.max(-1) / 63), _fp16((-lo).max(-1) / 63)
    d32, dmin32 = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.clip(np.round(scale / np.where(d32 > 0, d32, 1)), 0, 63).astype(np.uint8)
    m = np.clip(np.round(-lo / np.where(dmin32 > 0, dmin32, 1)), 0, 63).astype(np.uint8)
    step, low = (d32 * sc)[..., None], (dmin32 * m)[..., None]
    q = np.where(step > 0, np.round((x + low) / np.where(step > 0, step, 1)), 0)
    q = np.clip(q, 0, 15).astype(np.uint8)
    scales = np.zeros((len(x), 12), np.uint8)   # gguf's Q4_K.get_scale_min, inverted
    scales[:, 0:4] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    scales[:, 4:8] = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4)
    qs = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(len(x), 128)   # 32 bytes: group 2c low nibble, 2c+1 high
    blocks = np.concatenate([d.reshape(-1, 1).view(np.uint8), dmin.reshape(-1, 1).view(np.uint8), scales, qs], 1)
    return np.ascontiguousarray(blocks).reshape(rows, -1)


def q6k_quantized(w: np.ndarray) -> np.ndarray:
    """fp32 [rows, cols] -> Q6_K blocks [rows, cols/256 * 210] uint8 (per 16: an int8 sub-scale of the
    super-block's fp16 d, codes q in -32..31 to nearest)."""
    rows, cols = w.shape
    x = w.astype(np.float32).reshape(-1, 16, 16)
    scale = np.abs(x).max(-1) / 31
    d = _fp16(scale.max(-1) / 127)
    d32 = d.astype(np.float32)[:, None]
    sc = np.clip(np.round(scale / np.where(d32 > 0, d32, 1)), -128, 127).astype(np.int8)
    step = (d32 * sc)[..., None]
    q = np.where(step != 0, np.round(x / np.where(step != 0, step, 1)), 0)
    codes = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(-1, 2, 128)   # two halves of 128 weights
    low, high = codes & 15, codes >> 4
    ql = (low[:, :, :64] | (low[:, :, 64:] << 4)).reshape(-1, 128)
    qh = (high[:, :, 0:32] | (high[:, :, 32:64] << 2) | (high[:, :, 64:96] << 4) | (high[:, :, 96:] << 6))
    blocks = np.concatenate([ql, qh.reshape(-1, 64), sc.view(np.uint8), d.reshape(-1, 1).view(np.uint8)], 1)
    return np.ascontiguousarray(blocks).reshape(rows, -1)


def _dequantize(blocks: np.ndarray, kind) -> np.ndarray:
    from gguf import dequantize

    return np.asarray(dequantize(blocks, kind), dtype=np.float32)


def test_the_quantizers_here_write_blocks_gguf_reads_back():
    """The helpers above are what the model tests stand on: gguf's dequantizer reads their blocks back within about
    half a step of the weights (Q4_K: 1/30 of a group's range; Q6_K: 1/62 of a sub-block's largest value; 1.2 x
    that for the step's own rounding to a 6- or 8-bit multiple of the fp16 d)."""
    from gguf import GGMLQuantizationType as T

    w = np.random.default_rng(0).normal(0, 0.05, (32, 512)).astype(np.float32)
    back4 = _dequantize(q4k_quantized(w), T.Q4_K).reshape(w.shape)
    g = w.reshape(-1, 32)
    assert (np.abs(back4 - w).reshape(-1, 32).max(-1) <= (g.max(-1) - np.minimum(g.min(-1), 0)) / 30 * 1.2).all()
    back6 = _dequantize(q6k_quantized(w), T.Q6_K).reshape(w.shape)
    g = np.abs(w.reshape(-1, 16)).max(-1)
    assert (np.abs(back6 - w).reshape(-1, 16).max(-1) <= g / 62 * 1.2).all()


# --------------------------------------------------------------------------- 1. the extension's repacking


def _q4k_with_zero_steps(rows: int, cols: int, seed: int) -> np.ndarray:
    """Random Q4_K blocks (tests/gguf_blocks.py) with a group whose 6-bit scale is 0 (its high bits, which belong
    to group j+4, kept), one with sc = 0 among groups 4-7, and a super-block whose d is 0."""
    raw = q4k_blocks(rows, cols, seed).copy()
    blocks = raw.reshape(-1, 144)
    blocks[0, 4 + 1] &= 0xC0               # group 1's sc (low 6 bits of byte 1 of the scales)
    mid = len(blocks) // 2
    blocks[mid, 4 + 8 + 2] &= 0xF0         # group 6's sc: low nibble of scale byte 10 ...
    blocks[mid, 4 + 2] &= 0x3F             # ... and its high bits (top of scale byte 2)
    blocks[-1, 0:2] = 0                    # d = 0: every group of the last super-block steps 0
    return raw


def _q6k_with_zero_steps(rows: int, cols: int, seed: int) -> np.ndarray:
    raw = q6k_blocks(rows, cols, seed).copy()
    blocks = raw.reshape(-1, 210)
    blocks[0, 192 + 3] = 0                 # sub-block 3's int8 scale
    blocks[-1, 208:210] = 0                # d = 0
    return raw


@pytest.mark.parametrize("rows", [40, 16, 1])
def test_repack_q4k_is_pack_q4k_of_the_blocks_byte_for_byte(ext, rows):
    raw = _q4k_with_zero_steps(rows, 512, seed=rows)
    parts = q4k.q4k_parts(raw, rows)
    assert not bool((parts[2].float() * parts[1].float().repeat_interleave(8, 1) > 0).all())   # zero steps present
    expected = q4a8_layout.pack_q4k(*parts)
    got = ext.repack_q4k(torch.from_numpy(raw))
    assert got.dtype == torch.uint8 and got.shape == expected.shape
    assert torch.equal(got, expected)
    # Written into memory given (a load's 2 MB pages): the same bytes, a partial last tile's padding zeroed
    given = torch.full(expected.shape, 0xAB, dtype=torch.uint8)
    assert ext.repack_q4k(torch.from_numpy(raw), given).data_ptr() == given.data_ptr()
    assert torch.equal(given, expected)
    with pytest.raises(RuntimeError, match="out must be"):
        ext.repack_q4k(torch.from_numpy(raw), torch.empty(expected.shape[0] + 1, *expected.shape[1:], dtype=torch.uint8))


@pytest.mark.parametrize("rows", [40, 16, 1])
def test_repack_q6k_is_pack_q6k_of_the_blocks_byte_for_byte(ext, rows):
    raw = _q6k_with_zero_steps(rows, 512, seed=rows)
    parts = q4k.q6k_parts(raw, rows)
    assert bool((parts[2] == 0).any()) and bool((parts[2] < 0).any())   # a zero and negative sub-scales
    expected = q4a8_layout.pack_q6k(*parts)
    got = ext.repack_q6k(torch.from_numpy(raw))
    assert got.dtype == torch.uint8 and got.shape == expected.shape
    assert torch.equal(got, expected)
    # Written into memory given (a load's 2 MB pages): the same bytes, a partial last tile's padding zeroed
    given = torch.full(expected.shape, 0xAB, dtype=torch.uint8)
    assert ext.repack_q6k(torch.from_numpy(raw), given).data_ptr() == given.data_ptr()
    assert torch.equal(given, expected)
    with pytest.raises(RuntimeError, match="out must be"):
        ext.repack_q6k(torch.from_numpy(raw), torch.empty(expected.shape[0] + 1, *expected.shape[1:], dtype=torch.uint8))


def test_the_parts_codes_are_the_exact_codes_of_ggufs_own_dequantization():
    """q4k_parts / q6k_parts read the codes from the blocks; exact_codes / exact_q6k_codes find them from the weights
    gguf dequantizes: the same codes, zero steps included (code 0 for Q4_K, 32 for Q6_K)."""
    from gguf import GGMLQuantizationType as T

    raw = _q4k_with_zero_steps(40, 512, seed=3)
    codes, d, sc, dmin, m = q4k.q4k_parts(raw, 40)
    weight = torch.from_numpy(_dequantize(raw, T.Q4_K)).reshape(40, 512)
    exact = q4k.exact_codes(weight, (d, sc, dmin, m))
    assert exact is not None and torch.equal(codes, exact)
    assert bool((codes[0, 32:64] == 0).all())   # group 1 of the first super-block: step 0, code 0

    raw6 = _q6k_with_zero_steps(40, 512, seed=4)
    codes6, d6, sc6 = q4k.q6k_parts(raw6, 40)
    weight6 = torch.from_numpy(_dequantize(raw6, T.Q6_K)).reshape(40, 512)
    exact6 = q4k.exact_q6k_codes(weight6, (d6, sc6))
    assert exact6 is not None and torch.equal(codes6, exact6)
    assert bool((codes6[0, 48:64] == 32).all())


# --------------------------------------------------------------------------- tiny GGUF files


def _hf_model(arch: str, seed: int, tied: bool):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config_cls, model_cls = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "llama": (LlamaConfig, LlamaForCausalLM)}[arch]
    torch.manual_seed(seed)
    config = config_cls(vocab_size=len(TOKENS), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                        tie_word_embeddings=tied, eos_token_id=EOS, bos_token_id=None, pad_token_id=None)
    model = model_cls(config).eval()
    with torch.no_grad():   # random init is near-uniform: opinionated logits, distinct greedy paths
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.08)
        if not tied:
            model.lm_head.weight.mul_(3)
    return model


# Which tensors a "quantized" file stores in which type (as a Q4_K_M file does: Q6_K for attn_v, ffn_down and the
# output layer, Q4_K for the rest, norms and biases F32).
def _quant_type(gguf_name: str):
    from gguf import GGMLQuantizationType as T

    if gguf_name.endswith(".bias") or "norm" in gguf_name:
        return T.F32
    if gguf_name == "output.weight" or any(k in gguf_name for k in (".attn_v.", ".ffn_down.")):
        return T.Q6_K
    return T.Q4_K


def write_model_gguf(path, arch: str, model, quantized: bool = False, tokens=TOKENS, arch_name: str | None = None,
                     type_of=None) -> None:
    """`model` (a transformers qwen2 or llama) as llama.cpp's converter writes it: its hyperparameters, a byte-level
    BPE tokenizer (gpt2, pre qwen2 / llama-bpe), each tensor under GGUF's name; llama's q and k rows permuted for
    llama.cpp's rotary layout; a tied output layer not written. `quantized`: Q4_K / Q6_K blocks (`_quant_type`)."""
    import gguf
    from gguf import GGMLQuantizationType as T

    cfg = model.config
    writer = gguf.GGUFWriter(str(path), arch_name or arch)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_rope_freq_base(float(getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]))
    if arch == "llama":
        writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2" if arch == "qwen2" else "llama-bpe")
    writer.add_token_list(list(tokens))
    writer.add_token_types([1] * (len(tokens) - 1) + [3])   # the last, <|endoftext|>, a control token
    writer.add_token_merges(MERGES)
    writer.add_eos_token_id(EOS)
    names = gguf.get_tensor_name_map(next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch),
                                     cfg.num_hidden_layers)
    for name, p in model.state_dict().items():
        stem, _, suffix = name.rpartition(".")
        if stem == "lm_head" and cfg.tie_word_embeddings:
            continue
        gname = f"{names.get_name(stem)}.{suffix}"
        w = p.detach().float().numpy()
        if arch == "llama" and stem.endswith(("q_proj", "k_proj")):   # llama.cpp's convert_hf_to_gguf permute
            heads = cfg.num_attention_heads if stem.endswith("q_proj") else cfg.num_key_value_heads
            w = w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        kind = (type_of or _quant_type)(gname) if quantized else T.F32
        if kind == T.Q4_K:
            writer.add_tensor(gname, q4k_quantized(w), raw_dtype=T.Q4_K)
        elif kind == T.Q6_K:
            writer.add_tensor(gname, q6k_quantized(w), raw_dtype=T.Q6_K)
        elif kind == T.F16:
            writer.add_tensor(gname, np.ascontiguousarray(w, dtype=np.float16))
        elif kind == T.BF16:
            writer.add_tensor(gname, gguf.quants.quantize(np.ascontiguousarray(w), T.BF16), raw_dtype=T.BF16)
        else:
            writer.add_tensor(gname, np.ascontiguousarray(w, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{(arch, "f32" | "quant"): path}: a tied qwen2 and an untied llama, each in F32 and in Q4_K / Q6_K."""
    folder = tmp_path_factory.mktemp("gguf")
    out = {}
    for arch, seed, tied in (("qwen2", 1, True), ("llama", 2, False)):
        model = _hf_model(arch, seed, tied)
        for kind in ("f32", "quant"):
            out[arch, kind] = folder / f"tiny-{arch}-{kind}.gguf"
            write_model_gguf(out[arch, kind], arch, model, quantized=kind == "quant")
    return out


def transformers_model(path):
    """transformers' own load of the file: every tensor dequantized by gguf to fp32."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def specviz_model(path, kind: str, dtype=torch.float32):
    file = GGUFModelFile(path)
    model, counts = gguf_loader.load_gguf_model(file, kind, dtype)
    from transformers import AutoTokenizer

    return model, AutoTokenizer.from_pretrained(str(file.tokenizer_folder())), counts


@torch.inference_mode()
def greedy(model, ids: list[int], steps: int = STEPS) -> tuple[list[int], torch.Tensor]:
    """`steps` greedy tokens after `ids` (full forwards, no cache) and the logits of every step [steps, vocab]."""
    ids, logits = list(ids), []
    for _ in range(steps):
        last = model(torch.tensor([ids])).logits[0, -1].float()
        logits.append(last)
        ids.append(int(last.argmax()))
    return ids[-steps:], torch.stack(logits)


def _prompt_ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False).input_ids


# --------------------------------------------------------------------------- 2. the models


def _kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per row, in nats."""
    return torch.nn.functional.kl_div(q_logits.log_softmax(-1), p_logits.log_softmax(-1), log_target=True,
                                      reduction="none").sum(-1)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_an_f32_file_loads_as_transformers_loads_it(files, arch):
    """An F32 file as loaded: the same tokenizer, the same greedy tokens and the same logits, bit for bit, as
    transformers' own load of the file (and the same tokens as the model the file was written from). For llama
    this checks that q and k rows are un-permuted as transformers does: left permuted, the rotary embedding pairs
    the wrong dimensions and the logits move."""
    path = files[arch, "f32"]
    ref, ref_tok = transformers_model(path)
    model, tok, counts = specviz_model(path, "as-loaded")
    assert counts == {"fp32": 15}   # 7 linear layers a block, 2 blocks, and the output layer
    assert isinstance(model.get_input_embeddings(), gguf_loader.GGUFEmbedding)
    assert ref.config.tie_word_embeddings == (arch == "qwen2") == model.config.tie_word_embeddings
    source = _hf_model(arch, *{"qwen2": (1, True), "llama": (2, False)}[arch])
    for text in PROMPTS:
        ids = _prompt_ids(ref_tok, text)
        assert ids == _prompt_ids(tok, text) and len(ids) > 1
        want, want_logits = greedy(ref, ids)
        got, got_logits = greedy(model, ids)
        assert got == want == greedy(source, ids)[0], text
        assert torch.equal(got_logits, want_logits), (text, (got_logits - want_logits).abs().max())


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_quantized_file_as_loaded_is_transformers_dequantized_model_bit_for_bit(files, arch):
    """Q4_K and Q6_K tensors dequantized one layer at a time (and the embedding on lookup): the logits of
    transformers' load, which dequantizes the whole file with gguf, exactly."""
    path = files[arch, "quant"]
    ref, ref_tok = transformers_model(path)
    model, _, counts = specviz_model(path, "as-loaded")
    assert counts == {"fp32": 15}
    assert model.get_input_embeddings().kind.name == "Q4_K"
    for text in PROMPTS:
        ids = _prompt_ids(ref_tok, text)
        want, want_logits = greedy(ref, ids)
        got, got_logits = greedy(model, ids)
        assert got == want, text
        assert torch.equal(got_logits, want_logits), (text, (got_logits - want_logits).abs().max())


def _int8_activations(model) -> list:
    """Hooks rounding every linear layer's input to int8 per row and block of 32, as the q4a8 kernels do
    (q4a8_layout.quantize_reference), the product then in fp32: the kernels' one approximation, in PyTorch."""
    from specviz.models.quant.q4a8_layout import quantize_reference

    def rounded(module, args):
        x = args[0]
        q, d, _, _ = quantize_reference(x.reshape(-1, x.shape[-1]))
        return ((q.float().reshape(q.shape[0], -1, 32) * d[..., None]).reshape(x.shape),)

    return [m.register_forward_pre_hook(rounded) for m in model.modules() if isinstance(m, torch.nn.Linear)]


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_quantized_file_on_the_q4a8_kernels_computes_the_file_with_int8_activations(ext, files, arch):
    """kind="q4a8": every Q4_K tensor a Q4KA8Linear and every Q6_K one a Q6KA8Linear (a target's), repacked from
    the blocks. The weights are the file's exactly (the repack tests above); what the kernels change is the
    activations, rounded to int8 per block of 32 (a step of 1/127 of the block's largest value). The bound: the
    next-token distributions of transformers' fp32 model and this one, teacher-forced along transformers' greedy
    path, differ by at most 0.02 nats (KL) at every position, and by no more than 1.5 times what the same int8
    rounding done in PyTorch on transformers' model costs (+1e-3 nats: a rounding tie can fall either way in a
    sum taken in another order). Measured here: 4e-4 to 7e-3 nats, either way."""
    path = files[arch, "quant"]
    ref, ref_tok = transformers_model(path)
    model, _, counts = specviz_model(path, "q4a8")
    assert counts == {"qwen2": {"q4k": 11, "q6k": 4}, "llama": {"q4k": 10, "q6k": 5}}[arch]
    layers = model.model.layers[0]
    assert type(layers.self_attn.q_proj) is q4a8.Q4KA8Linear and type(layers.mlp.down_proj) is q4a8.Q6KA8Linear
    assert type(model.lm_head) is (q4a8.Q4KA8Linear if arch == "qwen2" else q4a8.Q6KA8Linear)   # tied: token_embd
    for text in PROMPTS:
        ids = _prompt_ids(ref_tok, text)
        seq = torch.tensor([ids + greedy(ref, ids)[0]])
        with torch.inference_mode():
            want, got = ref(seq).logits[0], model(seq).logits[0]
            hooks = _int8_activations(ref)
            try:
                rounded = ref(seq).logits[0]
            finally:
                for h in hooks:
                    h.remove()
        kl, cost = _kl(want, got), _kl(want, rounded)
        assert float(kl.max()) < 0.02, (text, kl)
        assert float(kl.mean()) <= 1.5 * float(cost.mean()) + 1e-3, (text, kl, cost)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_every_q4k_and_q6k_layer_on_the_kernels_holds_transformers_dequantized_weight(ext, files, arch):
    """The layers repacked from the file's blocks hold the very weights transformers' load dequantizes, every one
    bit for bit (llama's q and k rows un-permuted on the bytes; qwen2's tied output layer from the embedding table)."""
    path = files[arch, "quant"]
    ref, _ = transformers_model(path)
    model, _, counts = specviz_model(path, "q4a8")
    want = dict(ref.named_modules())
    stored = {n: m for n, m in model.named_modules() if isinstance(m, (q4a8.Q4KA8Linear, q4a8.Q6KA8Linear))}
    assert len(stored) == counts["q4k"] + counts["q6k"] == 15
    assert [n for n, m in stored.items() if not torch.equal(m.dense_weight(), want[n].weight)] == []


def _side_by_side(layers: list) -> bool:
    """Whether the layers' tiles lie one after another in one storage."""
    first = layers[0].packed
    at = first.data_ptr()
    for layer in layers:
        if layer.packed.untyped_storage().data_ptr() != first.untyped_storage().data_ptr() or layer.packed.data_ptr() != at:
            return False
        at += layer.packed.numel()
    return True


def test_tensor_sizes_are_each_tensors_rows_and_bytes(files):
    """GGUFModelFile.tensor_sizes (the bytes a token reads, for llama.cpp's roofline in the synthetic script): from
    the index, the rows and bytes of what `tensor` reads."""
    file = GGUFModelFile(files["llama", "quant"])
    sizes = file.tensor_sizes()
    assert set(sizes) == set(file.names)
    for name, (rows, size) in sizes.items():
        t = file.tensor(name)
        assert (rows, size) == (t.rows, t.data.nbytes), name


def test_projections_made_one_product_are_written_side_by_side_and_joined_without_a_copy(ext, files, tmp_path):
    """gguf_loader.joined_memory: q, k and v (and gate and up) repacked into one form are written one after another
    into one buffer, so that the lean stack's one product of them is that buffer (no copy at load); a group of mixed
    forms (the Q4_K_M-like file's Q6_K v) is left apart. Either way each layer holds transformers' dequantized weight
    and the lean stack computes transformers' logits bit for bit."""
    from gguf import GGMLQuantizationType as T
    from specviz.models import lean_forward
    from specviz.models.prepare import prepare_models
    from specviz.runtime.decoding import forward_logits, prefill, transformers_forwards

    all_q4k = tmp_path / "tiny-qwen2-all-q4k.gguf"
    write_model_gguf(all_q4k, "qwen2", _hf_model("qwen2", 3, True), quantized=True,
                     type_of=lambda n: T.F32 if n.endswith(".bias") or "norm" in n else T.Q4_K)
    for path, joined in ((files["qwen2", "quant"], {"gate_up"}), (all_q4k, {"qkv", "gate_up"})):
        model, _, _ = specviz_model(path, "q4a8")
        want = dict(transformers_model(path)[0].named_modules())
        names = {n: m for n, m in model.named_modules() if isinstance(m, (q4a8.Q4KA8Linear, q4a8.Q6KA8Linear))}
        assert [n for n, m in names.items() if not torch.equal(m.dense_weight(), want[n].weight)] == []
        groups = {layer: {"qkv": [layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj],
                          "gate_up": [layer.mlp.gate_proj, layer.mlp.up_proj]} for layer in model.model.layers}
        for by_name in groups.values():
            assert {name for name, layers in by_name.items() if _side_by_side(layers)} == joined, path.name
        prepare_models(model)
        lean = lean_forward.lean_for(model)
        for layer, stacked in zip(model.model.layers, lean.layers):
            packed = stacked.gate_up.parts[0][0]
            assert packed.data_ptr() == layer.mlp.gate_proj.packed.data_ptr()   # the same memory, not a copy
            assert len(stacked.qkv.parts) == (1 if "qkv" in joined else 3)
        ids = torch.tensor([1, 5, 9, 2, 7, 3])
        with torch.inference_mode():
            got = forward_logits(model, ids[3:], prefill(model, ids[None, :4]), 3)
            with transformers_forwards():
                expected = forward_logits(model, ids[3:], prefill(model, ids[None, :4]), 3)
        assert torch.equal(got, expected), path.name


def test_the_weight_probe_times_a_layer_of_the_files_main_type_as_the_load_places_it(ext, tmp_path, monkeypatch):
    """The load's weight probe (gguf_pair._probe_gguf) times, of the largest layers, one of the type holding most
    of the bytes (here a Q6_K ffn_down is written first and is as large as the Q4_K ones), and its q4a8 variant is
    the layer the load places from the blocks (Q4KA8Linear), not a requantization of the dense weight."""
    from gguf import GGMLQuantizationType as T
    from specviz.models.quant import weights

    path = tmp_path / "down-first.gguf"
    _small_gguf(path, "qwen2", {"output_norm.weight": (np.ones(256, np.float32), None),
                                "blk.0.ffn_down.weight": (q6k_blocks(256, 512, 1), T.Q6_K),
                                "blk.0.ffn_gate.weight": (q4k_blocks(512, 256, 2), T.Q4_K),
                                "blk.0.ffn_up.weight": (q4k_blocks(512, 256, 3), T.Q4_K)})
    file = GGUFModelFile(path)
    name, t = gguf_loader.largest_linear(file)
    assert (name, t.type_name) == ("blk.0.ffn_gate.weight", "Q4_K")
    timed = []
    real = weights.probe_layer

    def probe_layer(layer, kinds, **kw):
        timed.append(kw["made"])
        return real(layer, kinds, repeats=1, **{k: v for k, v in kw.items() if k != "repeats"})
    monkeypatch.setattr(gguf_pair, "probe_layer", probe_layer)
    result = gguf_pair._probe_gguf(file)
    assert result["layer"] == "256x512 Q4_K" and type(timed[0]["q4a8"]) is q4a8.Q4KA8Linear
    assert result["choice"] in result["ms"]


# --------------------------------------------------------------------------- 3. refusals, one sentence each


def _one_sentence(e: ModelLoadError, key: str) -> str:
    text = str(e)
    assert e.key == key and text and "\n" not in text and text.count(". ") == 0, text
    return text


def _small_gguf(path, arch: str, tensors: dict) -> None:
    from gguf_blocks import write_gguf

    write_gguf(path, tensors, arch)


@pytest.mark.parametrize("arch", ["gpt2", "phi3"])
def test_an_unsupported_architecture_is_refused_naming_the_supported_ones(tmp_path, arch):
    path = tmp_path / f"{arch}.gguf"
    _small_gguf(path, arch, {"token_embd.weight": (np.zeros((8, 256), np.float32), None)})
    with pytest.raises(ModelLoadError) as e:
        GGUFModelFile(path, "draft")
    text = _one_sentence(e.value, "gguf.architecture")
    assert f"is a {arch} model" in text and text.endswith("qwen2, llama") and path.name in text
    assert text.startswith("draft")


@pytest.mark.parametrize("kind", ["IQ4_NL", "Q8_1"])
def test_an_unsupported_tensor_type_is_refused_naming_the_supported_ones(tmp_path, kind):
    """Raw bytes of the right size for the type (gguf's own block sizes): the file parses, the type is what is
    refused, before any tensor is read."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T

    from specviz.models.gguf_file import supported_types

    t = T[kind]
    block, size = GGML_QUANT_SIZES[t]
    path = tmp_path / "odd.gguf"
    _small_gguf(path, "qwen2", {"output_norm.weight": (np.ones(256, np.float32), None),
                                "blk.0.attn_q.weight": (np.zeros((16, 256 // block * size), np.uint8), t)})
    with pytest.raises(ModelLoadError) as e:
        GGUFModelFile(path)
    text = _one_sentence(e.value, "gguf.type")
    assert f"blk.0.attn_q.weight as {kind}" in text and text.endswith(supported_types())
    assert "Q4_K" in supported_types() and "Q6_K" in supported_types() and kind not in supported_types()


def _last_tensor_end(path) -> int:
    from gguf import GGUFReader

    return max(int(t.data_offset) + int(t.n_bytes) for t in GGUFReader(str(path)).tensors)


@pytest.mark.parametrize("cut", ["half", "header", "last-byte"])
def test_a_truncated_file_is_refused(files, tmp_path, cut):
    source = files["qwen2", "quant"]
    blob = source.read_bytes()
    keep = {"half": len(blob) // 2, "header": 64, "last-byte": _last_tensor_end(source) - 1}[cut]
    path = tmp_path / "cut.gguf"
    path.write_bytes(blob[:keep])
    with pytest.raises(ModelLoadError) as e:
        GGUFModelFile(path, "target")
    assert "cut.gguf is not a complete GGUF file" in _one_sentence(e.value, "gguf.unreadable")


def test_the_tensor_index_is_kept_and_a_changed_file_is_read_again(files, tmp_path, monkeypatch):
    """The second open of a file reads no header (its tensor index and metadata folder come from the cache) and
    finds the same tensors; a file changed since (here cut short) is parsed again, and refused, not read through
    the index kept for its old bytes."""
    from specviz.models import gguf_file

    path = tmp_path / "kept.gguf"
    path.write_bytes(files["llama", "quant"].read_bytes())
    first = GGUFModelFile(path)
    folder, tokenizer = first.meta_folder(), first.tokenizer_folder()

    def no_header(p):
        raise AssertionError("the header was parsed again")

    monkeypatch.setattr(gguf_file, "_reader", no_header)
    again = GGUFModelFile(path)
    assert again.meta_folder() == folder and again.tokenizer_folder() == tokenizer and again.names == first.names and again.architecture == "llama"
    for name in first.names:
        a, b = first.tensor(name), again.tensor(name)
        assert (a.kind, a.rows, a.cols) == (b.kind, b.rows, b.cols) and np.array_equal(a.data, b.data)
    monkeypatch.undo()
    path.write_bytes(files["llama", "quant"].read_bytes()[:_last_tensor_end(path) - 1])
    with pytest.raises(ModelLoadError) as e:
        GGUFModelFile(path)
    _one_sentence(e.value, "gguf.unreadable")


def test_the_config_and_tokenizer_come_from_one_reading_of_the_header_and_match_transformers(files, tmp_path):
    """A target's config and tokenizer are written from one parse of its header (transformers reads it twice, each
    time through numpy's memmap: seconds for a real vocabulary): the same config and the same token ids as
    transformers' own readings of the file, and gguf's and transformers' module attributes are theirs again after."""
    import gguf
    import transformers.modeling_gguf_pytorch_utils as legacy
    from transformers import AutoConfig, AutoTokenizer

    path = tmp_path / "once.gguf"
    path.write_bytes(files["qwen2", "quant"].read_bytes())
    calls = []
    load = legacy.load_gguf_checkpoint
    legacy.load_gguf_checkpoint = lambda *a, **k: calls.append(a) or load(*a, **k)
    try:
        file = GGUFModelFile(path)
        ours = AutoConfig.from_pretrained(str(file.meta_folder()))
        tokenizer = AutoTokenizer.from_pretrained(str(file.tokenizer_folder()))
    finally:
        legacy.load_gguf_checkpoint = load
    assert len(calls) == 1, f"the header was parsed {len(calls)} times"
    assert gguf.GGUFReader is gguf.gguf_reader.GGUFReader and legacy.load_gguf_checkpoint is load
    theirs = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    if hasattr(theirs, "quantization_config"):
        del theirs.quantization_config
    assert ours.to_diff_dict() | {"_name_or_path": ""} == theirs.to_diff_dict() | {"_name_or_path": ""}
    own_tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    text = "def f(x):\n    return x + 1  # ünïcode"
    assert tokenizer(text)["input_ids"] == own_tokenizer(text)["input_ids"]
    assert tokenizer.get_vocab() == own_tokenizer.get_vocab()


def _ordinary_tokenizer(path, folder):
    """The tokenizer as a folder saved from transformers' own reading of the GGUF loads it, the ordinary way."""
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(folder)
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_kept_tokenizer_loads_the_quick_way_and_as_the_ordinary_folder_does(files, tmp_path, arch):
    """models.quick_tokenizer: the folder kept for a GGUF's tokenizer holds the backend the ordinary load built, as
    the generic class (read by `tokenizers` in Rust, no Python parse of tokenizer.json), and that load agrees with the
    ordinary one on vocabulary, added and special tokens, chat template, ids and text."""
    from transformers import AutoTokenizer
    from specviz.models import quick_tokenizer

    path = tmp_path / f"{arch}.gguf"
    path.write_bytes(files[arch, "quant"].read_bytes())
    kept = AutoTokenizer.from_pretrained(str(GGUFModelFile(path).tokenizer_folder()))
    ordinary = _ordinary_tokenizer(path, tmp_path / "ordinary")
    assert type(kept).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")   # one class, two names (v5)
    assert quick_tokenizer.differences(ordinary, kept) == []
    for text in PROMPTS + ["the cat\n\nsat  on<|endoftext|>the mat"]:
        assert kept(text)["input_ids"] == ordinary(text)["input_ids"]


def test_a_quick_tokenizer_that_would_load_otherwise_is_not_kept(files, tmp_path, monkeypatch):
    """`differences` sees a changed normalizer and a changed end token; where the quick folder's load would differ
    from the ordinary one, make_quick leaves the folder's files as they were."""
    import copy

    from tokenizers import normalizers
    from specviz.models import quick_tokenizer

    folder = tmp_path / "ordinary"
    ordinary = _ordinary_tokenizer(files["qwen2", "quant"], folder)
    lowered = copy.deepcopy(ordinary)
    lowered.backend_tokenizer.normalizer = normalizers.Lowercase()
    assert quick_tokenizer.differences(ordinary, lowered) != []
    other_end = copy.deepcopy(ordinary)
    other_end.eos_token = "a"
    assert "eos_token" in quick_tokenizer.differences(ordinary, other_end)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setattr(quick_tokenizer, "differences", lambda a, b: ["vocabulary"])
    assert quick_tokenizer.make_quick(folder) is False
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    monkeypatch.undo()
    assert quick_tokenizer.make_quick(folder) is True


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    path = tmp_path / "notes.gguf"
    path.write_text("not a model\n" * 100)
    with pytest.raises(ModelLoadError) as e:
        GGUFModelFile(path)
    _one_sentence(e.value, "gguf.unreadable")


def test_a_missing_file_is_refused_naming_it(tmp_path, files):
    absent = tmp_path / "absent.gguf"
    with pytest.raises(ModelLoadError) as e:
        gguf_pair.gguf_file(str(absent), "draft", allow_local=True)
    assert str(absent) in _one_sentence(e.value, "gguf.missing")
    with pytest.raises(ModelLoadError) as e:   # through the pair's load: the draft named, nothing loaded
        loading.load_pair(draft=str(absent), target=str(files["qwen2", "f32"]), device="cpu", dtype="fp32")
    assert _one_sentence(e.value, "gguf.missing").startswith("draft model file")


def test_a_draft_and_target_with_different_vocabularies_are_refused_at_the_first_difference(files, tmp_path):
    swapped = list(TOKENS)
    swapped[16], swapped[23] = swapped[23], swapped[16]   # "q" and "x": no merge uses either
    other = tmp_path / "other-vocab.gguf"
    write_model_gguf(other, "qwen2", _hf_model("qwen2", 1, True), tokens=swapped)
    with pytest.raises(ModelLoadError) as e:
        loading.load_pair(draft=str(other), target=str(files["qwen2", "f32"]), device="cpu", dtype="fp32")
    text = _one_sentence(e.value, "load.vocab_first")
    assert "first difference at id 16: 'x' vs 'q'" in text
    assert "other-vocab.gguf" in text and files["qwen2", "f32"].name in text


def test_only_files_inside_the_servers_models_folder_are_taken_from_a_visitor(files, tmp_path, monkeypatch):
    inside_dir, outside_dir = tmp_path / "models", tmp_path / "elsewhere"
    inside_dir.mkdir()
    outside_dir.mkdir()
    inside = inside_dir / "tiny.gguf"
    outside = outside_dir / "tiny.gguf"
    for p in (inside, outside):
        p.write_bytes(files["qwen2", "f32"].read_bytes())

    def refused(spec) -> str:
        with pytest.raises(ModelLoadError) as e:
            gguf_pair.gguf_file(str(spec), "target", allow_local=False)
        return _one_sentence(e.value, "gguf.outside")

    assert refused(outside) == "target model tiny.gguf is not one of the GGUF files this server offers"   # unset
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(inside_dir))
    assert gguf_pair.gguf_file(str(inside), "target", allow_local=False).path == inside.resolve()
    refused(outside)
    refused(inside_dir / ".." / "elsewhere" / "tiny.gguf")     # a path that climbs out
    refused(inside_dir / "absent.gguf")                         # inside, but no such file: said as outside
    (inside_dir / "link.gguf").symlink_to(outside)
    refused(inside_dir / "link.gguf")                           # a link that points out
    assert gguf_pair.gguf_file(str(outside), "target", allow_local=True).path == outside.resolve()   # the owner's own


# --------------------------------------------------------------------------- 4. the embedding


@pytest.fixture(scope="module")
def embedding_files(files, tmp_path_factory):
    """{table type: a qwen2 file whose token_embd is stored so}: Q4_K and F32 from `files`, F16 and BF16 written
    here (the rest of those F32)."""
    from gguf import GGMLQuantizationType as T

    folder = tmp_path_factory.mktemp("embedding")
    out = {"Q4_K": files["qwen2", "quant"], "F32": files["qwen2", "f32"]}
    model = _hf_model("qwen2", 1, True)
    for kind in (T.F16, T.BF16):
        out[kind.name] = folder / f"tiny-embd-{kind.name}.gguf"
        write_model_gguf(out[kind.name], "qwen2", model, quantized=True,
                         type_of=lambda name, kind=kind: kind if name == "token_embd.weight" else T.F32)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("table", ["Q4_K", "F32", "F16", "BF16"])
def test_the_embedding_dequantizes_only_the_rows_looked_up(embedding_files, table, dtype, monkeypatch):
    """GGUFEmbedding: a row is gguf's dequantization of that row of token_embd, cast to the model's dtype, whatever
    the table's type and the model's dtype; a lookup dequantizes those rows and no others; there is no `weight`
    (code that reads one fails at once instead of dequantizing the whole table on every call)."""
    import gguf

    file = GGUFModelFile(embedding_files[table])
    model, _ = gguf_loader.load_gguf_model(file, "as-loaded", dtype)
    emb = model.get_input_embeddings()
    assert isinstance(emb, gguf_loader.GGUFEmbedding) and not hasattr(emb, "weight")
    assert emb.kind.name == table and emb.dtype == dtype
    t = file.tensor("token_embd.weight")
    ids = torch.tensor([[3, 0, EOS], [5, 5, 1]])
    rows = np.asarray(gguf.dequantize(np.array(t.data[ids.reshape(-1).numpy()]), t.kind), dtype=np.float32)
    want = torch.from_numpy(rows.reshape(6, 256)).to(dtype).reshape(2, 3, 256)

    dequantized = []
    real = gguf.dequantize
    monkeypatch.setattr(gguf, "dequantize", lambda data, kind: dequantized.append(real(data, kind)) or dequantized[-1])
    got = emb(ids)
    assert sum(np.asarray(d).size for d in dequantized) == 6 * 256   # the six rows asked for, once each
    assert got.dtype == dtype and torch.equal(got, want)
    assert torch.equal(emb.dense()[ids.reshape(-1)], want.reshape(6, 256))


def test_the_roofline_counts_one_row_of_a_gguf_form_embedding_table():
    """A token's forward reads one row of the table it looks up, whatever form the table is kept in (a GGUF-form
    table counted whole overstated a 7B target's bytes a token by 0.3 GB)."""
    from gguf import GGMLQuantizationType as T

    from specviz.bench.roofline import bytes_per_token
    from specviz.models.gguf_file import GGUFTensor
    from specviz.models.gguf_loader import GGUFEmbedding

    table = np.zeros((1000, 64), np.float32)
    model = torch.nn.Sequential(GGUFEmbedding(GGUFTensor("token_embd.weight", T.F32, 1000, 64, table)),
                                torch.nn.Linear(64, 8, bias=False))
    assert bytes_per_token(model) == 64 * 4 + 64 * 8 * 4


def _mapped_kb(file: GGUFModelFile) -> int:
    """Resident kB of the file's mapping in this process (its smaps Rss), 0 while it is not mapped."""
    from specviz.models.quant.huge_pages import mapping_fields

    if file._map is None:
        return 0
    fields = mapping_fields(file._map.ctypes.data) or {}
    return int(fields.get("Rss", "0 kB").split()[0])


@pytest.mark.parametrize("drops", [True, False])
def test_a_load_lets_go_of_the_file_pages_it_has_placed(files, monkeypatch, drops):
    """Every placed layer is a copy, so its file pages are let go as the load goes (a 7B target's 4.7 GB file stayed
    resident until the end and the load peaked at 10 GB RSS instead of ~5.8): the mapping's resident pages after
    each layer stay within the largest tensor, where a load that keeps them (the broken variant) holds most of the
    file by its last layer."""
    path = files["qwen2", "f32"]
    file = GGUFModelFile(path)
    largest = max(file.tensor(n).data.nbytes for n in file.names) // 1024
    file.release()
    seen: list[int] = []
    drop = GGUFModelFile.drop_read_pages

    def spied(self):
        if drops:
            drop(self)
        seen.append(_mapped_kb(self))

    monkeypatch.setattr(GGUFModelFile, "drop_read_pages", spied)
    gguf_loader.load_gguf_model(file, "as-loaded", torch.float32)
    file_kb = path.stat().st_size // 1024
    assert len(seen) >= 10
    if drops:
        assert max(seen) <= largest + 64, (seen, largest)
    else:
        assert seen[-1] >= file_kb // 2, (seen, file_kb)
