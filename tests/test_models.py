"""Tests of specviz.models.loading: the packaged offline pair, local folders, Hub-id errors.

CPU only, no network.  The packaged-pair tests use the real cache
(``$SPECVIZ_CACHE`` or ``~/.cache/specviz``) so the one-time assembly of the GGUF files
is paid once per machine, not once per test run.
"""

from __future__ import annotations

import gc
import hashlib
import shutil
import socket
import time
import types
from pathlib import Path

import pytest
import torch

from specviz.models import loading as M
from specviz.models import packaged as PK
from specviz.models.loading import ModelLoadError, WeightOptions, load_pair, validate_model_id

PROMPT = "Write a Python function that reverses a string."


# --------------------------------------------------------------------------- #
# The packaged pair (real weights, offline)
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def packaged_pair():
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    pair = load_pair(device="cpu")
    print(f"\npackaged pair, first load in this run: {time.perf_counter() - t0:.1f} s "
          f"(includes the one-time conversion if the cache was empty)")
    yield pair
    mp.undo()
    del pair
    gc.collect()


def test_packaged_pair_loads_offline(packaged_pair):
    pair = packaged_pair
    assert pair.device == torch.device("cpu")
    assert pair.name == M.PACKAGED_PAIR_NAME
    for model in (pair.draft, pair.target):
        assert not model.training
        assert next(model.parameters()).device.type == "cpu"
        assert next(model.parameters()).dtype == pair.dtype
    # Shared vocabulary: same tokenizer, same embedding width.
    assert len(pair.tokenizer) == 151_936
    assert pair.draft.config.vocab_size == pair.target.config.vocab_size == 151_936
    assert pair.draft.config.hidden_size < pair.target.config.hidden_size  # 0.5B drafts for 1.5B
    assert 151_645 in pair.eos_token_ids  # <|im_end|>
    assert len(set(pair.eos_token_ids)) == len(pair.eos_token_ids)


def test_packaged_pair_encodes_and_runs(packaged_pair):
    pair = packaged_pair
    ids = pair.encode_chat(PROMPT)
    assert ids and all(isinstance(i, int) for i in ids)
    text = pair.decode(ids)
    assert PROMPT in text and "<|im_start|>assistant" in text
    raw = pair.encode(PROMPT)
    assert pair.decode(raw) == PROMPT and len(raw) < len(ids)
    x = torch.tensor([ids])
    with torch.no_grad():
        ld = pair.draft(x).logits[0, -1].float()
        lt = pair.target(x).logits[0, -1].float()
    assert ld.shape == lt.shape == (151_936,)
    assert torch.isfinite(ld).all() and torch.isfinite(lt).all()


def test_packaged_second_load_uses_the_cache(packaged_pair, monkeypatch):
    """A second load reads the assembled files and the kept metadata: it never locates the wheels' parts nor parses
    a GGUF header again.

    (How long that takes is a benchmark's business, not a unit test's: this machine's speed varies 2-4x.)"""
    from specviz.models import packaged

    def rebuilt(*args, **kwargs):
        raise AssertionError("the packaged pair was converted again instead of read from the cache")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(packaged, "_locate_parts", rebuilt)
    from specviz.models import gguf_file

    monkeypatch.setattr(gguf_file, "_reader", rebuilt)
    fractions = []
    t0 = time.perf_counter()
    pair = load_pair(device="cpu", progress=lambda f, m: fractions.append(f))
    print(f"\npackaged pair, load from cache: {time.perf_counter() - t0:.1f} s")
    try:
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
        assert all(0.0 <= f <= 1.0 for f in fractions)
    finally:
        del pair
        gc.collect()


def test_dtype_and_device_are_honoured_for_packaged_pair(packaged_pair):
    # Default dtype on CPU follows the processor; the fixture used it.
    assert packaged_pair.dtype == M.default_device_and_dtype()[1]


# --------------------------------------------------------------------------- #
# Packaged parts: verification and error messages (synthetic, no real weights)
# --------------------------------------------------------------------------- #


