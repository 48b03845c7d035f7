"""One row's read-ahead in specviz's 4-bit products (specviz.models.quant.read_ahead): measured at load, and never
a change to any result.

The kernels have two variants of every one-row tile, with and without software prefetch of the weights; the
setting picks one. The proofs: each layout (q4, q8, q4k, q4h, q6k) gives the same bits both ways on every instruction
set here, at one row and in any batch (a one-row variant mapped to the wrong layout, or computing anything else,
fails them); the load's choice is one of the two, forced by SPECVIZ_Q4_READ_AHEAD where set, a bad value refused.
"""
from __future__ import annotations

import pytest
import torch

from specviz.models.quant import q4a8, read_ahead
from tests.test_models_quant_q4a8 import _activations, _layers, _q4h_layers, _q4k_layers, rows_that_differ_alone
from gguf_blocks import q6k_layer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def restored(ext):
    """The setting as it was before the test (the extension is shared by the whole session)."""
    before = read_ahead.current()
    yield
    read_ahead.set_rows(before)


def _every_layout():
    return {"q4": _layers()[0], "q8": _layers()[1], "q4k": _q4k_layers()[0], "q4h": _q4h_layers()[0],
            "q6k": q6k_layer()[0]}


@pytest.mark.parametrize("isa", list(q4a8.ISAS))
def test_every_layout_gives_the_same_bits_with_and_without_read_ahead(restored, isa):
    if isa not in q4a8.supported_isas():
        pytest.skip(f"this CPU does not run {isa}")
    differ = []
    with torch.inference_mode(), q4a8.isa_forced(isa):
        for name, layer in _every_layout().items():
            x = _activations(9, layer.in_features)
            outs = {}
            for rows in read_ahead.SETTINGS:
                read_ahead.set_rows(rows)
                assert read_ahead.current() == rows
                outs[rows] = [layer(x[r:r + 1]) for r in range(3)] + [layer(x)]
                if rows == 1:   # the one-row variant with read-ahead is row-invariant too
                    assert rows_that_differ_alone(layer, x) == [], name
            differ += [name for a, b in zip(outs[1], outs[2]) if not torch.equal(a, b)]
    assert differ == []


def test_a_setting_other_than_one_or_two_rows_is_refused(restored):
    for bad in (0, 3, 8):
        with pytest.raises(ValueError):
            read_ahead.set_rows(bad)
        with pytest.raises(RuntimeError, match="1 or 2 rows"):
            q4a8.extension().set_prefetch_rows(bad)


def test_choose_times_both_settings_and_keeps_one(restored, monkeypatch):
    monkeypatch.delenv(read_ahead.ENV_VAR, raising=False)
    model = torch.nn.Sequential(*_layers(n=64, k=256)[:1], torch.nn.Linear(64, 64, bias=False), _layers(64, 64)[1])
    seen = read_ahead.choose(model, passes=2)
    assert seen["choice"] in (1, 2) and not seen["forced"] and seen["layers"] == 2
    assert set(seen["ms"]) == {"1", "2"} and all(v > 0 for v in seen["ms"].values())
    assert read_ahead.current() == seen["choice"] == read_ahead.decide(seen["ratio"]) and seen["ratio"] > 0


def test_one_row_reads_ahead_only_where_that_was_clearly_faster():
    assert read_ahead.decide(0.85) == 1
    assert read_ahead.decide(0.98) == 2   # within 3 %: the default stays
    assert read_ahead.decide(1.2) == 2


def test_the_environment_forces_a_setting_and_a_bad_one_is_refused(restored, monkeypatch):
    model = torch.nn.Sequential(_layers()[0])
    for rows in (1, 2):
        monkeypatch.setenv(read_ahead.ENV_VAR, str(rows))
        assert read_ahead.choose(model) == {"choice": rows, "forced": True} and read_ahead.current() == rows
    monkeypatch.setenv(read_ahead.ENV_VAR, "3")
    with pytest.raises(ValueError, match=read_ahead.ENV_VAR):
        read_ahead.choose(model)


def test_a_model_without_q4a8_layers_is_left_alone(restored):
    assert read_ahead.choose(torch.nn.Sequential(torch.nn.Linear(32, 32))) is None
