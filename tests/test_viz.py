"""Unit tests of the rendering functions (specviz.viz): provenance styles, hover numbers, escaping, charts."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest

from specviz.trace.compare import Comparison
from specviz.trace.records import Alt, Choice, DraftToken, Round, Trace
from specviz.trace.files import TraceFormatError
from specviz.viz import charts
from specviz.viz import cards as vc
from specviz.viz import html as vh

XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"quoted" & \'single\'']


def compared(spec_tps: float, base_tps: float, *, identical: bool | None, first_diff: int | None = None,
             greedy: bool = True, n_base: int = 0) -> Comparison:
    """A run against the target alone (greedy unless told), as specviz.trace.compare.compare_runs returns it."""
    return Comparison(spec_tokens_per_s=spec_tps, base_tokens_per_s=base_tps, greedy=greedy, identical=identical,
                      first_diff=first_diff, n_spec=n_base, n_base=n_base)


def tok(text, q, p, u, accepted, tid=1):
    return DraftToken(token_id=tid, text=text, q=q, p=p, accept_prob=min(1.0, p / q), u=u, accepted=accepted,
                      q_confidence=q, p_confidence=p, top_q=[Alt(tid, text, q), Alt(9, XSS[1], 0.1)],
                      top_p=[Alt(tid, text, p), Alt(8, XSS[0], 0.2)])


def rejected_round() -> Round:
    # position 1 accepted, position 2 rejected (u >= a), position 3 discarded, correction drawn.
    drafted = [tok(" the", 0.5, 0.6, 0.3, True, 1), tok(XSS[0], 0.8, 0.2, 0.7, False, 2),
               tok(XSS[1], 0.4, 0.4, 0.1, False, 3)]
    corr = Choice(5, XSS[2], 0.625, [Alt(5, XSS[2], 0.625), Alt(6, " cat", 0.375)])
    return Round(index=0, drafted=drafted, rejected_at=1, correction=corr, bonus=None, emitted=[1, 5],
                 draft_seconds=0.012, verify_seconds=0.008, seconds=0.021)


def bonus_round() -> Round:
    drafted = [tok(" a", 0.3, 0.9, 0.5, True, 7), tok("\n", 0.5, 0.5, 0.2, True, 4)]
    bonus = Choice(11, "<b>bold</b>", 0.42, [Alt(11, "<b>bold</b>", 0.42)])
    return Round(index=1, drafted=drafted, rejected_at=None, correction=None, bonus=bonus, emitted=[7, 4, 11],
                 draft_seconds=0.01, verify_seconds=0.009, seconds=0.02)


class Collect(HTMLParser):
    """Every start tag with its attributes, and the text, as a browser would parse them."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(markup: str) -> Collect:
    c = Collect()
    c.feed(markup)
    return c


def spans(markup: str, kind: str) -> list[dict]:
    return [a for t, a in parse(markup).tags if t == "span" and f"sv-{kind}" in (a.get("class") or "").split()]


# ---------------------------------------------------------------- provenance
def test_each_provenance_has_its_class_colour_and_line_style():
    frag = vh.round_fragment_html(rejected_round(), greedy=False) + vh.round_fragment_html(bonus_round(), False)
    css = vh.token_css()
    for kind in ("accepted", "rejected", "discarded", "correction", "bonus"):
        assert spans(frag, kind), kind
        rule = re.search(r"\.sv-%s \{([^}]*)\}" % kind, css).group(1)
        assert vh.PALETTE[kind] in rule, kind
    # shape as well as hue: each provenance has its own line style
    styles = {k: re.search(r"\.sv-%s \{([^}]*)\}" % k, vh.token_css()).group(1) for k in
              ("accepted", "rejected", "discarded", "correction", "bonus")}
    assert "underline solid" in styles["accepted"]
    assert "line-through" in styles["rejected"] and "line-through dotted" in styles["discarded"]
    assert "wavy" in styles["correction"] and "double" in styles["bonus"]
    assert len({vh.PALETTE[k] for k in styles}) == 5


def test_rejected_token_struck_through_at_the_rejection_point_then_correction():
    frag = vh.round_fragment_html(rejected_round(), greedy=False)
    order = [a["data-verdict"] for t, a in parse(frag).tags if t == "span" and "data-verdict" in a]
    assert order == ["accepted", "rejected", "correction", "discarded"]