def _write_parts(tmp_path: Path, blobs: list[bytes], dist_prefix="fake-model-part") -> list[PK._Part]:
    parts = []
    for i, blob in enumerate(blobs, 1):
        p = tmp_path / f"{dist_prefix}{i}" / "data" / f"part{i:02d}.bin"
        p.parent.mkdir(parents=True)
        p.write_bytes(blob)
        parts.append(PK._Part(f"{dist_prefix}{i}", "1.0.0", f"fake_model_part{i}/data/part{i:02d}.bin",
                             p, hashlib.sha256(blob).hexdigest(), len(blob)))
    return parts


def test_assemble_verifies_parts_and_whole(tmp_path):
    blobs = [b"GGUF" + bytes(range(256)) * 40, b"\x01" * 5000, b"tail"]
    parts = _write_parts(tmp_path, blobs)
    whole = hashlib.sha256(b"".join(blobs)).hexdigest()
    dest = tmp_path / "out.gguf"
    seen = []
    PK._assemble(parts, dest, whole, seen.append)
    assert dest.read_bytes() == b"".join(blobs)
    assert seen[-1] == 1.0

    with pytest.raises(ModelLoadError, match="assembled packaged model has sha256"):
        PK._assemble(parts, tmp_path / "out2.gguf", "0" * 64)


def test_corrupted_part_is_named(tmp_path, monkeypatch):
    blobs = [b"a" * 3000, b"b" * 3000, b"c" * 1000]
    parts = _write_parts(tmp_path, blobs)
    whole = hashlib.sha256(b"".join(blobs)).hexdigest()
    # Flip one byte of part 2 after its RECORD hash was taken.
    data = bytearray(parts[1].path.read_bytes())
    data[1234] ^= 0xFF
    parts[1].path.write_bytes(bytes(data))

    spec = PK._PackagedModel(label="fake-model", dists=tuple(p.dist for p in parts),
                            version="1.0.0", sha256=whole)
    monkeypatch.setattr(PK, "_locate_parts", lambda dists, version: parts)
    monkeypatch.setattr(PK, "PACKAGED_DRAFT", spec)
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ModelLoadError) as err:
        PK.packaged_gguf("draft")
    msg = str(err.value)
    assert "fake-model-part2 (data/part02.bin) is corrupted: sha256 mismatch" in msg
    assert "pip install --force-reinstall fake-model-part2==1.0.0" in msg
    # Nothing half-done is left behind to be trusted later.
    assert list((tmp_path / "cache" / "gguf").iterdir()) == []
    assert not PK.is_prepared()


def test_corrupted_copy_of_a_real_part_is_named(tmp_path):
    """Uses the real RECORD hash of the smallest installed part (read-only)."""
    dist = PK.PACKAGED_DRAFT.dists[-1]
    (real,) = PK._locate_parts([dist], PK.PACKAGED_DRAFT.version)
    assert real.sha256 and len(real.sha256) == 64
    copy = tmp_path / "part06.bin"
    shutil.copyfile(real.path, copy)
    # The intact copy passes its part check (fails later only on the whole-file hash).
    with pytest.raises(ModelLoadError, match="assembled packaged model"):
        PK._assemble([PK._Part(**{**real.__dict__, "path": copy})], tmp_path / "a.gguf", "0" * 64)
    with open(copy, "r+b") as f:
        f.seek(12345)
        b = f.read(1)
        f.seek(12345)
        f.write(bytes([b[0] ^ 0x01]))
    with pytest.raises(ModelLoadError) as err:
        PK._assemble([PK._Part(**{**real.__dict__, "path": copy})], tmp_path / "b.gguf", "0" * 64)
    assert f"{dist} (data/part06.bin) is corrupted: sha256 mismatch" in str(err.value)
    assert f"pip install --force-reinstall {dist}==0.9.0" in str(err.value)


