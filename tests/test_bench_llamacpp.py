"""llama.cpp as a bench peer: registration, the skip message, and the rows' plumbing.

CI has no llama-cpp-python: these tests hide any installed one (sys.modules["llama_cpp"] = None),
or put a small fake `llama_cpp` in its place that behaves like llama-cpp-python 0.3's `Llama.generate`
(one `eval` per forward, the draft model asked after each emitted token, EOS never special) and emits
a script of tokens, so the bench's own code runs end to end on tiny models.
"""
from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
import torch

from specviz import bench
from specviz.bench import llamacpp
from specviz.bench.methods import ALL_METHODS, K_METHODS, LOOKUP_METHODS, METHODS, PEER_METHODS
from specviz.cli import bench as bench_cli
from specviz.models.loading import ModelPair
from specviz.engine.options import DecodeOptions
from specviz.engine.sampling import SamplingConfig
from tiny import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")   # the fixture lives in conftest.py

WRONG = 10**6   # a token id the tiny vocabulary never emits: a draft the fake target always rejects
N = 8           # new tokens per run in these tests


class TinyPair(ModelPair):
    """A ModelPair around one tiny model, no tokenizer: characters map to the 16 ids."""

    def encode_chat(self, text):
        return [ord(ch) % 16 for ch in text][:10] or [0]


@pytest.fixture(scope="module")
def pair():
    target = tiny_model(11)
    return TinyPair(target=target, draft=tiny_model(12), tokenizer=None, name="tiny → tiny",
                    device=torch.device("cpu"), dtype=torch.float32, load_seconds=0.0)


def greedy_script(pair, flip_at: int | None = None):
    """prompt ids -> the tiny target's own greedy continuation (one token changed at `flip_at`)."""
    known: dict[tuple, list[int]] = {}

    def script(ids):
        if tuple(ids) not in known:
            out = list(bench.run_method("target", pair.target, None, ids, None,
                                        DecodeOptions(sampling=SamplingConfig(0.0), max_new_tokens=2 * N)).output_ids)
            if flip_at is not None:
                out[flip_at] = (out[flip_at] + 1) % 16
            known[tuple(ids)] = out
        return known[tuple(ids)]
    return script


def fake_llama_cpp(script, right: int = 1):
    """A stand-in for the llama_cpp package: `Llama` emits script(prompt); its lookup drafter is right
    about the first `right` tokens of each proposal and wrong about the rest."""
    made = []
    state = types.SimpleNamespace(prompt_len=0)   # where the prompt ends in the ids the drafter is shown

    class Llama:
        def __init__(self, model_path, n_ctx, n_threads, n_threads_batch, verbose, draft_model=None):
            self.init = dict(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads,
                             n_threads_batch=n_threads_batch, verbose=verbose, lookup=draft_model is not None)
            self.draft_model, self.seed, self.calls = draft_model, None, []
            made.append(self)

        def set_seed(self, seed):
            self.seed = seed

        def reset(self):
            pass

        def eval(self, tokens):
            pass

        def generate(self, tokens, **sampling):
            self.calls.append(sampling)
            history, start = list(tokens), len(tokens)
            out = script(list(tokens))
            self.eval(history)
            while True:
                token = out[len(history) - start]
                history.append(token)
                yield token
                drafts = [int(d) for d in self.draft_model(np.array(history, dtype=np.intc))] \
                    if self.draft_model else []
                self.eval([token] + drafts)
                for d in drafts:   # the target confirms drafts up to its first disagreement
                    if d != out[len(history) - start]:
                        break
                    history.append(d)
                    yield d

    class LlamaPromptLookupDecoding:
        def __init__(self, max_ngram_size: int = 2, num_pred_tokens: int = 10):
            self.k = num_pred_tokens

        def __call__(self, input_ids):
            ids, start = [int(x) for x in input_ids], state.prompt_len
            good = script(ids[:start])[len(ids) - start:][:right]
            return np.array(good + [WRONG] * (self.k - len(good)), dtype=np.intc)

    module = types.ModuleType("llama_cpp")
    module.Llama, module.__version__, module.made, module.fake = Llama, "0.0-fake", made, state
    speculative = types.ModuleType("llama_cpp.llama_speculative")
    speculative.LlamaPromptLookupDecoding = LlamaPromptLookupDecoding
    module.llama_speculative = speculative
    return module, speculative


@pytest.fixture
def no_llama_cpp(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)   # `import llama_cpp` now raises ImportError


def install(monkeypatch, module, speculative):
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_speculative", speculative)


