"""specviz's q4a8 CPU kernels: row invariance, thread invariance, the same math as PyTorch, the fallback.

The kernels are built once per test session (and cached beside the model cache: a rerun loads them
in under a second). Where they cannot be built here, the kernel tests skip and the fallback tests
still run: a missing compiler is a tested path, not a failure.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from specviz.models.quant import q4a8, weights

pytestmark = pytest.mark.usefixtures("one_thread")


def _isas():
    """Every instruction set this CPU runs, each a test case (the AVX2 path is tested on AVX-512 machines too)."""
    return list(q4a8.ISAS)


@pytest.fixture(params=_isas())
def isa(request, ext):
    """The process's instruction set for one test (the extension's own choice restored after)."""
    if request.param not in q4a8.supported_isas():
        pytest.skip(f"this CPU does not run {request.param}")
    with q4a8.isa_forced(request.param):
        yield request.param


def _grid(n: int, k: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (n, k), generator=gen, dtype=torch.int32)
    scale = torch.rand(n, k // 32, generator=gen) * 0.02 + 1e-4
    lo = -torch.rand(n, k // 32, generator=gen) * 0.15
    return codes, scale, lo


def _layers(n: int = 40, k: int = 128, seed: int = 0):
    """A 4-bit layer and an int8 layer (n not a multiple of 16: the padded tile is exercised too)."""
    codes, scale, lo = _grid(n, k, seed)
    dense = (codes.reshape(n, -1, 32).float() * scale[..., None] + lo[..., None]).reshape(n, k)
    bias = torch.randn(n)
    return q4a8.Q4A8Linear(dense, bias, (codes, scale, lo)), q4a8.Q8A8Linear(dense, bias)


def _activations(m: int, k: int, seed: int = 1) -> torch.Tensor:
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(seed))
    x[:, :32] *= 40   # an outlier block, as real hidden states have
    x[0, 32:64] = 0   # an all-zero block: step 0
    return x


def rows_that_differ_alone(fn, x: torch.Tensor, max_rows: int = 9) -> list[tuple[int, int]]:
    """(M, r) for every row r of an M-row call (M = 1..max_rows) that is not bit-identical to row r alone."""
    alone = [fn(x[r:r + 1])[0] for r in range(max_rows)]
    return [(m, r) for m in range(1, max_rows + 1) for r, row in enumerate(fn(x[:m])) if not torch.equal(row, alone[r])]


def test_pack_and_unpack_are_inverse():
    codes, scale, lo = _grid(40, 96)
    assert [torch.equal(a, b) for a, b in zip(q4a8.unpack_q4(q4a8.pack_q4(codes, scale, lo), 40), (codes, scale, lo))] \
        == [True] * 3
    wq = torch.randint(-127, 128, (40, 96), dtype=torch.int8)
    assert torch.equal(q4a8.unpack_q8(q4a8.pack_q8(wq), 40), wq)


def test_layers_keep_the_grid_exactly():
    codes, scale, lo = _grid(40, 128)
    layer, _ = _layers()
    dense = (codes.reshape(40, -1, 32).float() * scale[..., None] + lo[..., None]).reshape(40, 128)
    assert torch.equal(layer.dense_weight(), dense)


@pytest.mark.parametrize("which", [0, 1], ids=["q4", "q8"])
def test_every_row_is_the_same_alone_and_in_any_batch(isa, which):
    layer = _layers()[which]
    with torch.inference_mode():
        assert rows_that_differ_alone(layer, _activations(9, 128)) == []


def test_the_invariance_check_catches_a_kernel_that_blocks_rows_by_four():
    """A variant that, for full 4-row blocks only, sums the first and second half of the groups apart and then
    adds them (another order, as a row-blocked kernel may): the same check must flag it, or it proves nothing."""
    codes, scale, lo = _grid(40, 128)

    def blocked(x):
        out = []
        for r0 in range(0, x.shape[0], 4):
            block = x[r0:r0 + 4]
            if block.shape[0] < 4:   # a partial block: group by group, in order
                out.append(q4a8.q4_reference(block, codes, scale, lo))
                continue
            halves = [q4a8.q4_reference(block[:, 64 * h:64 * h + 64], codes[:, 64 * h:64 * h + 64],
                                        scale[:, 2 * h:2 * h + 2], lo[:, 2 * h:2 * h + 2]) for h in range(2)]
            out.append(halves[0] + halves[1])
        return torch.cat(out)

    x = _activations(9, 128)
    assert rows_that_differ_alone(blocked, x) != []
    assert rows_that_differ_alone(lambda v: q4a8.q4_reference(v, codes, scale, lo), x) == []


@pytest.mark.parametrize("which", [0, 1], ids=["q4", "q8"])
def test_thread_count_changes_nothing(ext, which):
    layer = _layers(n=400, k=256)[which]   # 25 tiles: split differently over 1 and 2 threads
    x = _activations(6, 256)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = layer(x)
        torch.set_num_threads(2)
        two = layer(x)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)


def test_quantized_activations_are_the_python_reference(ext, isa):
    x = _activations(5, 256)
    got, want = ext.quantize(x), q4a8.quantize_reference(x)
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def _close_to_reference(y: torch.Tensor, ref: torch.Tensor) -> None:
    # The reference emulates fp32 FMA through float64: bit for bit but for a rare double rounding.
    assert (y == ref).float().mean() >= 0.999
    assert torch.allclose(y, ref, rtol=1e-6, atol=1e-6 * float(ref.abs().max()))


def test_q4_is_the_python_reference_of_the_same_math(isa):
    codes, scale, lo = _grid(40, 128)
    layer, _ = _layers()
    x = _activations(7, 128)
    _close_to_reference(q4a8.q4_matmul(x, layer.packed, layer.out_features), q4a8.q4_reference(x, codes, scale, lo))


def test_q8_is_the_python_reference_of_the_same_math(isa):
    _, layer = _layers()
    x = _activations(7, 128)
    wq = q4a8.unpack_q8(layer.packed, layer.out_features)
    y = q4a8.q8_matmul(x, layer.packed, layer.out_features)
    _close_to_reference(y, q4a8.q8_reference(x, wq))


def test_every_instruction_set_gives_the_same_bits(ext):
    layer4, layer8 = _layers(n=64, k=256)
    x = _activations(9, 256)
    outs = []
    for name in q4a8.supported_isas():
        with q4a8.isa_forced(name):
            outs.append((layer4(x), layer8(x)))
    assert len(outs) >= 2 and all(torch.equal(a[0], outs[0][0]) and torch.equal(a[1], outs[0][1]) for a in outs)


def test_the_product_is_close_to_the_float_one(ext):
    layer4, layer8 = _layers(n=64, k=512)
    x = torch.randn(4, 512)
    for layer in (layer4, layer8):
        exact = x @ layer.dense_weight().T + layer.bias
        err = (layer(x) - exact).norm(dim=1) / exact.norm(dim=1)
        assert float(err.max()) < 0.02   # int8 activations per block of 32: ~0.5 % here


def test_the_instruction_set_is_the_best_here_and_the_variable_is_read_once(ext, monkeypatch):
    """Unset, the process runs the best this CPU runs; the extension read the variable at its first call, so a
    value set later changes nothing (only set_isa does, and isa_forced restores the choice)."""
    if q4a8.ISA_ENV_VAR not in os.environ:
        assert q4a8.chosen_isa() == q4a8.supported_isas()[-1]
    before = q4a8.chosen_isa()
    monkeypatch.setenv(q4a8.ISA_ENV_VAR, "scalar" if before != "scalar" else q4a8.supported_isas()[-1])
    assert q4a8.chosen_isa() == before
    with q4a8.isa_forced("scalar"):
        assert q4a8.chosen_isa() == "scalar"
    assert q4a8.chosen_isa() == before


def test_a_forced_instruction_set_is_checked(ext):
    with pytest.raises(ValueError, match="set_isa must name one of scalar, avx2, avx512vnni; got 'sse9'"):
        ext.set_isa("sse9")
    lacking = [name for name in q4a8.ISAS if name not in q4a8.supported_isas()]
    for name in lacking:   # an AVX2 CPU: avx512vnni
        with pytest.raises(ValueError, match=f"asks for {name}, which this CPU does not run"):
            ext.set_isa(name)


def test_the_variable_forces_the_instruction_set_or_is_refused_in_one_sentence(ext):
    """Read once per process, at the extension's first call: a fresh process each (the build is cached)."""
    script = ("from specviz.models.quant import q4a8\n"
              "for _ in range(2):\n"
              "    try:\n"
              "        print(q4a8.chosen_isa())\n"
              "    except ValueError as refused:\n"
              "        print(refused)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    said = {}
    for value in ("sse9", " AVX2 "):
        env = {**os.environ, q4a8.ISA_ENV_VAR: value, "PYTHONPATH": root}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        said[value] = done.stdout.splitlines()
    refusal = "SPECVIZ_Q4_ISA must name one of scalar, avx2, avx512vnni; got 'sse9'."
    assert said["sse9"] == [refusal] * 2                       # every call refused, in one sentence
    assert said[" AVX2 "] == ["avx2"] * 2                      # case and spaces as the variable always took them


def test_the_target_stores_q4a8_with_its_6_bit_layers_in_int8(ext):
    codes, scale, lo = _grid(32, 64)
    on_grid = torch.nn.Linear(64, 32, bias=False)
    on_grid.weight.data = (codes.reshape(32, -1, 32).float() * scale[..., None] + lo[..., None]).reshape(32, 64)
    model = torch.nn.Sequential(on_grid, torch.nn.Linear(32, 48))
    x = torch.randn(3, 64)
    assert weights.convert_target_weights(model, "q4a8") == {"q4a8": 1, "q8a8": 1}
    assert isinstance(model[0], q4a8.Q4A8Linear) and isinstance(model[1], q4a8.Q8A8Linear)
    # The grid is found again from the weights (int4_grid): the same points up to fp32 rounding.
    assert torch.allclose(model[0].dense_weight(), on_grid.weight.data, rtol=0, atol=1e-6)
    assert float(((model(x) - model[1](on_grid(x))).abs().max())) < 1e-1


# ---------------------------------------------------------------- the Q4_K layout: the GGUF's own scales

def _q4k(n: int = 40, k: int = 512, seed: int = 2):
    """Q4_K values: codes, fp16 d and dmin per 256 (stored fp32), 6-bit sc and m per 32 (zeros included)."""
    gen = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (n, k), generator=gen, dtype=torch.int32)
    d = (torch.rand(n, k // 256, generator=gen) * 2e-3).half().float()
    dmin = (torch.rand(n, k // 256, generator=gen) * 1e-2).half().float()
    sc = torch.randint(0, 64, (n, k // 32), generator=gen, dtype=torch.uint8)
    m = torch.randint(0, 64, (n, k // 32), generator=gen, dtype=torch.uint8)
    sc[0, :3] = 0   # a group whose scale is 0, as Q4_K writes for a constant group
    return codes, d, sc, dmin, m


def _q4k_layers(n: int = 40, k: int = 512):
    """The same weights as a Q4KA8Linear and as a Q4A8Linear holding scale = sc*d, min = -(m*dmin) in fp32."""
    codes, d, sc, dmin, m = _q4k(n, k)
    scale, lo = q4a8.q4k_grid(d, sc, dmin, m)
    dense = (codes.reshape(n, -1, 32).float() * scale[..., None] + lo[..., None]).reshape(n, k)
    bias = torch.randn(n)
    return q4a8.Q4KA8Linear(dense, bias, (codes, d, sc, dmin, m)), q4a8.Q4A8Linear(dense, bias, (codes, scale, lo))


def test_q4k_pack_and_unpack_are_inverse_and_take_0_59_bytes_a_weight():
    values = _q4k(48, 512)
    packed = q4a8.pack_q4k(*values)
    assert all(torch.equal(a, b) for a, b in zip(q4a8.unpack_q4k(packed, 48), values))
    assert packed.numel() / (48 * 512) == 0.59375 and q4a8.pack_q4(values[0], *q4a8.q4k_grid(*values[1:])).numel() \
        / (48 * 512) == 0.75


def test_q4k_dense_weight_is_the_q4_one_bit_for_bit():
    new, old = _q4k_layers()
    assert torch.equal(new.dense_weight().view(torch.int32), old.dense_weight().view(torch.int32))


def test_q4k_is_the_q4_layout_bit_for_bit_and_every_row_the_same_alone(isa):
    """The kernel forms sc*d and m*(-dmin) exactly: the very fp32 sequence of the q4 layout holding them."""
    new, old = _q4k_layers()
    x = _activations(9, 512)
    with torch.inference_mode():
        assert torch.equal(new(x), old(x))
        assert rows_that_differ_alone(new, x) == []
    codes, d, sc, dmin, m = _q4k()
    _close_to_reference(q4a8.q4k_matmul(x, new.packed, 40), q4a8.q4_reference(x, codes, *q4a8.q4k_grid(d, sc, dmin, m)))


def test_q4k_every_instruction_set_and_thread_count_gives_the_same_bits(ext, on_every_isa_and_thread_count):
    new, _ = _q4k_layers(n=400, k=768)   # 25 tiles, 3 super-blocks
    outs = on_every_isa_and_thread_count(new, _activations(9, 768))
    assert len(outs) >= 4 and all(torch.equal(o, outs[0]) for o in outs)


def test_q4k_is_close_to_the_float64_product(ext):
    new, _ = _q4k_layers(n=64, k=1024)
    x = torch.randn(8, 1024, dtype=torch.float64)
    exact = x @ new.dense_weight().double().T + new.bias.double()
    err = (new(x.float()).double() - exact).norm(dim=1) / exact.norm(dim=1)
    assert float(err.max()) < 0.02   # int8 activations per block of 32, as the q4 layout


# ---------------------------------------------------------------- the q4h layout: fp16 scales (a requantized draft)

def _q4h_layers(n: int = 40, k: int = 96, seed: int = 5):
    """A weight requantized as a draft is (fp16 grid), as q4h and as q4 holding the same values; k = 96: no
    multiple of a Q4_K super-block, as the 0.5B draft's 896."""
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(seed)) * 0.05
    codes, scale, lo = q4a8.fp16_grid(w, *weights.int4_grid(w, exact=False)[1:])
    bias = torch.randn(n)
    return (q4a8.Q4HA8Linear(w, bias, (codes, scale, lo)), q4a8.Q4A8Linear(w, bias, (codes, scale.float(), lo.float())),
            w)


def test_q4h_pack_and_unpack_are_inverse_and_take_0_625_bytes_a_weight():
    new, _, w = _q4h_layers(n=48)
    codes, scale, lo = q4a8.fp16_grid(w, *weights.int4_grid(w, exact=False)[1:])
    assert all(torch.equal(a, b) for a, b in zip(q4a8.unpack_q4h(new.packed, 48), (codes, scale, lo)))
    assert scale.dtype == lo.dtype == torch.float16 and new.packed.numel() / (48 * 96) == 0.625


def test_q4h_codes_are_found_again_for_the_fp16_grid():
    new, _, w = _q4h_layers()
    _, scale, lo = q4a8.unpack_q4h(new.packed, 40)
    err = (new.dense_weight() - w).abs().reshape(40, -1, 32).amax(-1)
    assert bool((err <= 0.5 * scale.float() * 1.01 + lo.float().abs() * 2 ** -10).all())   # half a step, fp16's own
    flat = torch.zeros(16, 32)
    codes, scale, lo = q4a8.fp16_grid(flat, *weights.int4_grid(flat, exact=False)[1:])   # a constant group
    assert int(codes.abs().sum()) == 0 and torch.equal(lo.float(), torch.zeros(16, 1))


def test_q4h_is_the_q4_layout_bit_for_bit_and_every_row_the_same_alone(isa):
    """fp16 -> fp32 is exact: the very fp32 sequence of the q4 layout holding those values."""
    new, old, _ = _q4h_layers()
    x = _activations(9, 96)
    with torch.inference_mode():
        assert torch.equal(new(x), old(x))
        assert rows_that_differ_alone(new, x) == []
    codes, scale, lo = q4a8.unpack_q4h(new.packed, 40)
    _close_to_reference(q4a8.q4h_matmul(x, new.packed, 40), q4a8.q4_reference(x, codes, scale.float(), lo.float()))


def test_q4h_every_instruction_set_and_thread_count_gives_the_same_bits(ext, on_every_isa_and_thread_count):
    new, _, _ = _q4h_layers(n=400, k=896)
    outs = on_every_isa_and_thread_count(new, _activations(9, 896))
    assert len(outs) >= 4 and all(torch.equal(o, outs[0]) for o in outs)


# ---------------------------------------------------------------- where the kernels cannot be built

@pytest.fixture
def no_kernels(monkeypatch):
    """The extension as on a machine without a compiler: built afresh with CXX pointing nowhere."""
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setattr(q4a8, "_key", lambda: "nocompiler")   # never the cached build
    q4a8.extension.cache_clear()
    yield
    q4a8.extension.cache_clear()


def test_without_a_compiler_the_reason_is_one_line_and_int4_runs(no_kernels, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    why = q4a8.unavailable()
    assert why and "\n" not in why
    assert "q4a8" not in weights.candidate_weights("cpu", torch.float32)
    assert weights.q4a8_fallback("q4a8") == "int4" and weights.q4a8_fallback("int8") == "int8"
    assert weights.resolve_target_weights("q4a8", "cpu", torch.float32) == "q4a8"   # decided at load


def test_ninja_is_found_beside_this_python_or_its_absence_is_the_one_line(tmp_path, monkeypatch):
    """PyTorch's builder runs `ninja` from PATH: the pinned wheel's copy is used where PATH has none (the app run as
    `.venv/bin/python app.py`), and where there is no ninja at all the reason says so."""
    import shutil

    import ninja

    monkeypatch.setenv("PATH", str(tmp_path))                   # nothing on PATH
    assert shutil.which("ninja") is None
    assert q4a8._ninja_on_path() and shutil.which("ninja").startswith(ninja.BIN_DIR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ninja", None)              # the wheel missing too
    assert not q4a8._ninja_on_path()
    monkeypatch.setattr(q4a8, "_key", lambda: "noninja")
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("CXX", sys.executable)                    # a "compiler" that exists: ninja is what is missing
    q4a8.extension.cache_clear()
    try:
        assert q4a8.unavailable() == "no ninja build tool found (pip install ninja, pinned in requirements.txt)"
    finally:
        q4a8.extension.cache_clear()


def test_the_load_says_so_and_stores_int4(no_kernels, tmp_path, monkeypatch):
    from specviz.models import storing
    from specviz.errors import step_text

    from tiny import tiny_model

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    model = tiny_model(3)
    said = []
    kind, _, layers, ahead = storing.store_target(model, "q4a8", "cpu", torch.float32, lambda frac, msg: said.append(msg))
    assert kind == "int4" and ahead is None and weights.target_weights(model) == "int4" and set(layers) <= {"int4", "int8"}
    lines = [step_text(m, lang) for m in said for lang in ("en", "es")
             if getattr(m, "key", "") == "load.kernels_unavailable"]
    assert len(lines) == 2 and all("\n" not in line for line in lines)


def test_the_draft_falls_back_to_int4_too(no_kernels, tmp_path, monkeypatch):
    from specviz.models import storing
    from tiny import tiny_model

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    draft = tiny_model(4)
    assert storing.store_draft(draft, "q4a8", "default", lambda frac, msg: None) == "int4"
    assert weights.target_weights(draft) == "int4"


def test_a_q4a8_draft_runs_on_the_kernels(ext):
    from specviz.models import storing
    from tiny import tiny_model

    draft = tiny_model(4)
    assert storing.store_draft(draft, "q4a8", "default", lambda frac, msg: None) == "q4a8"
    assert any(isinstance(m, q4a8.Q4HA8Linear) for m in draft.modules())   # a grid of its own: fp16 scales
    with torch.inference_mode():
        assert torch.isfinite(draft(torch.tensor([[1, 2, 3]])).logits).all()


def test_an_auto_draft_follows_the_target_onto_the_kernels_only_when_asked_auto(monkeypatch):
    """The load's probe chose q4a8 for the target (one row, measured here): an auto draft goes with it; a draft
    precision the user named (argument or SPECVIZ_DRAFT_WEIGHTS) is kept, and so is int4 beside another target."""
    from specviz.models import storing

    monkeypatch.delenv("SPECVIZ_DRAFT_WEIGHTS", raising=False)
    assert storing.draft_kind("auto", "int4", "q4a8") == "q4a8"
    assert storing.draft_kind("auto", "int4", "int4") == "int4"
    assert storing.draft_kind("auto", "int8", "q4a8") == "int8"          # no 4-bit kernel in this PyTorch
    assert storing.draft_kind("int4", "int4", "q4a8") == "int4"
    monkeypatch.setenv("SPECVIZ_DRAFT_WEIGHTS", "int4")
    assert storing.draft_kind("auto", "int4", "q4a8") == "int4"


def _spelled_out(layer, x: torch.Tensor) -> torch.Tensor:
    """What the layers' forward was before csrc's `linear` took it into one call, op for op."""
    x2d = x.reshape(-1, layer.in_features)
    if isinstance(layer, q4a8.Q8A8Linear):
        y = q4a8.q8_matmul(x2d, layer.packed, layer.out_features) * layer.scales
    else:
        product = (q4a8.q4k_matmul if isinstance(layer, q4a8.Q4KA8Linear) else
                   q4a8.q4h_matmul if isinstance(layer, q4a8.Q4HA8Linear) else q4a8.q4_matmul)
        y = product(x2d, layer.packed, layer.out_features)
    y = y.to(x.dtype).reshape(*x.shape[:-1], layer.out_features)
    return y if layer.bias is None else y + layer.bias.to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("with_bias", [True, False])
def test_a_layers_one_call_is_its_ops_spelled_out_bit_for_bit(isa, dtype, with_bias):
    """The fused epilogue (columns, scales, dtype, bias) against ATen's ops; a model moved to bf16 has bf16 scales
    and biases, and the rows (6) take a full pass of 8 rows and none: the whole tile loop."""
    layers = [*_layers(), _q4k_layers(k=512)[0], _q4h_layers()[0]]
    bf16_scales = q4a8.Q8A8Linear(layers[0].dense_weight(), layers[0].bias)
    bf16_scales.scales = bf16_scales.scales.bfloat16()
    layers.append(bf16_scales)
    for layer in layers:
        if layer.bias is not None:
            layer.bias = layer.bias.to(dtype) * 7   # a bias large enough that its rounding shows
        if not with_bias:
            layer.bias = None
        x = _activations(6, layer.in_features).to(dtype).reshape(2, 3, layer.in_features)
        got, want = layer(x), _spelled_out(layer, x)
        assert got.dtype == dtype and got.shape == (2, 3, layer.out_features)
        assert torch.equal(got, want)
        # a width the packed tiles pad (40 of 48) is cut, and a variant that skips the scales must differ
    y8 = q4a8.extension().linear(_activations(2, 128), layers[1].packed, 40, None, None, q4a8.KINDS["q8"])
    assert not torch.equal(y8, _spelled_out(layers[1], _activations(2, 128)) - (layers[1].bias if with_bias else 0))


def test_a_layers_one_call_refuses_a_width_beyond_its_tiles(ext):
    layer, _ = _layers()
    with pytest.raises(RuntimeError, match="n must be within"):
        ext.linear(_activations(1, 128), layer.packed, 49, None, None, q4a8.KINDS["q4"])


def test_dense_rows_are_the_dense_weights_rows_from_only_their_tiles(monkeypatch):
    """What a trimmed head takes (engine.vocab_trim): the chosen rows, bit for bit, of every 4-bit layout, rows out of
    order and in the last, partial tile (40 outputs: tiles of 16, 16, 8); only the tiles holding them dequantized."""
    from gguf_blocks import q6k_layer

    layers = [_layers()[0], _q4k_layers()[0], _q4h_layers()[0], q6k_layer()[0]]
    rows = torch.tensor([39, 2, 17, 3, 33, 2])   # tiles 2, 0, 1, 0, 2, 0: a repeat, and none left out
    few = torch.tensor([37, 33])                 # the last tile only
    for layer in layers:
        dense = layer.dense_weight()
        assert layer.out_features == 40
        for pick in (rows, few):
            assert torch.equal(layer.dense_rows(pick).view(torch.int32), dense[pick].view(torch.int32)), type(layer)
        seen = []
        real = layer._dense
        monkeypatch.setattr(layer, "_dense", lambda packed, n: seen.append(n) or real(packed, n))
        layer.dense_rows(few)
        assert seen == [16]   # one tile of 16 dequantized, not 40 rows