def test_missing_distribution_and_file_are_named(tmp_path):
    with pytest.raises(ModelLoadError, match=r"specviz-no-such-part3 is not installed.*"
                                             r"pip install specviz-no-such-part3==1\.2\.3"):
        PK._locate_parts(["specviz-no-such-part3"], "1.2.3")
    part = PK._Part("fake-part1", "1.0", "fake_part1/data/part01.bin", tmp_path / "gone.bin", None, None)
    with pytest.raises(ModelLoadError, match=r"fake-part1 \(data/part01.bin\) is missing"):
        PK._assemble([part], tmp_path / "x.gguf", "0" * 64)


def test_all_packaged_parts_are_located():
    for spec in (PK.PACKAGED_DRAFT, PK.PACKAGED_TARGET):
        parts = PK._locate_parts(spec.dists, spec.version)
        assert [p.path.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, len(spec.dists) + 1)]
        assert all(p.sha256 and p.path.is_file() for p in parts)


def test_an_old_fp32_copy_is_found_for_removal(tmp_path, monkeypatch):
    """Older versions converted the packaged pair into fp32 folders (9 GB): prepare removes them, nothing reads them."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    assert PK.stale_dense_folders() == []
    old = tmp_path / f"{PK.PACKAGED_TARGET.label}-{PK.PACKAGED_TARGET.sha256[:8]}"
    old.mkdir()
    assert PK.stale_dense_folders() == [old]


# --------------------------------------------------------------------------- #
# Local folders with tiny models
# --------------------------------------------------------------------------- #


def _tiny_model_folder(path: Path, corpus: list[str], seed: int = 0) -> Path:
    """A 2-layer Qwen2 with a byte-level BPE tokenizer trained on ``corpus``.

    Byte-level BPE because transformers 5 rebuilds the tokenizer of a qwen2
    folder as Qwen2Tokenizer from its vocab and merges, which needs that shape.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus * 5, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=320, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                      eos_token_id=tok.token_to_id("<eos>"))
    Qwen2ForCausalLM(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return path


CORPUS = ["hello world", "hello there, world", "def f(x): return x + 1"]


def test_local_pair_loads(tmp_path):
    d = _tiny_model_folder(tmp_path / "draft", CORPUS, seed=1)
    t = _tiny_model_folder(tmp_path / "target", CORPUS, seed=2)
    pair = load_pair(draft=str(d), target=str(t), device="cpu", dtype="fp32")
    assert pair.dtype == torch.float32 and pair.device == torch.device("cpu")
    assert not pair.draft.training and not pair.target.training
    assert next(pair.target.parameters()).dtype == torch.float32
    ids = pair.encode("hello world")
    assert 0 < len(ids) <= 3  # merges learnt from the corpus
    assert pair.encode_chat("hello world") == ids  # no chat template: raw text
    assert pair.decode(torch.tensor(ids)) == "hello world"
    assert pair.eos_token_ids == [0]  # "<eos>" is the first special token
    assert pair.name == f"{d} → {t}"
    # bf16 on request, from a string.
    pair16 = load_pair(draft=str(d), target=str(t), device="cpu", dtype="bfloat16",
                       weights=WeightOptions(draft_weights="as-loaded"))
    assert next(pair16.draft.parameters()).dtype == torch.bfloat16
    assert pair16.draft_weights == "as-loaded" and pair16.draft_as_loaded() is pair16.draft


@pytest.mark.skipif(not hasattr(torch, "_weight_int8pack_mm"), reason="this torch has no int8 product")
def test_an_fp32_cpu_pair_drafts_with_int8_weights_and_keeps_the_target(tmp_path, monkeypatch):
    from specviz.models.quant.kernels import DRAFT_ENV_VAR, Int8WeightLinear, linear_path

    monkeypatch.delenv(DRAFT_ENV_VAR, raising=False)
    d = _tiny_model_folder(tmp_path / "draft", CORPUS, seed=1)
    t = _tiny_model_folder(tmp_path / "target", CORPUS, seed=2)
    # The target as loaded, named: "auto" would time its layers, and on a loaded machine int4 can win that race.
    pair = load_pair(draft=str(d), target=str(t), device="cpu", dtype="fp32",
                     weights=WeightOptions(linear="default", draft_weights="int8", target_weights="as-loaded"))
    assert pair.draft_weights == "int8" and linear_path(pair.draft) == "int8"
    assert isinstance(pair.draft.get_output_embeddings(), Int8WeightLinear)
    assert linear_path(pair.target) == "default"
    assert not any(isinstance(m, Int8WeightLinear) for m in pair.target.modules())
    # transformers' peers in the benchmark get the draft as transformers would load it
    plain = pair.draft_as_loaded()
    assert plain is not pair.draft and linear_path(plain) == "default"
    assert type(plain.get_output_embeddings()) is torch.nn.Linear
    kept = load_pair(draft=str(d), target=str(t), device="cpu", dtype="fp32",
                     weights=WeightOptions(linear="default", draft_weights="as-loaded"))
    assert kept.draft_weights == "as-loaded" and type(kept.draft.get_output_embeddings()) is torch.nn.Linear
    with pytest.raises(ModelLoadError, match="int8"):
        load_pair(draft=str(d), target=str(t), device="cpu", dtype="float16",
                  weights=WeightOptions(draft_weights="int8"))


def test_mismatched_vocab_raises(tmp_path):
    d = _tiny_model_folder(tmp_path / "draft", CORPUS)
    t = _tiny_model_folder(tmp_path / "target", ["the quick brown fox", "jumps over the lazy dog"])
    with pytest.raises(ModelLoadError, match="do not share a vocabulary"):
        load_pair(draft=str(d), target=str(t), device="cpu")


def test_local_folder_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="is not a model"):
        load_pair(draft=str(tmp_path / "empty"), target=str(tmp_path / "empty"))
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_pair(draft=str(tmp_path / "nope"), target=str(tmp_path / "nope"))
    d = _tiny_model_folder(tmp_path / "m", CORPUS)
    with pytest.raises(ModelLoadError, match="local folders are not allowed"):
        load_pair(draft=str(d), target=str(d), allow_local=False)
    with pytest.raises(ModelLoadError, match="both a draft and a target"):
        load_pair(draft=str(d))


