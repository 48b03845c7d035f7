"""One options object: `DecodeOptions` with its drafting (`Chain` or `Tree`), and the keyword shim that builds it."""
import dataclasses

import pytest

from specviz import Chain, DecodeOptions, SamplingConfig, Tree, autoregressive_generate, speculative_generate
from specviz.engine.options import decode_options
from tiny import noisy_copy, tiny_model

T07 = SamplingConfig(temperature=0.7)


def test_keywords_build_the_options_the_object_spells():
    options = decode_options(k=3, sampling=T07, max_new_tokens=12, seed=5, adaptive_threshold=0.4, record=False)
    assert options == DecodeOptions(sampling=T07, max_new_tokens=12, seed=5, record=False,
                                    drafting=Chain(3, adaptive_threshold=0.4))
    assert decode_options() == DecodeOptions() and DecodeOptions().drafting == Chain(k=4)


def test_keywords_amend_given_options_and_keep_what_they_do_not_name():
    base = DecodeOptions(max_new_tokens=9, drafting=Chain(5, adaptive_threshold=0.6, drafter="hybrid"))
    amended = decode_options(base, k=2)
    assert amended.drafting == Chain(2, adaptive_threshold=0.6, drafter="hybrid") and amended.max_new_tokens == 9
    assert decode_options(base, tree="2x2").drafting == Tree("2x2")
    assert decode_options(base) is base


def test_k_means_a_chains_length_only():
    for k in (0, 33, 2.5):
        with pytest.raises(ValueError, match="k must be"):
            Chain(k)
    tree = decode_options(tree="dynamic:4")
    assert tree.tree and tree.drafting == Tree("dynamic:4")   # the tree's size is in its shape
    with pytest.raises(ValueError, match="give k or tree, not both"):   # k with a tree is refused, never dropped
        decode_options(k=7, tree="dynamic:4")
    assert DecodeOptions(drafting=Tree("1x1x1")).drafting == Chain(3)   # a width-one tree is its chain
    for wrong in (dict(drafter="ngram"), dict(adaptive_threshold=0.5)):
        with pytest.raises(ValueError, match="tree is drafted by a draft model"):
            decode_options(tree="2x2", **wrong)
    with pytest.raises(TypeError):
        decode_options(not_a_setting=1)


@pytest.mark.parametrize("drafting", [Chain(3), Chain(2, drafter="hybrid"), Tree("2x2")])
def test_the_object_and_the_keywords_decode_alike(drafting):
    target = tiny_model(11)
    draft = noisy_copy(target, 3, 0.5)
    options = DecodeOptions(sampling=T07, max_new_tokens=16, seed=3, drafting=drafting)
    by_object = list(speculative_generate(target, draft, [1, 2, 3], options))
    keywords = dict(tree=drafting.shape) if isinstance(drafting, Tree) else dataclasses.asdict(drafting)
    by_keywords = list(speculative_generate(target, draft, [1, 2, 3], sampling=T07, max_new_tokens=16, seed=3,
                                            **keywords))
    assert [r.emitted for r in by_object] == [r.emitted for r in by_keywords]
    alone = [s.token_id for s in autoregressive_generate(target, [1, 2, 3], options)]
    assert alone == [s.token_id for s in autoregressive_generate(target, [1, 2, 3], sampling=T07,
                                                                 max_new_tokens=16, seed=3)]


def test_lookup_k_belongs_to_the_hybrid_and_sets_how_deep_a_round_may_draft():
    assert Chain(3, drafter="hybrid", lookup_k=6).depth == 6
    assert Chain(3, drafter="hybrid_trimmed", lookup_k=6).depth == 6   # the hybrid with the trimmed head too
    assert Chain(5, drafter="hybrid", lookup_k=2).depth == 5 and Chain(3).depth == 3
    for wrong in (0, 33, 2.5):
        with pytest.raises(ValueError, match="lookup_k must be"):
            Chain(3, drafter="hybrid", lookup_k=wrong)
    for drafter in ("model", "ngram", "trimmed"):
        with pytest.raises(ValueError, match="lookup_k applies to the hybrid drafter"):
            Chain(3, drafter=drafter, lookup_k=5)
    with pytest.raises(ValueError, match="tree is drafted by a draft model"):
        decode_options(tree="2x2", lookup_k=5)
    assert decode_options(k=2, drafter="hybrid", lookup_k=7).drafting == Chain(2, drafter="hybrid", lookup_k=7)
