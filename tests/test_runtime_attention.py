"""The one-query attention kernel (csrc/attention.cpp through specviz.runtime.attention): each row on its own.

A verify's rows must come out bit for bit as one-token steps; the kernel promises that by construction
(one fixed sequence of fp32 operations per row and head). These tests check the promise directly on the
kernel, its accuracy against a float64 reference, that both instruction-set paths agree, that bad key
lists are refused, and that the model-level function picks it only where it computes what SDPA would.
"""
import pytest
import torch
import torch.nn.functional as F

from specviz.models.prepare import configure_runtime
from specviz.models.quant import q4a8
from specviz.runtime import attention

pytestmark = pytest.mark.skipif(q4a8.unavailable() is not None, reason="specviz's CPU extension does not build here")


@pytest.fixture(autouse=True)
def configured():
    """The runtime as load_pair configures it (the kernel where it builds), whatever this process did before."""
    configure_runtime()

SHAPES = [(12, 2, 128), (14, 2, 64), (2, 1, 128)]   # (heads, kv heads, head size): Qwen2.5 1.5B, 0.5B, the tiny tests'


def ext():
    return q4a8.extension()


def inputs(heads, kv_heads, size, rows, n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(rows, heads, size, generator=g)
    k = torch.randn(kv_heads, n, size, generator=g).to(dtype)
    v = torch.randn(kv_heads, n, size, generator=g).to(dtype)
    return q, k, v


def run(q, k, v, keys, isa: str | None = None):
    """The kernel over `keys`, on `isa` where given, else on the process's instruction set."""
    if isa is not None:
        with q4a8.isa_forced(isa):
            return run(q, k, v, keys)
    flat, offsets = attention._key_lists(keys)
    return ext().one_query_attention(q.contiguous(), k, v, flat, offsets, q.shape[-1] ** -0.5)


def reference(q_row, k, v, index):
    """float64 SDPA of one query row over the keys `index`: [H, D]."""
    qd = q_row[None, :, None].double()
    kd, vd = k[:, index][None].double(), v[:, index][None].double()
    return F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True)[0, :, 0]