# --------------------------------------------------------------------------- #
# Hub ids (never touching the network)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("good", ["gpt2", "Qwen/Qwen2.5-0.5B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct",
                                  "  meta-llama/Llama-3.2-1B  "])
def test_valid_ids(good):
    assert validate_model_id(good) == good.strip()


@pytest.mark.parametrize("bad", ["", "   ", "bad id", "a/b/c", "-x/y", "x/../y", "x/y/", "<script>", "a" * 300,
                                 "owner/name;rm", "x/-"])
def test_invalid_ids_raise(bad):
    with pytest.raises(ModelLoadError):
        validate_model_id(bad)


def test_bad_id_syntax_raises_before_network(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info",
                        lambda *a, **k: pytest.fail("network touched for a malformed id"))
    with pytest.raises(ModelLoadError, match="invalid model id"):
        load_pair(draft="not a valid id!", target="gpt2", allow_local=False)


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)


def test_unreachable_hub_is_clear_and_quick(empty_hub_cache, monkeypatch):
    import huggingface_hub.constants as C

    # Port 9 on loopback refuses at once: deterministic even on a machine with network.
    monkeypatch.setattr(C, "ENDPOINT", "http://127.0.0.1:9")
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match="cannot reach the Hugging Face Hub") as err:
        load_pair(draft="Qwen/Qwen2.5-0.5B-Instruct", target="Qwen/Qwen2.5-1.5B-Instruct")
    assert time.perf_counter() - t0 < 10
    assert "draft model Qwen/Qwen2.5-0.5B-Instruct" in str(err.value)
    assert len(str(err.value).splitlines()) <= 2


def _network_reachable() -> bool:
    try:
        socket.create_connection(("huggingface.co", 443), timeout=2).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(_network_reachable(), reason="only meaningful without network")
def test_real_offline_hub_is_clear_and_quick(empty_hub_cache):
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match="cannot reach the Hugging Face Hub"):
        load_pair(draft="Qwen/Qwen2.5-0.5B-Instruct", target="Qwen/Qwen2.5-1.5B-Instruct")
    assert time.perf_counter() - t0 < 10


