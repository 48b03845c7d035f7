"""The runtime's configuration is one explicit call, a model's preparation is done once where it is loaded, and a
run's facts come back as a frozen report (specviz.runtime.setup, specviz.runtime.report)."""
import dataclasses

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from specviz import Reporting, RunReport, SamplingConfig, autoregressive_generate, run_to_end, speculative_generate
from specviz.models.prepare import configure_runtime, prepare_models
from specviz.runtime import attention, setup
from specviz.runtime.attention import ROWS
from tiny import noisy_copy, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")


def bare(seed: int) -> Qwen2ForCausalLM:
    """A tiny Qwen2 as transformers builds it: nobody prepared it."""
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=16, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         tie_word_embeddings=False, eos_token_id=None, bos_token_id=None, pad_token_id=None)
    return Qwen2ForCausalLM(config).eval().float()


def test_the_decoder_changes_nothing_on_the_models_it_is_given():
    target, draft = bare(1), bare(2)
    for _ in range(2):
        list(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=8))
        list(autoregressive_generate(target, [1, 2, 3], max_new_tokens=4))
    assert target.config._attn_implementation == draft.config._attn_implementation == "sdpa"
    prepare_models(target, draft)   # what load_pair does at its end
    assert target.config._attn_implementation == draft.config._attn_implementation == ROWS


@pytest.mark.parametrize("how", [dict(k=3), dict(tree="2x2"), dict(tree="dynamic:4")], ids=["chain", "tree", "dynamic"])
def test_decoding_a_prepared_model_twice_does_the_same(how):
    target = tiny_model(1)
    draft = noisy_copy(target, 2, 0.3)
    runs = [[(r.emitted, r.n_accepted) for r in speculative_generate(target, draft, [1, 2, 3],
                                                                     sampling=SamplingConfig(0.8), seed=4,
                                                                     max_new_tokens=16, **how)] for _ in range(2)]
    assert runs[0] == runs[1] and runs[0]


def test_the_configuration_is_the_last_explicit_call():
    try:
        assert setup.configure() == setup.Setup() and attention.kernel() is None
        model = bare(3)
        assert setup.prepare(model) and model.config._attn_implementation == ROWS   # no lean builder: nothing built
    finally:
        configured = configure_runtime()
    assert setup.current() is configured and attention.kernel() is configured.attention_kernel


def test_a_run_returns_a_frozen_report_and_tells_each_fact_as_it_comes():
    target = tiny_model(1)
    draft = noisy_copy(target, 2, 0.3)
    events = []
    rounds, report = run_to_end(speculative_generate(target, draft, [1, 2, 3], k=3, max_new_tokens=8,
                                                     on_event=lambda name, value: events.append((name, value))))
    assert rounds and isinstance(report, RunReport) and not report.stopped and report.warmup_seconds is None
    assert report.prefill_seconds >= 0 and report.drafter_seconds >= 0
    assert dict(events) == {"drafter_seconds": report.drafter_seconds, "prefill_seconds": report.prefill_seconds}
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.stopped = True
    steps = Reporting(autoregressive_generate(target, [1, 2, 3], max_new_tokens=5))
    assert len(list(steps)) == 5 and steps.report.prefill_seconds >= 0 and steps.report.drafter_seconds is None


def test_a_run_stopped_before_its_first_round_says_so_with_no_prefill_time():
    target = tiny_model(1)
    for loop in (speculative_generate(target, noisy_copy(target, 2, 0.3), [1, 2, 3], k=3, max_new_tokens=8,
                                      stop=lambda: True),
                 autoregressive_generate(target, [1, 2, 3], max_new_tokens=8, stop=lambda: True)):
        items, report = run_to_end(loop)
        assert items == [] and report.stopped and report.prefill_seconds is None