def run_cli(pair, tmp_path, *extra):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"category": "code", "prompt": "def f(x):"}\n', encoding="utf-8")
    out = tmp_path / "out"
    rc = bench_cli.main(["--prompts", str(prompts), "--max-new-tokens", str(N), "--repeats", "1",
                         "--baselines", "none", "--out", str(out), "--quiet", *extra],
                        pair_loader=lambda **kw: pair)
    return rc, json.loads((out / "results.json").read_text(encoding="utf-8")) if rc == 0 else None


# ---------------------------------------------------------------- registration
def test_the_peers_are_registered_apart_from_the_methods_every_pair_runs():
    assert PEER_METHODS == ("llamacpp_target", "llamacpp_lookup")
    assert not set(PEER_METHODS) & set(METHODS) and ALL_METHODS == METHODS + PEER_METHODS
    assert "llamacpp_lookup" in K_METHODS and "llamacpp_lookup" in LOOKUP_METHODS
    assert "llamacpp_target" not in K_METHODS
    assert not set(PEER_METHODS) & (set(bench.default_methods("cpu")) | set(bench.default_methods("cuda")))
    args = bench_cli.build_parser().parse_args(["--methods", "target", "llamacpp_target", "llamacpp_lookup"])
    assert args.methods == ["target", "llamacpp_target", "llamacpp_lookup"]


# ---------------------------------------------------------------- without llama-cpp-python
def test_without_llama_cpp_the_bench_says_once_that_it_skipped_them(pair, tmp_path, capsys, no_llama_cpp):
    rc, data = run_cli(pair, tmp_path, "--methods", "target", "llamacpp_target", "llamacpp_lookup",
                       "--k", "2", "--temperature", "0")
    assert rc == 0
    err = capsys.readouterr().err
    assert err.count("were skipped") == 1
    assert "llama-cpp-python is not installed" in err and "pip install llama-cpp-python==" in err
    assert {r["method"] for r in data["rows"]} == {"target"}
    assert "llama-cpp-python is not installed" in data["meta"]["llamacpp"]["skipped"]
    assert data["meta"]["methods"] == ["target"]


def test_a_default_cpu_run_without_llama_cpp_drops_them_with_one_line(pair, capsys, no_llama_cpp):
    """On a CPU the default methods include the peers; here they go, said once, and the rest stay."""
    args = bench_cli.build_parser().parse_args([])
    default = bench.default_methods("cpu") + list(PEER_METHODS)
    chosen, peer, meta = bench_cli._llamacpp_peer(pair, args, default)
    assert chosen == bench.default_methods("cpu") and peer is None
    assert capsys.readouterr().err.count("were skipped") == 1 and "not installed" in meta["skipped"]
    # Named methods without a peer among them: nothing to say.
    assert bench_cli._llamacpp_peer(pair, args, ["target"]) == (["target"], None, None)
    assert capsys.readouterr().err == ""


def test_a_target_without_a_gguf_is_skipped_in_words(pair, tmp_path, capsys, monkeypatch):
    install(monkeypatch, *fake_llama_cpp(greedy_script(pair)))
    rc, data = run_cli(pair, tmp_path, "--methods", "target", "llamacpp_target", "--temperature", "0")
    assert rc == 0
    assert "this target was not loaded from one (give --gguf FILE)" in capsys.readouterr().err
    assert {r["method"] for r in data["rows"]} == {"target"}


def test_a_missing_gguf_file_is_a_bad_argument(pair, tmp_path, capsys):
    rc, _ = run_cli(pair, tmp_path, "--gguf", str(tmp_path / "absent.gguf"))
    assert rc == 2 and "--gguf" in capsys.readouterr().err