def test_hf_hub_offline_flag(empty_hub_cache, monkeypatch):
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        load_pair(draft="Qwen/Qwen2.5-0.5B-Instruct", target="Qwen/Qwen2.5-1.5B-Instruct")


def test_unknown_hub_id(empty_hub_cache, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    response = types.SimpleNamespace(headers={}, request=None, status_code=404)

    def not_found(self, repo_id, **kw):
        raise RepositoryNotFoundError(f"404 {repo_id}", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", not_found)
    with pytest.raises(ModelLoadError, match="draft model nobody/no-such-model was not found on the Hugging Face Hub"):
        load_pair(draft="nobody/no-such-model", target="Qwen/Qwen2.5-1.5B-Instruct")

    def gated(self, repo_id, **kw):
        raise GatedRepoError(f"401 {repo_id}", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", gated)
    with pytest.raises(ModelLoadError, match="is gated"):
        load_pair(draft="meta-llama/Llama-3.2-1B", target="meta-llama/Llama-3.2-3B")


# --------------------------------------------------------------------------- #
# Device and dtype
# --------------------------------------------------------------------------- #


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith(("flags", "Features"))
            for f in line.split(":", 1)[1].split()}


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only expectation")
def test_default_device_and_dtype_on_cpu():
    device, dtype = M.default_device_and_dtype()
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        assert (device.type, dtype) == ("mps", torch.float16)
        return
    assert device.type == "cpu"
    if _cpu_flags() & {"avx512_bf16", "amx_bf16"}:
        assert dtype == torch.bfloat16
    elif not Path("/proc/cpuinfo").exists():
        assert dtype in (torch.bfloat16, torch.float32)
    else:
        assert dtype in (torch.float32, torch.bfloat16)  # bf16 only via the Arm "bf16" feature


def test_parse_dtype():
    assert M.parse_dtype("bf16") is torch.bfloat16
    assert M.parse_dtype("float16") is torch.float16
    assert M.parse_dtype("FP32") is torch.float32
    assert M.parse_dtype("torch.bfloat16") is torch.bfloat16
    assert M.parse_dtype(torch.float16) is torch.float16
    assert M.parse_dtype(None) is None and M.parse_dtype("auto") is None
    with pytest.raises(ModelLoadError, match="unknown dtype"):
        M.parse_dtype("int3")


def test_bad_device_raises():
    with pytest.raises(ModelLoadError, match="unknown device"):
        load_pair(draft="gpt2", target="gpt2", device="tpu-9000")


def test_packaged_gguf_is_assembled_once_verified_and_never_left_half_written(tmp_path, monkeypatch):
    """The whole GGUF llama.cpp reads: published only once its SHA-256 matched."""
    blobs = [b"GGUF" + b"\x02" * 3000, b"\x03" * 2000]
    parts = _write_parts(tmp_path, blobs)
    whole = hashlib.sha256(b"".join(blobs)).hexdigest()
    monkeypatch.setattr(PK, "PACKAGED_TARGET", PK._PackagedModel("fake-target", ("a", "b"), "1.0.0", whole))
    monkeypatch.setattr(PK, "_locate_parts", lambda dists, version: parts)
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    path = PK.packaged_gguf("target")
    assert path == tmp_path / "cache" / "gguf" / f"fake-target-{whole[:8]}.gguf"
    assert path.read_bytes() == b"".join(blobs)
    monkeypatch.setattr(PK, "_locate_parts", lambda dists, version: pytest.fail("assembled twice"))
    assert PK.packaged_gguf("target") == path and list(path.parent.iterdir()) == [path]

    path.unlink()
    monkeypatch.setattr(PK, "PACKAGED_TARGET", PK._PackagedModel("fake-target", ("a", "b"), "1.0.0", "0" * 64))
    monkeypatch.setattr(PK, "_locate_parts", lambda dists, version: parts)
    with pytest.raises(ModelLoadError, match="assembled packaged model has sha256"):
        PK.packaged_gguf("target")
    assert list((tmp_path / "cache" / "gguf").iterdir()) == []   # nothing to trust later