def test_hover_shows_q_p_a_u_and_verdict():
    frag = vh.round_fragment_html(rejected_round(), greedy=False)
    rej = spans(frag, "rejected")[0]
    assert (rej["data-q"], rej["data-p"], rej["data-a"], rej["data-u"]) == ("0.800", "0.200", "0.250", "0.700")
    title = rej["data-tip"]
    for needle in ("q(x) = 0.800", "p(x) = 0.200", "a = min(1, p/q) = 0.250", "u = 0.700", "REJECTED", "u ≥ a"):
        assert needle in title
    acc = spans(frag, "accepted")[0]
    assert "u < a" in acc["data-tip"] and "ACCEPTED" in acc["data-tip"]
    corr = spans(frag, "correction")[0]
    assert "r(x) = 0.625" in corr["data-tip"] and "max(0, p − q)" in corr["data-tip"]
    bonus = spans(vh.round_fragment_html(bonus_round(), False), "bonus")[0]
    assert "p(x) = 0.420" in bonus["data-tip"] and bonus["data-pos"] == "3"


def test_greedy_hover_labels_confidence_not_the_rule():
    title = spans(vh.round_fragment_html(rejected_round(), greedy=True), "rejected")[0]["data-tip"]
    assert "confidence (untempered softmax, display only)" in title
    assert "accepted iff it is the target's top token" in title
    card = vc.round_card_html(rejected_round(), greedy=True)
    assert "draft confidence" in card and "target confidence" in card


def test_round_card_bars_u_marker_verdicts_correction_and_bonus():
    card = vc.round_card_html(rejected_round(), greedy=False)
    tags = parse(card).tags
    assert sum(1 for t, a in tags if "sv-u" in (a.get("class") or "").split()) == 2  # discarded: not checked
    assert "left:70.0%" in card and "width:25.0%" in card       # u = 0.7 marked against a = 0.25
    assert "✗ rejected" in card and "✓ accepted" in card and "discarded" in card
    assert "correction" in card and "Residual top-5" in card
    card2 = vc.round_card_html(bonus_round(), greedy=False)
    assert "bonus" in card2 and "position 3" in card2


# ---------------------------------------------------------------- escaping
def _no_live_markup(markup: str):
    tags = parse(markup).tags
    assert not [t for t, _ in tags if t in ("script", "img", "iframe", "svg")], tags
    for _, attrs in tags:
        assert not [k for k in attrs if k.startswith("on")], attrs


def test_tokens_prompts_and_titles_are_escaped():
    live = vh.LiveText(XSS[0] + XSS[1] + XSS[2], greedy=False)
    live.add(rejected_round())
    live.add(bonus_round())
    log = vc.RoundLog(False)
    log.add(rejected_round())
    log.add(bonus_round())
    for markup in (live.html(), log.html()):
        _no_live_markup(markup)
        text = "".join(parse(markup).text)
        assert "<script>alert(1)</script>" in text                  # shown as text
        assert "<b>bold</b>" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in live.html()
    assert '"quoted"' not in live.html().replace("&quot;", "")      # quotes never raw (would break attributes)
    _no_live_markup(vh.status_html(XSS[1], "error"))
    _no_live_markup(vh.trace_summary_html(XSS[0], XSS[1], '"><img src=x onerror=1>', 4, {"t": XSS[0]}))
    _no_live_markup(vh.comparison_html(compared(2.0, 1.0, identical=False, first_diff=3), limit="dense",
                                       weights=XSS[1]))


def test_trace_file_round_trip_stays_escaped():
    trace = Trace(prompt=XSS[1], prompt_ids=[1, 2], draft_model=XSS[0], target_model=XSS[2], k=3,
                  max_new_tokens=8, seed=0, sampling={"temperature": 1.0, "top_k": 0, "top_p": 1.0},
                  rounds=[rejected_round(), bonus_round()], output_text=XSS[0])
    back = Trace.from_json(trace.to_json())
    live = vh.LiveText(back.prompt, greedy=False)
    for r in back.rounds:
        live.add(r)
    _no_live_markup(live.html())
    assert [a["data-token-id"] for a in spans(live.html(), "tok") if a["data-verdict"] in
            ("accepted", "correction", "bonus")] == ["1", "5", "7", "4", "11"]
    with pytest.raises(TraceFormatError):
        Trace.from_json(json.dumps({"format": "specviz-trace", "version": 1, "rounds": "<script>"}))


