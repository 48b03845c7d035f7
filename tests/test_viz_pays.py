"""The "speculation cannot pay here" sentence (specviz.viz.pays) and the drafter's marks in the views (viz.html)."""
from __future__ import annotations

import math
import re

import pytest

from specviz.strings import LANGUAGES
from specviz.trace.records import DraftToken, Round
from specviz.viz import cards as vc
from specviz.viz import html as vh
from specviz.viz import pays as vp
from specviz.viz.format import drafter_name

NAN = float("nan")


def check(**over) -> vp.PaysCheck:
    values = dict(c=0.31, verify_cost=2.9, k=4, alpha=0.78, theory=0.71, measured=NAN, device="cpu")
    values.update(over)
    return vp.PaysCheck(**values)


# ---------------------------------------------------------------- when the sentence is shown
def test_theory_below_one_says_cannot_pay_with_every_number():
    text = vp.sentence(check())
    assert vp.verdict(check()) == "cannot"
    assert text.startswith("On this machine speculation cannot pay for this pair")
    for needle in ("c = 0.31", "K = 4", "2.9× one token", "α = 0.78", "the theory gives 0.71×",
                   "Qwen2.5-0.5B → Qwen2.5-7B on a GPU"):
        assert needle in text, (needle, text)
    assert "measured" not in text                      # no target-alone run: no measured speedup claimed


def test_measured_speedup_is_added_when_the_run_has_one():
    text = vp.sentence(check(measured=0.64))
    assert "This run measured 0.64× against the target alone." in text


@pytest.mark.parametrize("over", [dict(theory=1.4), dict(theory=1.0), dict(theory=1.4, measured=1.2),
                                  dict(c=NAN), dict(verify_cost=NAN), dict(alpha=NAN), dict(theory=NAN),
                                  dict(theory=NAN, measured=0.5), dict(theory=0.71, measured=1.3)])
def test_not_shown_when_it_pays_or_a_number_is_missing(over):
    assert vp.verdict(check(**over)) is None
    for lang in LANGUAGES:
        assert vp.sentence(check(**over), lang) is None
        assert vp.html(check(**over), lang) == ""
    assert vp.sentence(None) is None and vp.html(None) == ""


def test_theory_pays_but_the_run_did_not():
    c = check(theory=1.25, measured=0.9)
    assert vp.verdict(c) == "did_not"
    text = vp.sentence(c)
    assert "did not pay in this run" in text and "0.90×" in text and "1.25×" in text and "c = 0.31" in text


def test_spanish_sentences_carry_the_same_numbers():
    en, es = vp.sentence(check(measured=0.64), "en"), vp.sentence(check(measured=0.64), "es")
    assert es != en and es.startswith("En esta máquina la especulación no puede compensar")
    numbers = lambda s: re.findall(r"\d+(?:\.\d+)?", s)   # noqa: E731
    assert numbers(es) == numbers(en)
    assert "no compensó" in vp.sentence(check(theory=1.25, measured=0.9), "es")


def test_on_a_gpu_it_points_to_a_wider_pair():
    assert "Qwen2.5-14B" in vp.sentence(check(device="cuda"))
    assert "Qwen2.5-14B" in vp.sentence(check(device="cuda"), "es")


def test_html_is_escaped_and_marked():
    markup = vp.html(check())
    assert markup.startswith('<div class="sv-pays" role="note" data-pays="cannot" data-theory="0.710"')
    assert "→" in markup and "<script" not in markup
    assert math.isclose(float(re.search(r'data-c="([\d.]+)"', markup).group(1)), 0.31)


# ---------------------------------------------------------------- drafters in the views
def tok(source: str, accepted: bool = True, text: str = " a") -> DraftToken:
    return DraftToken(token_id=3, text=text, q=1.0, p=0.6, accept_prob=0.6, u=0.2 if accepted else 0.9,
                      accepted=accepted, q_confidence=1.0, p_confidence=0.6, source=source)


def rnd(drafter: str, sources: list[str]) -> Round:
    return Round(index=0, drafted=[tok(s) for s in sources], rejected_at=None, correction=None, bonus=None,
                 emitted=[3] * len(sources), draft_seconds=0.001, verify_seconds=0.002, drafter=drafter)


