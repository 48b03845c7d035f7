"""The packaged Qwen2.5-Coder pair, for real: greedy speculative output equals the target alone.

The pair as the app loads it (every choice "auto": on a CPU the target's weights are int4, int8 or q4a8, all
row-invariant, and the draft's int8 or 4-bit), so a forward over K+1 positions computes every row as a one-token
forward does (docs/testing.md). Each precision on its own: tests/test_models_quant_weights.py; the dense fp32 pair:
tests/test_models.py.
"""
import json
from pathlib import Path

import pytest

from specviz import SamplingConfig, autoregressive_generate, speculative_generate

pytestmark = pytest.mark.real_model
ROOT = Path(__file__).resolve().parent.parent


def bench_prompts(n):
    shared = ROOT.parent / "shared" / "prompts" / "bench.jsonl"
    path = shared if shared.exists() else ROOT / "assets" / "prompts.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["prompt"] for r in rows[:n]]


@pytest.mark.parametrize("index", range(3))
def test_greedy_equals_target_alone_on_real_pair(pair_auto, index):
    assert pair_auto.target_weights in ("int4", "int8", "q4a8"), pair_auto.target_weights   # the app's own choice
    prompt = bench_prompts(3)[index]
    ids = pair_auto.encode_chat(prompt)
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(pair_auto.target, pair_auto.draft, ids, k=4, sampling=greedy,
                                       max_new_tokens=32, tokenizer=pair_auto.tokenizer,
                                       eos_token_id=pair_auto.eos_token_ids))
    spec = [t for r in rounds for t in r.emitted]
    plain = _plain(pair_auto, tuple(ids), 32)   # cached: the draft-tree tests below compare with prompt 1's too
    assert spec == plain, (pair_auto.decode(spec), pair_auto.decode(plain))
    assert len(spec) == 32 or spec[-1] in pair_auto.eos_token_ids
    # A related pair should agree often: the trace is real, not a degenerate always-reject run.
    accepted = sum(r.n_accepted for r in rounds)
    assert accepted / sum(r.k for r in rounds) > 0.3
    assert pair_auto.decode(spec).strip()


CODE_EDIT = ("Add type hints to this function and return it unchanged otherwise:\n\n"
             "def mean(values):\n    total = 0\n    for v in values:\n        total += v\n"
             "    return total / len(values)\n")


@pytest.mark.parametrize("method", ["ngram", "hybrid"])
def test_lookup_drafters_give_the_target_alone_output_on_real_pair(pair_auto, method):
    """Prompt lookup and hybrid drafting, greedy: token for token the target's output."""
    ids = pair_auto.encode_chat(CODE_EDIT)
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(pair_auto.target, pair_auto.draft, ids, k=4, sampling=greedy,
                                       max_new_tokens=32, tokenizer=pair_auto.tokenizer,
                                       eos_token_id=pair_auto.eos_token_ids, drafter=method))
    spec = [t for r in rounds for t in r.emitted]
    assert spec == _plain(pair_auto, tuple(ids), 32)
    assert any(t.source == "ngram" for r in rounds for t in r.drafted)   # the lookup really proposed
    assert all(r.drafter == method for r in rounds)


_PLAIN: dict = {}


def _plain(pair, ids, n):
    if (ids, n) not in _PLAIN:
        _PLAIN[ids, n] = [s.token_id for s in autoregressive_generate(
            pair.target, list(ids), sampling=SamplingConfig(temperature=0), max_new_tokens=n,
            eos_token_id=pair.eos_token_ids)]
    return _PLAIN[ids, n]


@pytest.mark.parametrize("tree", ["dynamic:6", "2x2x1"])
def test_greedy_draft_trees_equal_target_alone_on_real_pair(pair_auto, tree):
    """Draft trees, greedy: the tree-masked verify and the KV path gathering keep the output
    token for token the target's, for EAGLE-2's dynamic tree and a static one."""
    ids = pair_auto.encode_chat(bench_prompts(2)[1])
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(pair_auto.target, pair_auto.draft, ids, tree=tree, sampling=greedy,
                                       max_new_tokens=32, tokenizer=pair_auto.tokenizer,
                                       eos_token_id=pair_auto.eos_token_ids))
    spec = [t for r in rounds for t in r.emitted]
    assert spec == _plain(pair_auto, tuple(ids), 32), pair_auto.decode(spec)
    assert len(spec) / len(rounds) > 1.5   # the tree really saves target passes


def test_the_auto_pairs_lean_stacks_are_built_at_load(pair_auto):
    """Built by the load (the joined weights copied, the C++ stack made), not inside a request's first round, where
    building the target's cost one app call 0.5 s of its first verify (its tokens/s then showed 0.72x)."""
    from specviz.runtime.decoding import lean_available
    from specviz.runtime.state import runtime_of

    for model in (pair_auto.target, pair_auto.draft):
        lean = runtime_of(model).lean
        assert lean is not None and lean.stack is not None and lean_available(model)


def test_the_auto_pairs_target_weights_are_in_huge_pages_and_the_drafts_in_ordinary_ones(pair_auto):
    """The target's weight-only layers, the lean stack's joined projections included (a forward builds them), sit
    in memory advised into 2 MB pages where Linux offers them (models.quant.huge_pages): its verifies read faster,
    the same bits (the tests above). The draft's stay in ordinary pages (huge_pages.ordinary: backing 2 MB pages
    costs a load more than its one-row steps gain)."""
    from specviz.models.quant import huge_pages
    from specviz.models.quant.weights_cache import STORED

    if not huge_pages.available() or not huge_pages.mappings():
        pytest.skip("no transparent huge pages on this machine")
    ids = pair_auto.encode_chat("def add(a, b):")
    for model, advised in ((pair_auto.target, "1"), (pair_auto.draft, "0")):
        list(autoregressive_generate(model, ids, max_new_tokens=2))
        buffers = [b for m in model.modules() if isinstance(m, tuple(STORED.values())) for b in m._buffers.values()
                   if b is not None and b.untyped_storage().nbytes() >= huge_pages.PAGE]
        assert buffers
        assert all(huge_pages.mapping_fields(b.data_ptr()).get("THPeligible") == advised for b in buffers), advised
