"""The app in a real browser: Debian's Chromium driven by Playwright, tiny models served on 127.0.0.1.

Screenshots go to the test's output folder; with SPECVIZ_SAVE_SCREENSHOTS=1 the
main views are also written to assets/screenshots/ for the README. Fixtures are
in conftest.py, the page helper in page.py, the tiny-model app in tiny_app.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.page import CHROMIUM, Page, sampled_run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")


# ---------------------------------------------------------------- tests
def test_streams_rounds_with_provenance_and_hover_numbers(page):
    sampled_run(page)
    kind, seen = page.run(watch=True)
    assert kind == "ok", page.page.locator("#sv-status").inner_text()
    steps = [n for n in seen if n > 0]
    assert len(steps) >= 3, f"text arrived in too few visible steps: {seen}"
    live = page.page.locator("#sv-live")
    for verdict, needles in (("accepted", ["q(x) =", "p(x) =", "a = min(1, p/q) =", "u =", "ACCEPTED"]),
                             ("correction", ["r(x) =", "max(0, p − q)", "CORRECTION"]),
                             ("bonus", ["p(x) =", "BONUS"]),
                             ("rejected", ["q(x) =", "u ≥ a", "REJECTED"])):
        tok = live.locator(f".sv-tok[data-verdict={verdict}]").first
        assert tok.count(), f"no {verdict} token in the live text"
        tok.hover()
        title = tok.get_attribute("data-tip")
        for needle in needles:
            assert needle in title, (verdict, needle, title)
    acc = live.locator(".sv-tok[data-verdict=accepted]").first
    assert float(acc.get_attribute("data-u")) < float(acc.get_attribute("data-a"))
    # the style really differs per provenance in the rendered page (colour and line)
    styles = page.page.eval_on_selector_all(
        "#sv-live .sv-tok", "els => Object.fromEntries(els.map(e => [e.dataset.verdict, "
        "getComputedStyle(e).color + '|' + getComputedStyle(e).textDecorationLine + '|' + getComputedStyle(e).textDecorationStyle]))")
    assert len(set(styles.values())) == len(styles) >= 4, styles
    assert "line-through" in styles["rejected"]
    # hostile strings from the prompt and the tokenizer stay text
    assert live.locator("script, img, b").count() == 0
    assert "<script>alert('p')</script>" in live.locator(".sv-prompt").inner_text()
    assert page.page.locator("#sv-log .sv-card").count() >= 3
    assert page.page.locator("#sv-metrics [data-state=final]").count() == 1
    assert "speedup" in page.page.locator("#sv-compare").inner_text()
    page.shot("app-main")
    page.shot("live-text", locator=page.page.locator("#sv-live"))
    page.shot("round-log", locator=page.page.locator("#sv-log"))

    page.page.get_by_role("tab", name="Round inspector").click()
    page.page.wait_for_selector("#sv-insp-plot .js-plotly-plot, #sv-insp-plot .plot-container", timeout=15_000)
    page.set_number("sv-insp-round", 2)
    page.page.wait_for_timeout(600)
    assert "Round 2" in page.page.locator("#sv-inspect-text").inner_text()
    page.shot("round-inspector", locator=page.page.locator("#sv-insp-plot"))
    page.page.get_by_role("tab", name="Acceptance & timing").click()
    page.page.wait_for_selector("#sv-pos-plot .js-plotly-plot", timeout=15_000)
    page.page.wait_for_selector("#sv-time-plot .js-plotly-plot", timeout=15_000)


def test_throughput_vs_k_chart_after_a_sweep(page):
    page.page.get_by_role("tab", name="Throughput vs K").click()
    page.set_number("sv-khi", 4)
    page.set_number("sv-sweep-tokens", 12)
    page.page.click("#sv-sweep")
    page.page.wait_for_selector("#sv-sweep-status [data-kind=ok], #sv-sweep-status [data-kind=error]", timeout=90_000)
    assert "Best K" in page.page.locator("#sv-sweep-status").inner_text()
    plot = page.page.locator("#sv-sweep-plot")
    plot.locator(".js-plotly-plot").wait_for(timeout=15_000)
    names = page.page.eval_on_selector("#sv-sweep-plot .js-plotly-plot", "el => el.data.map(t => t.name)")
    assert "target alone" in names and any(n.startswith("best K") for n in names)
    assert plot.locator(".bars .point").count() == 4          # one measured bar per K
    page.shot("throughput-vs-k", locator=plot)


def test_downloaded_trace_replays_the_same_tokens(page, tmp_path):
    sampled_run(page, seed=5, max_new=30)
    kind, _ = page.run()
    assert kind == "ok"
    original = page.emitted()
    assert original
    page.page.get_by_role("tab", name="Trace files").click()
    with page.page.expect_download() as info:
        page.page.click("#sv-download")
    path = tmp_path / "trace.json"
    info.value.save_as(path)
    data = json.loads(path.read_text())
    assert data["format"] == "specviz-trace"

    page.upload_trace(path)
    assert page.wait_final() == "ok"
    assert page.emitted() == original
    page.shot("replay")

    # a hand-edited trace with hostile strings replays as text; a malformed one gives a message
    data["prompt"] = "<img src=x onerror=alert('prompt')>"
    data["target_model"] = "<script>alert('model')</script>"
    data["rounds"][0]["drafted"][0]["text"] = "<img src=x onerror=alert('token')>"
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(data))
    page.upload_trace(hostile)
    assert page.wait_final() == "ok"
    assert page.page.locator("#sv-live img, #sv-compare script, #sv-log img").count() == 0
    assert "<img src=x onerror=alert('prompt')>" in page.page.locator("#sv-live .sv-prompt").inner_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "specviz-trace", "version": 1, "rounds": [{"index": "<b>x</b>"}]}')
    page.upload_trace(bad)
    page.page.wait_for_selector("#sv-status [data-kind=error]", timeout=15_000)
    assert "Not a usable trace" in page.page.locator("#sv-status").inner_text()


def test_bad_input_shows_a_message_and_the_next_run_works(page):
    page.set_prompt("   ")
    kind, _ = page.run()
    assert kind == "error" and "enter a prompt" in page.page.locator("#sv-status").inner_text()
    page.set_prompt("hello")
    page.page.locator("#sv-models .label-wrap").first.click()
    page.page.locator("#sv-pair input").first.click()
    page.page.get_by_role("option", name="Custom Hub ids…").click()
    page.page.locator("#sv-draft textarea, #sv-draft input").first.fill("../../etc/passwd")
    page.page.locator("#sv-target textarea, #sv-target input").first.fill("Qwen/Qwen2.5-1.5B-Instruct")
    kind, _ = page.run()
    text = page.page.locator("#sv-status").inner_text()
    assert kind == "error" and "invalid model id" in text, text
    page.shot("bad-input", full_page=False)
    page.page.locator("#sv-pair input").first.click()
    page.page.get_by_role("option").first.click()
    page.set_number("sv-max-new", 12)
    kind, _ = page.run()
    assert kind == "ok", page.page.locator("#sv-status").inner_text()
    assert page.emitted()


def test_drafter_selector_and_the_prompt_lookup_marker(page):
    from specviz.engine.drafters import DRAFTERS
    from specviz.ui.inputs import drafter_choices

    assert page.page.locator("#sv-drafter input[type=radio]").count() == len(DRAFTERS) + 1   # and the tree
    labels = " | ".join(page.page.locator("#sv-drafter label").all_inner_texts())
    assert all(label in labels for label, _ in drafter_choices()), labels
    page.page.locator("#sv-advanced .label-wrap").first.click()
    page.page.wait_for_selector("#sv-compile input[type=radio]", timeout=5_000)
    assert page.page.locator("#sv-compile input[type=radio]").count() == 4   # Advanced: auto / on / off / graphs
    page.page.locator("#sv-drafter label", has_text="prompt lookup (n-gram)").click()
    page.set_number("sv-max-new", 30)
    kind, _ = page.run()
    assert kind == "ok", page.page.locator("#sv-status").inner_text()
    live = page.page.locator("#sv-live")
    tok = live.locator(".sv-tok.sv-src-ngram").first
    assert tok.count() and tok.get_attribute("data-source") == "ngram"
    assert "proposed by prompt lookup (n-gram)" in tok.get_attribute("data-tip")
    assert "n" in tok.evaluate("e => getComputedStyle(e, '::after').content")      # the visible marker
    assert live.locator(".sv-tok[data-source=model]").count() == 0
    card = page.page.locator("#sv-log .sv-card-drafter").first
    assert card.get_attribute("data-drafter") == "ngram" and "prompt lookup (n-gram)" in card.inner_text()
    page.shot("drafter-ngram", locator=live)


def test_lookup_k_is_refused_beside_its_box_but_with_a_hybrid_and_then_runs(page):
    """Advanced's Lookup K: with the draft model it is refused beside the box and nothing runs; with the hybrid the
    run goes and its trace records it (the lookup rounds may draft past K)."""
    page.page.locator("#sv-advanced .label-wrap").first.click()
    page.page.wait_for_selector("#sv-lookup-k input", timeout=5_000)
    page.set_number("sv-lookup-k", 5)
    page.page.click("#sv-run")
    beside = page.page.locator("#sv-lookup-k .validation-error").first
    beside.wait_for(timeout=10_000)
    assert "hybrid drafters only" in beside.inner_text()
    assert page.page.locator("#sv-lookup-k input").input_value() == "5"   # kept, not cleared
    page.page.locator("#sv-drafter label", has_text="hybrid (prompt lookup").click()
    page.set_prompt("the cat sat on the mat " * 4)
    page.set_number("sv-k", 2)
    page.set_number("sv-max-new", 30)
    kind, _ = page.run()
    assert kind == "ok", page.page.locator("#sv-status").inner_text()
    assert page.page.locator("#sv-lookup-k .validation-error").count() == 0 and page.emitted()
    page.page.get_by_role("tab", name="Trace files").click()
    with page.page.expect_download() as download:
        page.page.click("#sv-download")
    trace = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert trace["lookup_k"] == 5 and trace["k"] == 2
    assert all(len(r["drafted"]) <= (5 if r["drafted"] and r["drafted"][0]["source"] == "ngram" else 2)
               for r in trace["rounds"])


def test_two_pages_at_once_get_their_own_streams(browser, server, shots):
    from specviz import SamplingConfig, speculative_generate
    from tests.browser.tiny_app import TinyPair

    pair = TinyPair(0.0)
    a, b = Page(browser, server, shots), Page(browser, server, shots)
    try:
        for pg, seed, prompt in ((a, 11, "first page"), (b, 22, "second page")):
            pg.set_prompt(prompt)
            sampled_run(pg, seed=seed, max_new=24, k=3)
        a.page.click("#sv-run")
        b.page.click("#sv-run")
        assert a.wait_final() == "ok" and b.wait_final() == "ok"
        for pg, seed, prompt in ((a, 11, "first page"), (b, 22, "second page")):
            rounds = speculative_generate(pair.target, pair.draft, pair.encode_chat(prompt), k=3,
                                          sampling=SamplingConfig(temperature=1.0), max_new_tokens=24, seed=seed)
            expected = [str(t) for r in rounds for t in r.emitted]
            assert [i for i, _ in pg.emitted()] == expected
            assert prompt in pg.page.locator("#sv-live .sv-prompt").inner_text()
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------- the packaged real pair
@pytest.mark.real_model
def test_real_pair_greedy_identical_badge(browser, shots, pair_auto):
    from specviz.ui import PageSettings, build_app, launch_app
    from tests.browser.tiny_app import free_port

    demo = build_app(lambda d, t, progress: pair_auto, settings=PageSettings(max_new_tokens=16))
    port = free_port()
    launch_app(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    pg = Page(browser, f"http://127.0.0.1:{port}/", shots)
    try:
        pg.set_prompt("Write a Python function that checks whether a number is prime.")
        kind, _ = pg.run(timeout=240)
        assert kind == "ok", pg.page.locator("#sv-status").inner_text()
        badge = pg.page.locator("#sv-compare [data-identical]")
        assert badge.get_attribute("data-identical") == "true", badge.inner_text()
        pg.shot("app-real-pair")
    finally:
        pg.close()
        demo.close()


def test_an_idle_page_does_not_draw_every_frame(page):
    """ Gradio 6.31 leaves status trackers' timers asking for a frame 60 times a second forever (the page's
    own "Loading..." tracker, removed while pending). assets/raf_guard.js, served first in <head>, must have matched
    them (`slowed` > 0: if a Gradio upgrade changes that code, this fails and the guard needs a look) and slowed them
    to 4 a second each; after a run, an idle page then asks for well under 60 frames a second (one leaked timer alone
    asked for 60; what is left is Svelte's animation loop, ~20 a second, not touched)."""
    sampled_run(page, max_new=8)
    kind, _ = page.run()
    assert kind == "ok"
    page.page.wait_for_timeout(1500)   # the run's own trackers settle
    count = "() => ({...window.__svRaf})"
    before = page.page.evaluate(count)
    assert before and before["slowed"] > 0, before
    page.page.wait_for_timeout(2000)
    after = page.page.evaluate(count)
    slowed = (after["slowed"] - before["slowed"]) / 2
    every = (after["calls"] - before["calls"]) / 2
    assert slowed < 20, f"the trackers' timers asked for {slowed:.0f} frames a second"
    assert every < 45, f"the idle page asked for {every:.0f} frames a second ({slowed:.0f} of them the timers')"