def test_prompt_lookup_tokens_carry_a_visible_marker_and_say_so():
    markup = vh.round_fragment_html(rnd("hybrid", ["ngram", "model"]), greedy=False)
    lookup, model = re.findall(r'<span class="sv-tok [^"]*"[^>]*>', markup)
    assert "sv-src-ngram" in lookup and 'data-source="ngram"' in lookup
    assert "sv-src-ngram" not in model and 'data-source="model"' in model
    assert "proposed by prompt lookup (n-gram)" in lookup and "proposed by the draft model" in model
    assert "búsqueda en el prompt" in vh.round_fragment_html(rnd("ngram", ["ngram"]), False, lang="es")


def test_round_card_names_the_drafter_and_a_hybrid_rounds_source():
    assert "drafter: prompt lookup (n-gram)" in vc.round_card_html(rnd("ngram", ["ngram"]), False)
    card = vc.round_card_html(rnd("hybrid", ["ngram", "ngram"]), False)
    assert 'data-drafter="hybrid"' in card and "this round: prompt lookup (n-gram)" in card
    assert card.count("sv-src-ngram") == 2
    assert "drafter: draft model" in vc.round_card_html(rnd("model", ["model"]), False)


def test_unknown_drafters_and_sources_fall_back_to_their_escaped_names():
    assert drafter_name("trimmed") == "draft model with a trimmed vocabulary"
    assert drafter_name("oracle") == "oracle" and drafter_name("oracle", "es") == "oracle"
    hostile = '<img src=x onerror=alert(1)>'
    r = rnd(hostile, [hostile])
    for markup in (vc.round_card_html(r, False), vh.round_fragment_html(r, False)):
        assert "<img" not in markup and "&lt;img" in markup
        assert "sv-src-ngram" not in markup


def test_legend_explains_the_marker_and_metrics_show_the_warm_up():
    assert "sv-src-ngram" in vh.legend_html() and "prompt lookup (n-gram)" in vh.legend_html()
    m = {"tokens_per_s": 5.0, "acceptance_rate": 0.5, "tau": 2.0, "rounds": 3, "tokens": 6}
    assert "compile and graph capture 31.4 s" in vh.metrics_html(m, done=True, warmup_seconds=31.42)
    assert "data-warmup" not in vh.metrics_html(m, done=True)


# ---------------------------------------------------------------- a draft tree
@pytest.mark.parametrize("lang, cannot, did_not", [
    ("en", "On this machine a draft tree cannot pay for this pair", "The draft tree did not pay in this run"),
    ("es", "un árbol de borradores no puede compensar", "El árbol de borradores no compensó")])
def test_a_tree_gets_its_own_sentence_from_its_measured_tau(lang, cannot, did_not):
    """A tree's estimate is τ / (depth·c + verify): 1.8 / (3·0.31 + 2.9) = 0.47×, each number named."""
    from specviz.bench.costs import tree_speedup_bound

    bound = tree_speedup_bound(1.8, 3.0, 0.31, 2.9)
    assert bound == pytest.approx(1.8 / (3 * 0.31 + 2.9))
    tree = check(theory=bound, reads=3.0, tau=1.8, alpha=NAN)
    assert tree.tree and vp.verdict(tree) == "cannot"
    text = vp.sentence(tree, lang)
    assert cannot in text and "0.47×" in text and "1.80" in text and "c = 0.31" in text and "3.8" in text
    assert "α" not in text                                 # the chain's formula is not the tree's
    paid_in_theory = check(theory=tree_speedup_bound(3.5, 2.0, 0.1, 1.2), reads=2.0, tau=3.5, measured=0.8)
    assert vp.verdict(paid_in_theory) == "did_not" and did_not in vp.sentence(paid_in_theory, lang)
    assert vp.verdict(check(theory=0.5, reads=2.0, tau=NAN)) is None    # no τ: nothing said
    assert vp.verdict(check(theory=0.5, reads=2.0, tau=1.0, measured=1.1)) is None   # it measured a gain
