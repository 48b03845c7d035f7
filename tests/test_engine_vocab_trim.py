"""A trimmed draft vocabulary keeps the output exactly the target's (specviz.engine.vocab_trim, ModelDrafter(vocab_subset)).

The draft proposes only tokens of a 10-of-16 subset of a tiny model's vocabulary,
with q = 0 outside it; the target still emits every token, the ones outside the
subset through the residual and the bonus. Checked four ways, as for the other
drafters: exact enumeration of P(emit x) from the drafter's own q, chi-square fits
of 20,000 samples through the decoder's round, greedy token-for-token equality,
and a deliberately wrong q (the untrimmed softmax) that the same test rejects.
"""
import json
from pathlib import Path

import pytest
import torch

from specviz import SamplingConfig, autoregressive_generate, speculative_generate
from specviz.engine import lossless, rule, speculative
from specviz.runtime.decoding import KVCache, forward_hidden, forward_logits
from specviz.engine.drafters import DRAFTERS, ModelDrafter, Proposal, make_drafter
from specviz.engine.options import decode_options
from specviz.engine.lossless import chi_square_fit, exact_prefixes, sample_prefixes
from specviz.engine.sampling import probabilities
from specviz.engine.vocab_trim import VocabTable, VocabTableError, subset_from_ranking, vocab_subset
from tiny import noisy_copy, tiny_model

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 16
SUBSET = torch.tensor([0, 1, 2, 3, 5, 6, 8, 10, 12, 14])   # 10 of 16; ~40 % of the target's mass lies outside
PROMPT = [1, 2]
N_SAMPLES, N_TOKENS = 20_000, 2
P_VALUE_FLOOR = 1e-3
# The tiny pair's table: 0 and 1 always kept (standing in for EOS and specials), then a ranking.
TINY_TABLE = VocabTable(Path("tiny.vocab.json"), {"model_vocab": VOCAB}, observed=(14, 12, 10, 8, 6, 5, 3, 2),
                        counts=(8, 7, 6, 5, 4, 3, 2, 1), always=(0, 1))


pytestmark = pytest.mark.usefixtures("one_thread")   # the fixture lives in conftest.py


@pytest.fixture(scope="module")
def models():
    target = tiny_model(51, vocab=VOCAB, scale=0.6)
    return target, noisy_copy(target, 7, 0.8)


def test_the_tiny_table_gives_the_test_subset():
    assert torch.equal(vocab_subset(TINY_TABLE, 10), SUBSET)
    assert torch.equal(vocab_subset(TINY_TABLE, 4, extra_ids=[15]), torch.tensor([0, 1, 14, 15]))
    with pytest.raises(ValueError):
        vocab_subset(TINY_TABLE, 2, extra_ids=[15])   # cannot hold 0, 1 and the EOS 15
    # the prior: unobserved ids follow in id order
    assert TINY_TABLE.ranking().tolist()[8:] == [0, 1, 4, 7, 9, 11, 13, 15]
    assert subset_from_ranking(torch.tensor([3, 2, 1, 0]), 2, fixed=[0]).tolist() == [0, 3]


# ---------------------------------------------------------------- the forward
def test_hidden_states_times_the_output_weight_are_the_logits(models):
    """forward_hidden ends after the final norm: the head applied to it gives forward_logits' logits."""
    _, draft = models
    ids = torch.tensor([[1, 2, 3, 4]])
    for cache_of in (lambda: None, lambda: KVCache(draft), lambda: KVCache(draft, static=True, max_len=16)):
        a, b = cache_of(), cache_of()
        if a is not None:   # a warm cache: two tokens read before
            forward_logits(draft, ids[:, :2], a, 1), forward_hidden(draft, ids[:, :2], b, 1)
        feed = ids[:, 2:] if a is not None else ids
        logits = forward_logits(draft, feed, a, 2)
        hidden = forward_hidden(draft, feed, b, 2)
        assert torch.allclose(hidden @ draft.lm_head.weight.T, logits, atol=1e-5)
        if a is not None:
            assert a.get_seq_length() == b.get_seq_length() == 4