# ---------------------------------------------------------------- the rows, with a fake llama_cpp
@pytest.mark.parametrize("flip_at, same", [(None, 1.0), (3, 0.0)])
def test_the_peers_rows_are_timed_and_compared_with_the_target(pair, tmp_path, capsys, monkeypatch, flip_at, same):
    module, speculative = fake_llama_cpp(greedy_script(pair, flip_at))
    module.fake.prompt_len = len(pair.encode_chat("def f(x):"))
    install(monkeypatch, module, speculative)
    gguf = tmp_path / "target.gguf"
    gguf.write_bytes(b"GGUF")
    rc, data = run_cli(pair, tmp_path, "--methods", "target", "llamacpp_target", "llamacpp_lookup",
                       "--k", "3", "--temperature", "0", "--gguf", str(gguf), "--threads", "1")
    assert rc == 0
    rows = {r["method"]: r for r in data["rows"]}
    assert set(rows) == {"target", "llamacpp_target", "llamacpp_lookup"}
    for m in PEER_METHODS:
        r = rows[m]
        assert r["error"] is None and r["new_tokens"] == N and r["tokens_per_s"] > 0
        assert r["matches_target"] is (same == 1.0)
        assert r["theory_speedup"] is None and r["c"] is None   # no draft model: no theory
    assert rows["llamacpp_target"]["k"] is None and rows["llamacpp_target"]["tau"] == 1.0
    # The drafter is right about 1 token of 3 each round: N tokens take 1 prefill + N/2 verify forwards.
    lookup = rows["llamacpp_lookup"]
    assert lookup["k"] == 3 and lookup["rounds"] == 1 + N // 2 and lookup["tau"] == pytest.approx(N / (1 + N // 2))
    assert lookup["acceptance_rate"] == pytest.approx((N - 1 - N // 2) / (3 * N // 2))
    table = data["summary"]["0.0"]["table"]
    assert {t["method"]: t["matches_target"] for t in table if t["method"] in PEER_METHODS} == \
        {"llamacpp_target": same, "llamacpp_lookup": same}
    assert "specviz_best_speedup_vs_llamacpp_target" in data["summary"]["0.0"]
    assert data["meta"]["llamacpp"] == {"gguf": "target.gguf", "threads": 1, "llama_cpp_python": "0.0-fake",
                                        "extra_buffers": not llamacpp._cpu_has_amx()}
    printed = capsys.readouterr().out
    assert "llama.cpp's own run of the target's GGUF file" in printed and "llamacpp_lookup" in printed
    # One context per kind, loaded once (warm-up and timed runs share it), sized for prompt + tokens.
    kinds = sorted(ll.init["lookup"] for ll in module.made)
    assert kinds == [False, True]
    assert all(ll.init["n_ctx"] % 512 == 0 and ll.init["n_threads"] == 1 for ll in module.made)
    assert all(call["temp"] == 0.0 and call["min_p"] == 0.0 for ll in module.made for call in ll.calls)


def test_sampling_reaches_llama_cpp_as_the_bench_asks():
    assert llamacpp.sampling_kwargs(SamplingConfig(0.0)) == dict(temp=0.0, top_k=0, top_p=1.0, min_p=0.0,
                                                                  typical_p=1.0, repeat_penalty=1.0)
    sampled = llamacpp.sampling_kwargs(SamplingConfig(0.7, 5, 0.9))
    assert sampled["temp"] == 0.7 and sampled["top_k"] == 5 and sampled["top_p"] == 0.9
    assert sampled["min_p"] == 0.0 and sampled["repeat_penalty"] == 1.0   # llama.cpp's extras off


def test_a_context_is_reused_until_a_run_needs_more_positions(pair, monkeypatch, tmp_path):
    module, speculative = fake_llama_cpp(greedy_script(pair))
    install(monkeypatch, module, speculative)
    peer, reason = llamacpp.peer_for(tmp_path, 2)   # a folder is not a GGUF file
    assert peer is None and "no GGUF file" in reason
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    peer, reason = llamacpp.peer_for(gguf, 2)
    assert reason is None
    first = peer.context(False, 100)
    assert peer.context(False, 512) is first and first.init["n_ctx"] == 512
    bigger = peer.context(False, 513)
    assert bigger is not first and bigger.init["n_ctx"] == 1024
    assert peer.context(True, 10) is not bigger and peer.context(True, 10).init["lookup"]


def test_throughput_counts_from_the_first_emission_like_every_method():
    run = llamacpp._as_run("llamacpp_target", None, 0.0, [(1.0, 5), (1.5, 6), (2.0, 7), (2.5, 8)], 4, 0)
    assert run.first_emit_seconds == 1.0 and run.seconds == 1.5 and run.total_seconds == 2.5
    assert run.tokens_per_s == pytest.approx(3 / 1.5) and run.e2e_tokens_per_s == pytest.approx(4 / 2.5)
    assert run.output_ids == [5, 6, 7, 8] and run.tau == 1.0
    with pytest.raises(ValueError):
        llamacpp.run_llamacpp("target", None, [1], None, SamplingConfig(0.0), 4, 0)


def test_extra_weight_buffers_are_turned_off_only_for_the_constructor_when_asked():
    """The AMX crash workaround: llama.cpp's default model params with use_extra_bufts off, then put back."""
    low = types.SimpleNamespace(llama_model_default_params=lambda: types.SimpleNamespace(use_extra_bufts=True))
    module = types.SimpleNamespace(llama=types.SimpleNamespace(llama_cpp=low))
    original = low.llama_model_default_params
    with llamacpp._model_params(module, extra_buffers=False):
        assert low.llama_model_default_params().use_extra_bufts is False
    assert low.llama_model_default_params is original and original().use_extra_bufts is True
    with llamacpp._model_params(module, extra_buffers=True):
        assert low.llama_model_default_params().use_extra_bufts is True
