"""The lab in Chromium, "Why not just compare tokens?", in English and Spanish at 1366×900 and on a phone (390×844).

The lab runs on the tiny models (no download): the page's two lines (the rule and exact matching) each show its
measured acceptance beside its formula, Σ min(p, q) and Σ p·q, with the very figures `specviz.classroom.lab_compare`
gives for the same position, draws and seed (recomputed here); each measured share within 4.5 binomial standard
errors of its formula and the rule above exact matching; the panel inside the screen with nothing cut off or
scrolling sideways; on /es the Spanish sentences and none of the English ones.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from specviz.classroom import lab, lab_compare
from specviz.engine.sampling import SamplingConfig
from specviz.strings import t, table
from specviz.viz.format import display_number, pct
from tests.browser.page import CHROMIUM, open_page, type_number

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

SCREENS = [(1366, 900, "en"), (1366, 900, "es"), (390, 844, "en"), (390, 844, "es")]
N, SEED, TEMPERATURE = 3000, 0, 0.6          # the draws typed in; the lab's own seed and temperature boxes as they open
CMP_KEYS = ("lab.cmp_title", "lab.cmp_intro", "lab.cmp_rule", "lab.cmp_exact", "lab.cmp_why")

# The panel's box, each line's, and whether anything in it is wider than its box (cut off, or scrolling sideways).
FITS_JS = """() => { const panel = document.querySelector('#sv-lab-compare .sv-lab-compare');
    const p = panel.getBoundingClientRect(), page = document.documentElement;
    const items = [...panel.querySelectorAll('*')];
    return {left: p.left, right: p.right, pageWidth: page.scrollWidth, viewport: window.innerWidth,
            wide: items.filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
                       .map(e => e.tagName),
            outside: items.filter(e => { const b = e.getBoundingClientRect();
                                         return b.width && (b.left < p.left - 0.5 || b.right > p.right + 0.5); })
                          .map(e => e.tagName)}; }"""


def expected(lang: str) -> lab_compare.TokenComparison:
    """What the page must show: the lab's position on the tiny models for the page's default prompt, N draws."""
    d = lab.tiny_distributions(t("lab.default_prompt", lang), SamplingConfig(temperature=TEMPERATURE))
    return lab_compare.measure(d.p, d.q, N, SEED)


def shown_line(key: str, lang: str, measured: float, se: float, formula: float) -> str:
    return t(key, lang, measured=display_number(measured), se=display_number(se), formula=display_number(formula))


def english_left(text: str) -> list[str]:
    """The English lab sentences' own words (between placeholders, 8 characters or more) found in `text`."""
    es = " ".join(table("es").values())
    parts = {part.strip(" .,:;()") for key, value in table("en").items() if key.startswith("lab.")
             for part in re.split(r"\{[^}]*\}", value)}
    return sorted(p for p in parts if len(p) >= 8 and p not in es and p in text)


@pytest.mark.parametrize("width, height, lang", SCREENS)
def test_why_not_compare_tokens_shows_both_measured_acceptances_beside_their_formulas(browser, server, shots, width,
                                                                                      height, lang):
    pg = open_page(browser, server, shots, width, height, lang)
    try:
        pg.page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.classroom", lang),
                                                                exact=True).click(timeout=30_000)
        pg.page.locator("#sv-cls-lab").get_by_text(t("cls.tab_lab", lang)).first.click()
        type_number(pg, "sv-lab-n", N)
        pg.page.click("#sv-lab-run")
        panel = pg.page.locator(f"#sv-lab-compare [data-n='{N}']")
        panel.wait_for(timeout=60_000)                  # after the histogram's last batch; a loaded CI can be slow
        panel.scroll_into_view_if_needed()
        pg.shot(f"lab-compare-{width}-{lang}", locator=panel)
        c = expected(lang)

        # the figures: the data the page carries, and the sentences it shows, are the engine's for this position
        found = {d["test"]: d for d in pg.page.eval_on_selector_all("#sv-lab-compare li", "es => es.map(e => ({...e.dataset}))")}
        assert set(found) == {"rule", "exact"}
        for kind, measured, formula in (("rule", c.rule_rate, c.rule_formula), ("exact", c.exact_rate, c.exact_formula)):
            assert float(found[kind]["measured"]) == pytest.approx(measured, abs=5e-5)
            assert float(found[kind]["formula"]) == pytest.approx(formula, abs=5e-5)
            assert abs(measured - formula) <= 4.5 * math.sqrt(formula * (1 - formula) / N) + 1e-12, (kind, measured)
        assert c.rule_rate > c.exact_rate and c.rule_formula > c.exact_formula     # the lesson's point, measured
        text = panel.inner_text()
        for line in (t("lab.cmp_title", lang), t("lab.cmp_intro", lang, n=N),
                     shown_line("lab.cmp_rule", lang, c.rule_rate, c.rule_se, c.rule_formula),
                     shown_line("lab.cmp_exact", lang, c.exact_rate, c.exact_se, c.exact_formula),
                     t("lab.cmp_why", lang, exact=display_number(c.exact_formula),
                       rule=display_number(c.rule_formula),
                       lost=pct(max(0.0, (c.rule_formula - c.exact_formula) / c.rule_formula)))):
            assert line in text, (line, text)
        assert "Σ min(p, q)" in text and "Σ p·q" in text

        # the panel fits: inside the screen, no line wider than its box, the page not scrolling sideways
        fits = pg.page.evaluate(FITS_JS)
        assert 0 <= fits["left"] and fits["right"] <= width, fits
        assert fits["pageWidth"] <= fits["viewport"] and not fits["wide"] and not fits["outside"], fits

        if lang == "es":     # Spanish sentences, and none of the English lab's left in the lab
            lab_text = pg.page.locator("#sv-cls-lab").inner_text()
            assert not english_left(lab_text), english_left(lab_text)
            assert all(table("en")[key] != table("es")[key] for key in CMP_KEYS)    # each line is translated
    finally:
        pg.close()