def test_a_trimmed_draft_step_never_runs_the_full_head(models, monkeypatch):
    _, draft = models
    drafter = ModelDrafter(draft, VOCAB, vocab_subset=SUBSET)
    monkeypatch.setattr(draft.lm_head, "forward", _no_full_head)
    tokens = torch.tensor([[1, 2, 3]])
    drafter.begin(tokens[:, :1])   # a one-token prompt: nothing to prefill
    prop = drafter.propose(tokens, 3, SamplingConfig(1.0), torch.Generator().manual_seed(0))
    assert prop.ids.shape == (1, 3)


def _no_full_head(*args, **kwargs):
    raise AssertionError("the full output layer ran during a trimmed draft step")


@pytest.mark.parametrize("cfg", [SamplingConfig(1.0), SamplingConfig(0.7, top_k=5), SamplingConfig(0.8, top_p=0.7),
                                 SamplingConfig(0.0)], ids=["T1", "T0.7-topk", "topp", "greedy"])
def test_q_lives_on_the_subset_and_is_what_the_tokens_were_drawn_from(models, cfg):
    _, draft = models
    drafter = ModelDrafter(draft, VOCAB, vocab_subset=SUBSET)
    tokens = torch.tensor([PROMPT] * 2000)
    prop = drafter.propose(tokens, 2, cfg, torch.Generator().manual_seed(1))
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[SUBSET] = False
    assert torch.allclose(prop.q.sum(-1), torch.ones(2000, 2)) and (prop.q[..., outside] == 0).all()
    assert torch.isin(prop.ids, SUBSET).all()
    # q at the first position = the sampling transform of the subset's logits (the full head, restricted)
    full = draft(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    expected = probabilities(full.masked_fill(outside, float("-inf")), cfg)
    assert torch.allclose(prop.q[0, 0], expected, atol=1e-6)
    if not cfg.greedy:   # and the drafted tokens follow it
        freq = torch.bincount(prop.ids[:, 0], minlength=VOCAB).float() / 2000
        assert (freq - expected).abs().max() < 0.05


# ---------------------------------------------------------------- exact enumeration
@pytest.mark.parametrize("cfg", [SamplingConfig(1.0), SamplingConfig(0.7), SamplingConfig(0.7, top_k=4),
                                 SamplingConfig(0.0)], ids=["T1", "T0.7", "T0.7-topk4", "greedy"])
def test_a_round_with_the_trimmed_q_emits_exactly_p(models, cfg):
    """P(emit x) = q(x)·a(x) + P(reject)·r(x) with the drafter's own q: equal to the target's p, tokens
    outside the subset included (they come only from the residual)."""
    target, draft = models
    drafter = ModelDrafter(draft, VOCAB, vocab_subset=SUBSET)
    q = drafter.propose(torch.tensor([PROMPT]), 1, cfg, torch.Generator().manual_seed(0)).q[0, :1].double()
    p = probabilities(target(input_ids=torch.tensor([PROMPT])).logits[0, -1:], cfg).double()
    ok = q[0] > 0
    a = torch.zeros(VOCAB, dtype=torch.float64)
    a[ok] = rule.acceptance_prob(p[0, ok], q[0, ok])
    emit = q[0] * a + (q[0] * (1 - a)).sum() * rule.residual(p, q)[0]
    assert torch.allclose(emit, p[0], atol=1e-6), (emit - p[0]).abs().max()
    if not cfg.greedy:
        assert p[0, ~ok].sum() > 0.1   # the case is not vacuous: the target puts mass outside the subset


# ---------------------------------------------------------------- statistical, through the decoder's round
def _trimmed_factory(wrap=None, hybrid=False):
    """make_drafter with the tiny table (sample_prefixes and speculative_generate name methods only); `hybrid`: the
    run's own chain (its k, its drafter "hybrid_trimmed")."""
    def factory(method, draft, vocab, **kwargs):
        drafter = make_drafter(method if hybrid else "trimmed", draft, vocab, table=TINY_TABLE,
                               trim_size=len(SUBSET), **kwargs)
        return wrap(drafter) if wrap else drafter
    return factory


_EXACT: dict = {}


def _fit(models, cfg, monkeypatch, wrap=None, drafter="trimmed", **options):
    target, draft = models
    monkeypatch.setattr(lossless, "make_drafter", _trimmed_factory(wrap, hybrid=drafter == "hybrid_trimmed"))
    counts = sample_prefixes(target, draft, PROMPT, N_TOKENS, N_SAMPLES,
                             decode_options(k=3, sampling=cfg, drafter=drafter, **options))
    if cfg not in _EXACT:
        _EXACT[cfg] = exact_prefixes(target, PROMPT, N_TOKENS, cfg)
    return counts, chi_square_fit(counts, _EXACT[cfg])


@pytest.mark.statistical
@pytest.mark.parametrize("temperature, static", [(1.0, False), (0.7, False), (0.7, True)])
def test_trimmed_drafting_keeps_the_target_distribution(models, monkeypatch, temperature, static):
    counts, (impossible, p_value) = _fit(models, SamplingConfig(temperature), monkeypatch, static_cache=static)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"
    outside = sum(c for seq, c in counts.items() if not torch.isin(torch.tensor(seq), SUBSET).all())
    assert outside > 0.2 * N_SAMPLES   # not vacuous: tokens outside the subset really are emitted


@pytest.mark.statistical
def test_the_hybrid_with_the_trimmed_draft_keeps_the_target_distribution(models, monkeypatch):
    """Its model rounds draft from the subset, with the adaptive stop (the bench's settings)."""
    counts, (impossible, p_value) = _fit(models, SamplingConfig(0.7), monkeypatch, drafter="hybrid_trimmed",
                                         adaptive_threshold=0.3)
    assert not impossible and p_value > P_VALUE_FLOOR, f"chi-square p = {p_value:.2e}"
    outside = sum(c for seq, c in counts.items() if not torch.isin(torch.tensor(seq), SUBSET).all())
    assert outside > 0.2 * N_SAMPLES


class UntrimmedQ:
    """The known trap: sample from the trimmed q but report q from the full softmax."""

    def __init__(self, inner: ModelDrafter):
        self.inner = inner

    def begin(self, tokens):
        self.inner.begin(tokens)

    def commit(self, path):
        self.inner.commit(path)

    def propose(self, tokens, k, sampling, generator) -> Proposal:
        prop = self.inner.propose(tokens, k, sampling, generator)
        seq = torch.cat([tokens, prop.ids], 1)
        logits = self.inner.model(input_ids=seq).logits[:, tokens.shape[1] - 1: -1]
        return Proposal(prop.ids, probabilities(logits, sampling))


@pytest.mark.statistical
def test_the_same_test_catches_q_from_the_untrimmed_softmax(models, monkeypatch):
    _, (_, p_value) = _fit(models, SamplingConfig(1.0), monkeypatch, wrap=UntrimmedQ)
    assert p_value < 1e-6, f"a q that is not the sampled distribution went unnoticed (p = {p_value:.2e})"


# ---------------------------------------------------------------- greedy equality
@pytest.mark.parametrize("static", [False, True])
def test_greedy_trimmed_output_is_the_target_alone(monkeypatch, static):
    # A target whose greedy text mixes tokens in and out of the subset, and a close draft: both branches.
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.1)
    monkeypatch.setattr(speculative, "make_drafter", _trimmed_factory())
    prompt = [1, 2, 3]
    rounds = list(speculative_generate(target, draft, prompt, k=3, sampling=SamplingConfig(0), max_new_tokens=40,
                                       drafter="trimmed", static_cache=static))
    out = [t for r in rounds for t in r.emitted]
    assert out == [s.token_id for s in autoregressive_generate(target, prompt, sampling=SamplingConfig(0),
                                                               max_new_tokens=40)]
    assert any(t not in SUBSET.tolist() for t in out)   # some output only the target could give
    assert any(r.n_accepted for r in rounds) and all(r.drafter == "trimmed" for r in rounds)


