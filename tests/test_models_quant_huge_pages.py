"""Stored weights moved into 2 MB pages (specviz.models.quant.huge_pages): the same values, the same tensor objects,
memory the kernel was asked to back with transparent huge pages, and nothing moved where it must not be."""
import pytest
import torch

from specviz.models.quant import huge_pages


def advised(t: torch.Tensor) -> bool:
    flags = huge_pages.mapping_fields(t.data_ptr())
    return flags is not None and flags.get("THPeligible") == "1"


def madvise_only() -> bool:
    """THP set to "madvise": only what asked is eligible (with "always" every anonymous mapping is, so a test cannot
    tell asked from not)."""
    try:
        return "[madvise]" in huge_pages.THP_SETTING.read_text()
    except OSError:
        return False


def not_advised(t: torch.Tensor) -> bool:
    return not advised(t) if madvise_only() else True


needs_thp = pytest.mark.skipif(not huge_pages.available() or not huge_pages.mappings(),
                               reason="no transparent huge pages on this machine")


class Stored(torch.nn.Module):
    """A stand-in for one of specviz's weight-only layers: a packed buffer with a view of it, and a small bias."""

    def __init__(self):
        super().__init__()
        packed = torch.arange(3 << 20, dtype=torch.int64).to(torch.uint8)
        self.register_buffer("packed", packed)
        self.register_buffer("scales", packed[1 << 20:].view(torch.float32)[:1000])   # a view of the same storage
        self.register_buffer("bias", torch.randn(16))


@needs_thp
def test_the_layers_buffers_move_with_their_values_and_shared_storage():
    model = torch.nn.Sequential(Stored(), torch.nn.Linear(4, 4))
    layer = model[0]
    packed, scales = layer.packed, layer.scales
    before = packed.clone(), scales.clone(), layer.bias.data_ptr()
    moved = huge_pages.into_huge_pages(model, (Stored,))
    assert moved == 3 << 20
    assert layer.packed is packed and layer.scales is scales   # the same objects: whatever holds them sees the move
    assert torch.equal(packed, before[0]) and torch.equal(scales.view(torch.uint8), before[1].view(torch.uint8))
    assert packed.untyped_storage().data_ptr() == scales.untyped_storage().data_ptr()   # still one storage
    assert packed.data_ptr() % huge_pages.PAGE == 0 and advised(packed)
    assert layer.bias.data_ptr() == before[2]   # under 2 MB: left where it was
    assert not_advised(model[1].weight)
    assert huge_pages.advised_bytes(model, (Stored,)) == 3 << 20
    assert huge_pages.process_huge_bytes() % huge_pages.PAGE == 0   # whole huge pages (or none free)


@needs_thp
def test_memory_of_2_mb_or_more_lands_in_advised_pages_and_a_small_one_in_ordinary():
    big = torch.arange(1 << 20, dtype=torch.float32).view(1024, 1024)   # 4 MB
    copied = huge_pages.empty(big.shape, big.dtype).copy_(big)
    assert torch.equal(copied, big) and copied.is_contiguous() and copied.data_ptr() != big.data_ptr()
    assert advised(copied) and copied.data_ptr() % huge_pages.PAGE == 0
    small = huge_pages.empty((10,), torch.float32).copy_(torch.ones(10))
    assert torch.equal(small, torch.ones(10)) and not_advised(small)


@needs_thp
def test_a_storage_written_into_2_mb_pages_already_is_not_moved_again():
    """A load writes the GGUF's repacked tiles straight into 2 MB pages (huge_pages.empty); moving the model's
    buffers afterwards copies only those that are not there yet (copying them again cost 1.4 s of a warm load)."""
    there = huge_pages.empty((1 << 20,), torch.float32).fill_(1.0)
    ordinary = torch.ones(1 << 20)
    ptr = there.data_ptr()
    assert huge_pages.move_storages([there, ordinary]) == 4 << 20   # the ordinary one only
    assert there.data_ptr() == ptr and advised(there) and advised(ordinary)


