"""The packaged Qwen2.5-Coder pair, for real: greedy speculative output equals the target alone.

fp32, so that a forward over K+1 positions and a one-token forward agree to the
last bit that matters (bf16 can flip near-ties; see README).
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


@pytest.fixture(scope="module")
def pair_fp32():
    from specviz.models import load_pair

    return load_pair(dtype="fp32", device="cpu")


@pytest.mark.parametrize("index", range(3))
def test_greedy_equals_target_alone_on_real_pair(pair_fp32, index):
    prompt = bench_prompts(3)[index]
    ids = pair_fp32.encode_chat(prompt)
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(pair_fp32.target, pair_fp32.draft, ids, k=4, sampling=greedy,
                                       max_new_tokens=32, tokenizer=pair_fp32.tokenizer,
                                       eos_token_id=pair_fp32.eos_token_ids))
    spec = [t for r in rounds for t in r.emitted]
    plain = [s.token_id for s in autoregressive_generate(pair_fp32.target, ids, sampling=greedy, max_new_tokens=32,
                                                         eos_token_id=pair_fp32.eos_token_ids)]
    assert spec == plain, (pair_fp32.decode(spec), pair_fp32.decode(plain))
    assert len(spec) == 32 or spec[-1] in pair_fp32.eos_token_ids
    # A related pair should agree often: the trace is real, not a degenerate always-reject run.
    accepted = sum(r.n_accepted for r in rounds)
    assert accepted / sum(r.k for r in rounds) > 0.3
    assert pair_fp32.decode(spec).strip()