def test_greedy_hybrid_trimmed_output_is_the_target_alone_with_both_sources(monkeypatch):
    """Prompt lookup on the repeats, the trimmed draft elsewhere, and the target's tokens throughout."""
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.1)
    monkeypatch.setattr(speculative, "make_drafter", _trimmed_factory(hybrid=True))
    prompt = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3]
    rounds = list(speculative_generate(target, draft, prompt, k=3, sampling=SamplingConfig(0), max_new_tokens=40,
                                       drafter="hybrid_trimmed"))
    out = [t for r in rounds for t in r.emitted]
    assert out == [s.token_id for s in autoregressive_generate(target, prompt, sampling=SamplingConfig(0),
                                                               max_new_tokens=40)]
    sources = {t.source for r in rounds for t in r.drafted}
    assert sources == {"ngram", "model"}, sources   # both kinds of round ran
    model_drafts = [t.token_id for r in rounds for t in r.drafted if t.source == "model"]
    assert set(model_drafts) <= set(SUBSET.tolist())   # the model rounds drafted from the subset only
    assert all(r.drafter == "hybrid_trimmed" for r in rounds)


def test_hybrid_trimmed_is_a_drafter_the_hybrid_around_a_trimmed_model(models):
    from specviz.engine.drafters import HybridDrafter
    from specviz.engine.options import Chain

    _, draft = models
    assert "hybrid_trimmed" in DRAFTERS
    hybrid = make_drafter(Chain(2, 0.5, "hybrid_trimmed", lookup_k=5), draft, VOCAB, table=TINY_TABLE, trim_size=10)
    assert isinstance(hybrid, HybridDrafter) and hybrid.name == "hybrid_trimmed" and hybrid.model_k == 2
    assert torch.equal(hybrid.model.subset, SUBSET) and hybrid.model.threshold == 0.5
    whole = make_drafter("hybrid_trimmed", draft, VOCAB)   # 16 tokens fit in the default N: a plain hybrid
    assert whole.model.subset is None and whole.name == "hybrid"
    with pytest.raises(ValueError, match="hybrid drafters"):
        Chain(2, drafter="trimmed", lookup_k=5)