def test_nothing_moves_when_switched_off(monkeypatch):
    monkeypatch.setenv(huge_pages.ENV_VAR, "0")
    layer = Stored()
    where = layer.packed.data_ptr()
    assert huge_pages.advised_bytes(layer, (Stored,)) == 0
    assert not huge_pages.available()
    assert huge_pages.into_huge_pages(layer, (Stored,)) == 0
    assert layer.packed.data_ptr() == where
    assert not_advised(huge_pages.empty((2 << 20,), torch.uint8))


@needs_thp
def test_within_ordinary_nothing_is_asked_into_huge_pages_and_only_there():
    """huge_pages.ordinary (a draft's load): `empty` gives ordinary memory and nothing moves inside it; outside, and
    in another thread meanwhile, 2 MB pages as before."""
    import threading

    seen = {}
    with huge_pages.ordinary():
        inside = huge_pages.empty((4 << 20,), torch.uint8)
        model = torch.nn.Sequential(Stored())
        moved = huge_pages.into_huge_pages(model, (Stored,))
        other = threading.Thread(target=lambda: seen.update(t=huge_pages.empty((4 << 20,), torch.uint8)))
        other.start()
        other.join()
    outside = huge_pages.empty((4 << 20,), torch.uint8)
    assert moved == 0 and not_advised(inside) and not_advised(model[0].packed)
    assert advised(outside) and advised(seen["t"]) and huge_pages.available()


def test_nothing_moves_where_the_kernel_never_gives_huge_pages(monkeypatch, tmp_path):
    setting = tmp_path / "enabled"
    setting.write_text("always madvise [never]\n")
    monkeypatch.setattr(huge_pages, "THP_SETTING", setting)
    assert not huge_pages.available()
    setting.write_text("always [madvise] never\n")
    monkeypatch.setattr(huge_pages.sys, "platform", "linux")
    assert huge_pages.available() == hasattr(huge_pages.mmap, "MADV_HUGEPAGE")


@needs_thp
def test_tensors_that_train_or_live_elsewhere_are_left_alone():
    layer = Stored()
    layer.register_buffer("packed", torch.zeros(3 << 20, requires_grad=True))   # a buffer that trains
    assert huge_pages.into_huge_pages(layer, (Stored,)) == 0
    small = torch.nn.Module()
    small.register_buffer("w", torch.zeros(1000))
    small.register_buffer("none", None)
    assert huge_pages.into_huge_pages(small, (torch.nn.Module,)) == 0


@needs_thp
def test_the_joined_projections_of_the_lean_stack_are_placed_too(ext):
    from specviz.models import lean_forward
    from specviz.models.quant import q4a8

    gen = torch.Generator().manual_seed(0)

    def layer(n=1024, k=1024):   # one 4-bit layer of 0.75 MB: three joined pass 2 MB
        codes = torch.randint(0, 16, (n, k), generator=gen, dtype=torch.int32)
        scale, lo = torch.rand(n, k // 32, generator=gen) * 0.02 + 1e-4, -torch.rand(n, k // 32, generator=gen) * 0.1
        dense = (codes.reshape(n, -1, 32).float() * scale[..., None] + lo[..., None]).reshape(n, k)
        return q4a8.Q4A8Linear(dense, None, (codes, scale, lo))

    linears = [layer() for _ in range(3)]
    values = [m.packed.clone() for m in linears]
    packed, width, *_ = lean_forward._joined_part(linears, torch.float32)
    assert width == 3 * 1024 and advised(packed)
    assert all(torch.equal(m.packed, v) and m.packed.untyped_storage().data_ptr() == packed.untyped_storage().data_ptr()
               for m, v in zip(linears, values))


@needs_thp
@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_converted_layers_land_in_huge_pages_fresh_and_read_back_from_the_cache(tmp_path, monkeypatch, kind):
    from transformers import AutoModelForCausalLM

    from specviz.models.quant.weights_cache import STORED, convert_cached, entry_path
    from tiny import tiny_model

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    tiny_model(1, vocab=8192, hidden=512, layers=1).save_pretrained(folder)   # an output layer of 4 M weights
    for read_back in (False, True):
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        assert entry_path(model, kind, False).is_file() == read_back
        convert_cached(model, kind, strict_grid=False)
        big = [b for m in model.modules() if isinstance(m, tuple(STORED.values())) for b in m._buffers.values()
               if b is not None and b.untyped_storage().nbytes() >= huge_pages.PAGE]
        assert big and all(advised(b) for b in big)
