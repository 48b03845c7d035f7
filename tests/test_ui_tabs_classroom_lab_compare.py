"""The lab's "why not just compare tokens?" on the page (tiny models, no download): both lines, measured beside
their formulas, in English and Spanish, escaped; the figures are the engine's (specviz.classroom.lab_compare)."""
from __future__ import annotations

import re

import pytest

from specviz.classroom import lab, lab_compare as compare
from specviz.engine.sampling import SamplingConfig
from specviz.strings import LANGUAGES, t
from specviz.ui.session import AppContext, PairCache
from specviz.ui.tabs import classroom_lab
from specviz.viz import classroom as vc
from specviz.viz.format import display_number, esc

N, SEED, TEMP, PROMPT = 500, 4, 0.6, "The cat"


def _run(lang: str, n=N, name="cmp"):
    ctx = AppContext(cache=PairCache(lambda *a: None), lang=lang)
    request = type("R", (), {"session_hash": f"{name}-{lang}"})()
    form = dict(zip(classroom_lab.LAB_FORM, ("tiny", "real", PROMPT, TEMP, n, SEED, "packaged", "", "")))
    return list(classroom_lab.lab_run(ctx, form, request))


def _line(key: str, lang: str, measured: float, se: float, formula: float) -> str:
    return esc(t(key, lang, measured=display_number(measured), se=display_number(se), formula=display_number(formula)))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_lab_shows_the_rule_and_exact_matching_measured_beside_their_formulas(lang):
    outs = _run(lang)
    shown = [o["lab_compare"] for o in outs if o.get("lab_compare")]
    assert len(shown) == 1 and "lab_compare" in outs[-1]        # once, after the histogram is done
    page = shown[0]
    d = lab.tiny_distributions(PROMPT, SamplingConfig(temperature=TEMP))
    c = compare.measure(d.p, d.q, N, SEED)
    assert esc(t("lab.cmp_title", lang)) in page and esc(t("lab.cmp_intro", lang, n=N)) in page
    assert _line("lab.cmp_rule", lang, c.rule_rate, c.rule_se, c.rule_formula) in page
    assert _line("lab.cmp_exact", lang, c.exact_rate, c.exact_se, c.exact_formula) in page
    assert "Σ min(p, q)" in page and "Σ p·q" in page
    assert "u &lt; min(1" in page and "u < min" not in page     # the rule's "<" is escaped, not markup
    measured = dict(re.findall(r'data-test="(\w+)" data-measured="([0-9.]+)"', page))
    assert set(measured) == {"rule", "exact"} and float(measured["rule"]) > float(measured["exact"])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_out_of_range_sample_count_is_refused_and_nothing_is_compared(lang):
    outs = _run(lang, n=lab.MAX_SAMPLES + 1, name="cmp-big")
    assert len(outs) == 1 and not outs[0].get("lab_compare")
    assert t("lab.n", lang) in outs[0]["lab_stats"]


def test_the_panel_is_empty_without_a_comparison_and_differs_by_language():
    assert vc.lab_compare_html(None) == ""
    c = compare.TokenComparison(n=10, rule_rate=0.5, exact_rate=0.1, rule_formula=0.5, exact_formula=0.1)
    assert vc.lab_compare_html(c, "en") != vc.lab_compare_html(c, "es")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_why_sentence_holds_where_exact_matching_keeps_nearly_as_many(lang):
    """"Two independent samples rarely meet" was false where exact matching kept 94 %: the sentence now gives this
    position's two formulas and the share of the rule's drafts exact matching would lose, whatever they are."""
    import html

    peaked = compare.TokenComparison(n=1000, rule_rate=0.96, exact_rate=0.94, rule_formula=0.96, exact_formula=0.94)
    spread = compare.TokenComparison(n=1000, rule_rate=0.7, exact_rate=0.1, rule_formula=0.7, exact_formula=0.1)
    for c, lost in ((peaked, "2%"), (spread, "86%")):
        page = html.unescape(vc.lab_compare_html(c, lang))
        said = t("lab.cmp_why", lang, exact=display_number(c.exact_formula), rule=display_number(c.rule_formula),
                 lost=lost)
        assert said in page, page
    for stale in ("rarely meet", "rara vez coinciden"):
        assert stale not in html.unescape(vc.lab_compare_html(peaked, lang))