def test_incremental_live_text_is_append_only():
    live = vh.LiveText("p", greedy=False)
    live.add(rejected_round())
    first = live.html()
    live.add(bonus_round())
    assert live.html().startswith(first) and len(live) == 2


def test_round_log_newest_first_and_bounded():
    log = vc.RoundLog(False, limit=3)
    for i in range(5):
        r = bonus_round()
        r.index = i
        log.add(r)
    rounds = [a["data-round"] for t, a in parse(log.html()).tags if t == "div" and "data-round" in a]
    assert rounds == ["5", "4", "3"] and "newest 3 of 5" in log.html()


def test_metrics_tiles_and_compare_badge():
    from specviz.trace.records import metrics

    m = metrics([rejected_round(), bonus_round()])
    tiles = vh.metrics_html(m, done=True, baseline_tps=m["tokens_per_s"] / 2)
    assert "2.00×" in tiles and "60%" in tiles            # 3 of 5 drafted accepted
    same = vh.comparison_html(compared(10, 5, identical=True, n_base=16))
    assert 'data-identical="true"' in same and "2.00× speedup" in same
    # The reason given is the configuration's: dense products can differ, a row-invariant one must not.
    diff = vh.comparison_html(compared(10, 5, identical=False, first_diff=6), limit="dense", weights="fp32")
    assert "differ at token 7" in diff and "dense fp32 weights" in diff and "int4 and int8" in diff
    bug = vh.comparison_html(compared(10, 5, identical=False, first_diff=6), limit=None, weights="int4")
    assert "should not happen" in bug and "report" in bug
    for limit in ("gpu", "compiled", "attention"):
        es = vh.comparison_html(compared(10, 5, identical=False, first_diff=0), limit=limit, lang="es")
        assert "difieren" in es or "≠" in es


def test_engine_rounds_render(tiny_pair):
    from specviz import SamplingConfig, speculative_generate

    target, draft = tiny_pair
    rounds = list(speculative_generate(target, draft, [1, 2, 3], k=3, sampling=SamplingConfig(temperature=1.0),
                                       max_new_tokens=24, seed=1))
    live = vh.LiveText("x", greedy=False)
    for r in rounds:
        live.add(r)
        assert charts.inspector_figure(r, 1, False).data
    emitted = [int(a["data-token-id"]) for a in spans(live.html(), "tok")
               if a["data-verdict"] in ("accepted", "correction", "bonus")]
    assert emitted == [t for r in rounds for t in r.emitted]


@pytest.fixture(scope="module")
def tiny_pair():
    from tests.tiny import tiny_model

    return tiny_model(1), tiny_model(2)


# ---------------------------------------------------------------- charts
def test_charts_build():
    r1, r2 = rejected_round(), bonus_round()
    fig = charts.inspector_figure(r1, 2, greedy=False)
    names = [t.name for t in fig.data]
    assert any("q(x)" in n for n in names) and any("p(x)" in n for n in names)
    assert any("max(0, p − q)" in n for n in names)            # rejected position: the residual
    assert "&lt;script&gt;" in fig.layout.title.text              # token text escaped in the title
    categories = [x for tr in fig.data for x in (tr.x or ())]
    assert categories and not any("<" in x for x in categories)   # and in the axis labels Plotly renders
    assert charts.inspector_figure(r2, 3, greedy=True).data[0].name.startswith("p(x)")   # bonus position
    assert charts.inspector_figure(None, 1, True).layout.annotations
    assert charts.acceptance_by_position_figure([1.0, 0.5]).data[0].y == (1.0, 0.5)
    assert len(charts.timeline_figure([r1, r2]).data) == 3
    assert charts.timeline_figure([]).layout.annotations