# ---------------------------------------------------------------- the shipped table and its checks
def test_trimmed_is_a_drafter_name_and_refuses_a_table_for_another_vocabulary(models):
    _, draft = models
    assert "trimmed" in DRAFTERS
    with pytest.raises(VocabTableError, match="151936-token"):
        make_drafter("trimmed", draft, VOCAB, trim_size=10)   # the shipped Qwen table on a 16-token model
    whole = make_drafter("trimmed", draft, VOCAB)   # 16 tokens fit in the default N: nothing to trim
    assert isinstance(whole, ModelDrafter) and whole.subset is None
    with pytest.raises(ValueError):
        ModelDrafter(draft, VOCAB, vocab_subset=torch.tensor([3, 2]))   # not ascending


def test_a_refused_table_is_said_in_the_pages_language(models, tmp_path):
    """A Hub pair with a trimmed drafter meets the packaged tokenizer's table: the page says why in English and in
    Spanish (keyed sentences), not the general "something went wrong"; the CLI's str() is the English sentence."""
    import pickle

    from specviz.engine.vocab_trim import load_table
    from specviz.strings import t
    from specviz.ui.inputs import error_message

    _, draft = models
    with pytest.raises(VocabTableError) as caught:
        make_drafter("trimmed", draft, VOCAB, trim_size=10)
    e = caught.value
    en, es = error_message(e, "en"), error_message(e, "es")
    assert "151936" in en and "16" in en and "scripts/make_vocab.py" in en and en[0].isupper()
    assert "151936" in es and "vocabulario" in es and es != en
    assert en not in (t("error.unexpected", "en"), t("error.model_load", "en"))
    assert str(e) == e.text("en") and str(pickle.loads(pickle.dumps(e))) == str(e)
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    for path, key in ((tmp_path / "none.json", "vocab.not_found"), (tmp_path / "bad.json", "vocab.not_table")):
        with pytest.raises(VocabTableError) as caught:
            load_table(path)
        assert caught.value.key == key and str(path) in error_message(caught.value, "es")


class _FakeTokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    def get_vocab(self):
        return dict(self.vocab)

    def __len__(self):
        return len(self.vocab)


def test_a_tokenizers_fingerprint_is_taken_once_and_another_tokenizer_still_refused():
    from specviz.engine.vocab_trim import VocabTable, check_tokenizer, tokenizer_fingerprint

    class Counting(_FakeTokenizer):
        calls = 0

        def get_vocab(self):
            Counting.calls += 1
            return super().get_vocab()

    mine = Counting({"a": 0, "b": 1})
    table = VocabTable(Path("t.json"), {"model_vocab": 2, "tokenizer_size": 2,
                                        "tokenizer_fingerprint": tokenizer_fingerprint(mine)}, (), (), ())
    Counting.calls = 0
    for _ in range(3):
        check_tokenizer(table, mine)
    assert Counting.calls == 1   # one fingerprint for the tokenizer's lifetime, not one a run
    with pytest.raises(VocabTableError, match="another tokenizer"):
        check_tokenizer(table, Counting({"a": 1, "b": 0}))   # same size, other ids: a new object, a new fingerprint