@pytest.mark.parametrize("shape", SHAPES, ids=["1.5b", "0.5b", "tiny"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("n", [9, 300])
def test_every_row_is_bit_identical_to_the_row_computed_alone(shape, dtype, n):
    rows = 8
    q, k, v = inputs(*shape, rows, n, dtype)
    keys = [n - rows + 1 + i for i in range(rows)]   # a verify: row i sees the prefix and i drafted tokens
    keys[3] = torch.tensor([0, 2, 3, n - 1])          # a tree node: its ancestors only
    together = run(q, k, v, keys)
    for r in range(rows):
        alone = run(q[r:r + 1], k, v, [keys[r]])
        assert torch.equal(together[r], alone[0]), f"row {r}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_kernel_is_attention_to_float_accuracy(dtype):
    q, k, v = inputs(12, 2, 128, 3, 200, dtype, seed=1)
    keys = [1, 200, torch.tensor([5, 7, 199])]
    out = run(q, k, v, keys)
    for r, keep in enumerate(keys):
        index = torch.arange(keep) if isinstance(keep, int) else keep
        assert torch.allclose(out[r].double(), reference(q[r], k, v, index), atol=2e-6, rtol=1e-5), r


def test_the_portable_and_avx2_paths_agree_bit_for_bit():
    q, k, v = inputs(12, 2, 128, 5, 133, torch.bfloat16, seed=2)
    keys = [129, 130, 131, torch.tensor([0, 1, 64, 132]), 133]
    outs = [run(q, k, v, keys, isa=name) for name in q4a8.supported_isas()]   # scalar is the portable path
    assert len(outs) >= 2 and all(torch.equal(out, outs[0]) for out in outs)


def test_heads_apart_in_memory_and_either_thread_count_give_the_same_bits():
    """The lean stack's cache is a view whose heads sit apart (room to grow after each); one thread or two."""
    q, k, v = inputs(14, 2, 64, 4, 150, torch.bfloat16, seed=3)
    roomy_k, roomy_v = (torch.zeros(2, 400, 64, dtype=torch.bfloat16) for _ in range(2))
    roomy_k[:, :150], roomy_v[:, :150] = k, v
    keys = [147, 148, 149, 150]
    want = run(q, k, v, keys)
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            assert torch.equal(run(q, roomy_k[:, :150], roomy_v[:, :150], keys), want), count
            assert torch.equal(run(q[:1], roomy_k[:, :150], roomy_v[:, :150], keys[:1]), want[:1]), count
    finally:
        torch.set_num_threads(threads)


def test_a_row_that_sees_other_keys_gives_other_values():
    """The check above can fail: one key more changes the row (the broken variant of a key list)."""
    q, k, v = inputs(12, 2, 128, 1, 50, torch.float32, seed=3)
    assert not torch.equal(run(q, k, v, [49]), run(q, k, v, [50]))


@pytest.mark.parametrize("offsets, keys, message", [
    ([0, 3], [0, 1, 50], "key out of range"),
    ([0, 0, 2], [0, 1], "at least one key"),
    ([0, 2], [0, 1, 2], "offsets do not cover"),
])
def test_bad_key_lists_are_refused(offsets, keys, message):
    rows = len(offsets) - 1
    q, k, v = inputs(2, 1, 128, rows, 10, torch.float32)
    with pytest.raises(RuntimeError, match=message):
        ext().one_query_attention(q, k, v, torch.tensor(keys), torch.tensor(offsets), 0.1)


class Module:   # what transformers passes as `module`: only read for its attributes by SDPA's wrapper
    is_causal = True
    num_key_value_groups = 6
    training = False


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_model_level_function_matches_sdpa_row_by_row(dtype, monkeypatch):
    """row_invariant_attention with the kernel and with one SDPA call per row: the same attention."""
    g = torch.Generator().manual_seed(4)
    query = torch.randn(1, 12, 4, 128, generator=g).to(dtype)
    key = torch.randn(1, 2, 40, 128, generator=g).to(dtype)
    value = torch.randn(1, 2, 40, 128, generator=g).to(dtype)
    mask = torch.ones(4, 40, dtype=torch.bool).tril(36)[None, None]   # a verify: 37..40 keys
    assert attention.kernel() is not None
    fast, _ = attention.row_invariant_attention(Module(), query, key, value, mask, scaling=128 ** -0.5)
    monkeypatch.setattr(attention, "kernel", lambda: None)
    slow, _ = attention.row_invariant_attention(Module(), query, key, value, mask, scaling=128 ** -0.5)
    assert fast.shape == slow.shape == (1, 4, 12, 128) and fast.dtype == dtype
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(fast.float(), slow.float(), atol=tolerance, rtol=tolerance)


def test_sdpa_can_be_kept_by_environment(monkeypatch):
    monkeypatch.setenv(attention.KERNEL_ENV, "sdpa")
    try:
        assert configure_runtime().attention_kernel is None and attention.kernel() is None
    finally:
        monkeypatch.delenv(attention.KERNEL_ENV)
        configure_runtime()
    assert attention.kernel() is not None


def test_the_kernel_is_what_the_runtime_was_configured_with_until_configured_again():
    """No import decides it: the one explicit call does (load_pair's, a test's), and it holds until the next."""
    from specviz.runtime import setup

    try:
        setup.configure()   # nothing handed in: transformers' forwards with PyTorch's SDPA
        assert attention.kernel() is None and setup.current().lean_builder is None
    finally:
        configured = configure_runtime()
    assert attention.kernel() is configured.attention_kernel is q4a8.extension()


def test_the_kernel_is_not_used_where_it_would_compute_something_else():
    q = torch.zeros(1, 12, 1, 128)
    k = torch.zeros(1, 2, 5, 128)
    assert attention._kernel_fits(q, k, {})
    assert not attention._kernel_fits(q.half(), k.half(), {})             # fp16: SDPA's own rounding
    assert not attention._kernel_fits(torch.zeros(2, 12, 1, 128), torch.zeros(2, 2, 5, 128), {})   # a batch
    assert not attention._kernel_fits(q, k, {"softcap": 30.0})
    assert not attention._kernel_fits(torch.zeros(1, 12, 1, 100), torch.zeros(1, 2, 5, 100), {})   # head size
