"""Stop within one round (issue 22): the prefill read in chunks and abandoned, the worker, the bounded live view."""
from __future__ import annotations

import torch

from specviz.baseline import autoregressive_generate
from specviz.decoding import PrefillStopped, prefill
from specviz.limits import PREFILL_CHUNK
from specviz.speculative import speculative_generate
from tests.tiny import noisy_copy, tiny_model


class Counting:
    """A model wrapper that counts forwards and the positions each one reads."""

    def __init__(self, model):
        self._model, self.widths = model, []

    def __getattr__(self, name):
        return getattr(self._model, name)

    def __call__(self, *args, **kwargs):
        self.widths.append(kwargs["input_ids"].shape[-1])
        return self._model(*args, **kwargs)


def test_a_stoppable_prefill_reads_the_prompt_in_chunks_with_the_same_cache():
    model = tiny_model(1)
    tokens = torch.randint(0, 16, (1, 2 * PREFILL_CHUNK + 7))
    whole, counted = prefill(model, tokens), Counting(model)
    chunked = prefill(counted, tokens, stop=lambda: False)
    assert counted.widths == [PREFILL_CHUNK, PREFILL_CHUNK, 6]
    assert whole.length == chunked.length == tokens.shape[-1] - 1
    for a, b in zip(whole.cache.layers, chunked.cache.layers):
        torch.testing.assert_close(a.keys, b.keys, atol=1e-5, rtol=1e-4)


def test_a_prefill_stops_between_chunks():
    counted, calls = Counting(tiny_model(1)), []

    def stop():
        calls.append(1)
        return len(calls) > 1          # the second chunk is never read

    tokens = torch.randint(0, 16, (1, 3 * PREFILL_CHUNK))
    try:
        prefill(counted, tokens, stop=stop)
    except PrefillStopped:
        pass
    else:
        raise AssertionError("the prefill did not stop")
    assert counted.widths == [PREFILL_CHUNK]


def test_stop_during_the_prefill_ends_both_decoders_without_a_round():
    target = tiny_model(1)
    draft, ids = noisy_copy(target, 2, 0.3), list(range(16)) * 5
    assert list(speculative_generate(target, draft, ids, k=3, max_new_tokens=8, stop=lambda: True)) == []
    assert list(autoregressive_generate(target, ids, max_new_tokens=8, stop=lambda: True)) == []
    # not stopped: the same tokens as an unstoppable run (the chunks change nothing a greedy run can see)
    free = [r.emitted for r in speculative_generate(target, draft, ids, k=3, max_new_tokens=8)]
    assert [r.emitted for r in speculative_generate(target, draft, ids, k=3, max_new_tokens=8,
                                                    stop=lambda: False)] == free