def test_the_shipped_table_is_small_complete_and_refuses_another_tokenizer(models):
    from specviz.engine.vocab_trim import DEFAULT_TABLE, load_table

    assert DEFAULT_TABLE.stat().st_size < 1_000_000
    table = load_table()
    meta = table.meta
    assert meta["model_vocab"] == 151936 and meta["generated_tokens"] >= 2000
    assert meta["prior_check"].startswith("yes") and "command" in meta
    assert {151643, 151645, 151659, 151660, 151661} <= set(table.always)   # EOS, im_end, FIM
    assert {198, 220, 256, 257} <= set(table.always)                       # "\n", " ", indents
    ranking = table.ranking()
    assert len(ranking) == 151936 and len(set(ranking.tolist())) == 151936
    subset = vocab_subset(table, 32768, extra_ids=[151645])
    assert len(subset) == 32768 and set(table.always) <= set(subset.tolist())
    with pytest.raises(VocabTableError, match="another tokenizer"):
        make_drafter("trimmed", models[1], 151936, tokenizer=_FakeTokenizer({"a": 0, "b": 1}))


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _norm(text):
    return " ".join(text.lower().split())


def test_the_vocabulary_prompts_are_not_benchmark_prompts():
    """The table is counted on prompts disjoint from both benchmark sets (no tuning on the test)."""
    mine = [r["prompt"] for r in _rows(ROOT / "assets" / "vocab" / "prompts.jsonl")]
    assert 40 <= len(mine) <= 60 and len(set(mine)) == len(mine)
    bench = {_norm(r["prompt"]) for path in (ROOT.parent / "shared" / "prompts" / "bench.jsonl",
                                            ROOT / "assets" / "prompts.jsonl") if path.exists() for r in _rows(path)}
    assert bench, "no benchmark prompts found"
    for prompt in map(_norm, mine):
        assert prompt not in bench
        assert not any(prompt[:40] == b[:40] for b in bench), prompt



# ---------------------------------------------------------------- the packaged pair


@pytest.mark.real_model
def test_greedy_trimmed_drafting_gives_the_target_alone_output_on_real_pair(pair_auto, all_threads):
    """The shipped table on the packaged pair as the app loads it (q4a8 target and draft, the trimmed head on the
    draft's kernels; greedy, N = 32768): token for token the target's output, and the table's fingerprint is the
    packaged tokenizer's. (It ran on the fp32 pair until recently: the app's path is the one to prove, and on the
    2-core Zen 3 the fp32 target's 24 tokens made this CI's third-slowest item.)"""
    pair = pair_auto
    from specviz.engine.vocab_trim import check_tokenizer, load_table

    check_tokenizer(load_table(), pair.tokenizer)
    torch.set_num_threads(2)   # real models: the matrix products want both cores
    ids = pair.encode_chat("Write a Python function that checks whether a string is a palindrome.")
    greedy = SamplingConfig(temperature=0)
    rounds = list(speculative_generate(pair.target, pair.draft, ids, k=4, sampling=greedy,
                                       max_new_tokens=24, eos_token_id=pair.eos_token_ids, drafter="trimmed"))
    spec = [t for r in rounds for t in r.emitted]
    plain = [s.token_id for s in autoregressive_generate(pair.target, ids, sampling=greedy, max_new_tokens=24,
                                                         eos_token_id=pair.eos_token_ids)]
    assert spec == plain, (pair.decode(spec), pair.decode(plain))
    assert sum(r.n_accepted for r in rounds) / sum(r.k for r in rounds) > 0.3
    assert all(r.drafter == "trimmed" for r in rounds)
    hybrid = list(speculative_generate(pair.target, pair.draft, ids, k=4, sampling=greedy, max_new_tokens=24,
                                       eos_token_id=pair.eos_token_ids, drafter="hybrid_trimmed",
                                       adaptive_threshold=0.6))
    assert [t for r in hybrid for t in r.emitted] == plain
    assert all(r.drafter == "hybrid_trimmed" for r in hybrid)
