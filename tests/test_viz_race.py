"""The race's view (specviz.viz.race): one span per token, classed by who proposed it, texts escaped, the figures
side by side with a lane that left the target's text named at its token, in English and Spanish."""
from __future__ import annotations

import re

import pytest

from specviz.classroom.race import LANES, SOURCES, TARGET, Lane, Piece
from specviz.strings import LANGUAGES, t
from specviz.viz import race as vr
from specviz.viz.format import esc
from tests.browser.tiny_app import VOCAB


def text_of(i: int) -> str:
    return VOCAB[i % len(VOCAB)]


def lanes() -> list[Lane]:
    ref = Lane(TARGET, [Piece(i, TARGET) for i in (0, 1, 2, 3, 4, 5)], rounds=6, seconds=3.0)
    model = Lane("model", [Piece(0, "model"), Piece(1, "model"), Piece(2, TARGET), Piece(3, "model"),
                           Piece(4, "model"), Piece(5, TARGET)], rounds=2, drafted=6, accepted=4, seconds=1.0)
    hybrid = Lane("hybrid", [Piece(0, "ngram"), Piece(1, "ngram"), Piece(2, "ngram"), Piece(3, TARGET),
                             Piece(4, "model"), Piece(5, TARGET)], rounds=2, drafted=5, accepted=4, seconds=1.5,
                  longest=3)
    wrong = Lane("ngram", [Piece(0, "ngram"), Piece(1, "ngram"), Piece(9, TARGET)], rounds=1, drafted=2, accepted=2,
                 seconds=0.5)
    return [ref, model, hybrid, wrong]


def spans(html: str, lane: str) -> list[str]:
    section = re.search(rf'<section class="sv-race-lane" data-lane="{lane}">(.*?)</section>', html, re.S).group(1)
    return re.findall(r'<span class="sv-race-tok sv-race-(\w+)" data-source="(\w+)"', section)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_token_is_classed_by_its_source_and_escaped(lang):
    html = vr.race_html(lanes(), text_of, lang)
    for lane in lanes():
        got = spans(html, lane.entrant)
        assert [cls for cls, _ in got] == [p.source for p in lane.pieces]       # colour = source, token by token
        assert all(cls == src for cls, src in got)
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold" not in html
    assert esc(VOCAB[0]) in html and esc(VOCAB[1]) in html
    assert html.count('class="sv-race-lane"') == 4 and 'data-of="5"' in html


def test_a_colouring_that_ignores_the_source_is_caught():
    """The broken variant: classing every token by its lane's drafter would fail the check above."""
    html = vr.race_html(lanes(), text_of).replace("sv-race-ngram", "sv-race-model")
    assert [cls for cls, _ in spans(html, "hybrid")] != [p.source for p in lanes()[2].pieces]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_figures_sit_side_by_side_and_a_differing_lane_is_named(lang):
    html = vr.race_html(lanes(), text_of, lang)
    rows = dict(re.findall(r'<tr data-lane="(\w+)" data-tau="[0-9.]+" data-tokens="\d+" data-same="(\w+)"', html))
    assert rows == {"target": "reference", "model": "yes", "hybrid": "yes", "ngram": "no"}
    assert html.count('<td data-label="') == 4 * 6                       # each cell names its column (phone cards)
    assert f'<td data-label="{esc(t("race.col_same", lang))}">' in html
    assert esc(t("race.differs", lang, n=3)) in html                   # token 3 (1-based) left the target's text
    assert esc(t("race.col_tau", lang)) in html and "3.00" in html     # τ of the model lane: 6 tokens / 2 rounds
    assert "67%" in html and "80%" in html                             # acceptance: 4 of 6, 4 of 5
    assert "3.00×" in html and "2.00×" in html                         # 6 tok/s and 4 tok/s against 2 tok/s
    assert "50%" in html                                                # hybrid: 3 of 6 tokens from lookup
    message, kind = vr.done_message(lanes(), lang)
    assert kind == "warn" and vr.lane_name("ngram", lang) in message
    message, kind = vr.done_message(lanes()[:3], lang)
    assert kind == "ok" and message == t("race.done_same", lang, n=6)


def test_the_languages_differ_and_nothing_is_drawn_before_a_lane():
    assert vr.race_html([], text_of) == ""
    assert vr.race_html(lanes(), text_of, "en") != vr.race_html(lanes(), text_of, "es")
    assert set(vr.SOURCE_COLOURS) == set(SOURCES) and len(LANES) == 5
    css = vr.race_css()
    assert all(f".sv-race-{s}" in css for s in SOURCES)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_step_view_says_who_drafted_a_lookup_round(lang):
    """The code-edit lesson's rounds: a prompt-lookup round says so at its draft stop and names its drafter; a
    draft-model round of the same hybrid run names the model; a plain model run adds nothing."""
    from specviz.trace.records import DraftToken, Round
    from specviz.viz import classroom as vc

    def rnd(source, drafter="hybrid"):
        tk = DraftToken(5, "<b>x</b>", 1.0, 1.0, 1.0, 0.5, True, 1.0, 1.0, source=source)
        return Round(0, [tk, tk], None, None, None, [5, 5], 0.0, 0.0, drafter=drafter)

    lookup = vc.stage_html(rnd("ngram"), 3, 0, True, lang=lang)
    assert 'class="sv-cls-drafter" data-source="ngram"' in lookup and vc.rich("cls.draft_lookup_text", lang, k=2) in lookup
    model = vc.stage_html(rnd("model"), 3, 0, True, lang=lang)
    assert 'data-source="model"' in model and vc.rich("cls.draft_text", lang, k=2) in model
    plain = vc.stage_html(rnd("model", "model"), 3, 0, True, lang=lang)
    assert "sv-cls-drafter" not in plain and "<b>x</b>" not in lookup + plain