def test_throughput_vs_k_chart_from_a_hand_built_sweep():
    rows = [SimpleNamespace(k=k, tokens_per_s=tps, acceptance_rate=a, alpha=a, tau=1 + a * k, c=0.3,
                            theory_speedup=s, speedup=tps / 3.0)
            for k, tps, a, s in [(1, 4.0, 0.8, 1.3), (2, 5.0, 0.75, 1.6), (3, 4.5, 0.7, 1.55)]]
    sweep = SimpleNamespace(rows=rows, target_tokens_per_s=3.0, best_k=2)
    fig = charts.throughput_vs_k_figure(sweep)
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["measured tokens/s (speculative)"].y) == [4.0, 5.0, 4.5]
    assert list(by_name["target alone"].y) == [3.0, 3.0]
    assert list(by_name["theory from measured α and c"].y) == pytest.approx([3.9, 4.8, 4.65])
    assert by_name["acceptance rate α̂"].yaxis == "y2"
    assert list(by_name["best K = 2"].x) == [2]
    assert charts.throughput_vs_k_figure(None).layout.annotations


# ---------------------------------------------------------------- details on tap and focus, chart layout (the new-user issue)
def test_tokens_and_tiles_open_details_on_focus_not_only_native_tooltips():
    frag = vh.round_fragment_html(rejected_round(), greedy=False)
    for kind in ("accepted", "rejected", "discarded", "correction"):
        span = spans(frag, kind)[0]
        assert span["tabindex"] == "0" and "data-tip" in span and "title" not in span
    tiles = vh.metrics_html({"tokens_per_s": 2.0, "rounds": 1, "tokens": 3})
    assert 'tabindex="0" data-tip=' in tiles and "title=" not in tiles
    _no_live_markup(tiles)


def test_strip_special_hides_special_tokens_only():
    from specviz.viz.format import strip_special

    assert strip_special("def f():\n    return 1<|im_end|>") == "def f():\n    return 1"
    assert strip_special("a <b>bold</b> & <|endoftext|></s>") == "a <b>bold</b> & "
    assert strip_special(None) == ""


def test_inspector_subtitle_clear_of_the_toolbar_and_timing_legend_below():
    fig = charts.inspector_figure(rejected_round(), 2, greedy=False)
    title = fig.layout.title
    assert title.x < 0.1 and title.xanchor == "left"
    lines = title.text.split("<sup>")[1].split("<br>")
    assert len(lines) >= 2 and all(len(line) <= 90 for line in lines)     # wrapped, not one long clipped line
    assert fig.layout.legend.y < 0 and fig.layout.margin.t >= 60 + 16 * len(lines)
    timing = charts.timeline_figure([rejected_round(), bonus_round()])
    assert timing.layout.legend.y < 0                                       # below the plot, not over the title


def test_sweep_marks_no_best_k_when_none_beats_the_target():
    rows = [SimpleNamespace(k=k, tokens_per_s=tps, acceptance_rate=0.5, alpha=0.5, tau=1.5, c=0.9,
                            theory_speedup=0.8, speedup=tps / 10.0) for k, tps in [(1, 7.0), (2, 8.0), (3, 6.0)]]
    fig = charts.throughput_vs_k_figure(SimpleNamespace(rows=rows, target_tokens_per_s=10.0, best_k=2))
    assert not any((t.name or "").startswith("best K") for t in fig.data)
    assert any("none faster than the target alone" in a.text for a in fig.layout.annotations)


def test_the_live_text_sends_only_the_rounds_the_page_lacks():
    """ After the whole text, an update carries the append mark and the new rounds only; past the window,
    the newest `window` rounds and the line counting the earlier ones (assets/live_text.js appends them)."""
    from tests.rounds import bonus_round

    live = vh.LiveText("p", greedy=True, window=3)
    assert "sv-round" not in live.html()
    live.add(bonus_round(0))
    live.add(bonus_round(1))
    first = live.appended()
    assert first.startswith(vh.LIVE_APPEND_MARK.format(window=3)) and first.count('class="sv-round"') == 2
    assert live.appended() == vh.LIVE_APPEND_MARK.format(window=3)          # nothing new: nothing sent
    for i in range(2, 7):
        live.add(bonus_round(i))
    burst = live.appended()
    assert burst.count('class="sv-round"') == 3 and 'data-earlier="4"' in burst and 'data-round="7"' in burst
    assert 'data-round="4"' not in burst
    assert vh.LiveText("p", greedy=True).appended() == vh.LIVE_APPEND_MARK.format(window=0)
