"""The classroom's links in Chromium at 1366×900: a link opens its lesson in view at the step it names, every tab shows in
Spanish, Gradio's and Plotly's own words, the title and <html lang> follow the page's language, presenter mode
presents, and the guess buttons exist only with Predict."""
from __future__ import annotations


import pytest

from specviz.classroom import lessons
from specviz.classroom.state import StepState
from specviz.strings import t
from tests.browser.page import bare_page, settle_box, stage, wait_stage
from specviz.ui import locale

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1366, 900
# Gradio's own visible words, as it writes them in English (its locale files translate them once told the language)
GRADIO_VISIBLE = ("Use via API", "Built with Gradio", "Drop File Here", "Click to Upload")


@pytest.fixture
def laptop(browser, server):
    """A page at 1366×900 (the size the issue was found at); fails on any JS dialog."""
    with bare_page(browser, viewport={"width": WIDTH, "height": HEIGHT}) as page:
        yield page


def goto(page, server, path: str = "", query: str = ""):
    page.goto(f"{server}{path}?__theme=light&{query}")
    page.wait_for_selector("#sv-run", timeout=30_000)


def in_view(page, selector: str) -> bool:
    return page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                           "return r.top >= 0 && r.top < window.innerHeight && r.height > 0; }")


def test_a_link_opens_the_lesson_in_view_at_its_step(laptop, server):
    goto(laptop, server, query="lesson=early-rejection")
    lesson, trace = lessons.load("early-rejection")
    rejected = trace.rounds[lesson.start - 1].rejected_at
    wait_stage(laptop, {"round": str(lesson.start), "kind": "test", "pos": str(rejected + 1)})
    laptop.wait_for_function("() => window.scrollY > 0", timeout=10_000)
    assert in_view(laptop, "#sv-cls-stage") and in_view(laptop, "#sv-cls-next")
    selected = laptop.locator("#sv-tabs [role=tab][aria-selected=true]").inner_text()
    assert selected == t("tab.classroom")
    # An explicit step: the 2nd round's first decision of another lesson, counted as Next would count it.
    _, prose = lessons.load("prose-t07")
    n = StepState(round=1, stop=1).step_number(prose.rounds)
    goto(laptop, server, query=f"lesson=prose-t07&step={n}")
    wait_stage(laptop, {"round": "2", "stop": "2", "kind": "verify"})
    assert in_view(laptop, "#sv-cls-stage")


def test_every_tab_shows_in_spanish_at_1366(laptop, server):
    goto(laptop, server, path="es")
    laptop.wait_for_timeout(500)
    tabs = laptop.locator("#sv-tabs [role=tablist] [role=tab]")
    names = [tabs.nth(i).inner_text() for i in range(tabs.count())]
    want = [t(key, "es") for key in ("tab.log", "tab.inspector", "tab.charts", "tab.sweep", "tab.trace",
                                     "tab.classroom")]
    assert names == want
    assert all(tabs.nth(i).is_visible() for i in range(tabs.count()))
    assert not laptop.locator("#sv-tabs .overflow-menu > button").is_visible()
    laptop.locator("#sv-tabs [role=tab]", has_text="Aula").click()
    laptop.wait_for_selector("#sv-cls-stage", state="visible")


COLLECT_WORDS = """() => {
  const out = [];
  for (const e of document.querySelectorAll('[aria-label],[title],[alt],[data-title],[placeholder]'))
    for (const a of ['aria-label', 'title', 'alt', 'data-title', 'placeholder']) if (e.getAttribute(a)) out.push(e.getAttribute(a));
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n;
  while ((n = w.nextNode())) { const p = n.parentElement;
    if (p && !p.closest('script,style') && p.getClientRects().length && n.textContent.trim()) out.push(n.textContent.trim()); }
  return out;
}"""


def test_gradio_and_plotly_words_title_and_lang_follow_the_spanish_page(laptop, server):
    goto(laptop, server, path="es")
    laptop.wait_for_function(f"() => document.title === {t('app.title', 'es')!r}", timeout=10_000)
    assert laptop.evaluate("() => document.documentElement.lang") == "es"
    english = set(locale.words("es")) | set(GRADIO_VISIBLE)
    seen: set[str] = set()
    for key in ("tab.log", "tab.charts", "tab.sweep", "tab.trace", "tab.classroom"):
        laptop.locator("#sv-tabs [role=tab]", has_text=t(key, "es")).click()
        laptop.wait_for_timeout(400)
        if key == "tab.classroom":
            laptop.locator("#sv-cls-whatif .label-wrap").click()
            laptop.wait_for_selector("#sv-wi-plot .modebar-btn", state="attached", timeout=10_000)
        # The page translates new elements a moment after they appear: wait (bounded) until none is left English.
        laptop.wait_for_function("(english) => !(" + COLLECT_WORDS + ")().some(w => english.includes(w))",
                                 arg=sorted(english), timeout=5_000)
        seen |= set(laptop.evaluate(COLLECT_WORDS))
    left = sorted(english & seen)
    assert not left, left
    assert t("gradio.copy", "es") in seen and "Usar vía API" in " ".join(seen)   # translated, not removed
    assert laptop.evaluate("() => document.title") == t("app.title", "es")
    goto(laptop, server)                                                   # the English page stays English
    laptop.wait_for_timeout(500)
    assert laptop.evaluate("() => document.documentElement.lang") == "en"
    assert "Use via API" in laptop.locator("footer").inner_text()


def test_presenter_mode_presents_one_step_in_large_type(laptop, server):
    goto(laptop, server, query="lesson=prose-t07&step=1")
    wait_stage(laptop, {"round": "1", "stop": "1"})
    size = lambda: laptop.eval_on_selector("#sv-cls-stage .sv-cls-stage-box", "e => parseFloat(getComputedStyle(e).fontSize)")  # noqa: E731
    before = size()
    others = ["#sv-run", "#sv-prompt", "#sv-status", "#sv-cls-play", "#sv-cls-speed", "#sv-cls-go", "#sv-cls-redraw",
              "#sv-cls-predict", "#sv-cls-lesson", "#sv-cls-lab", "#sv-cls-whatif", "#sv-tabs [role=tablist]"]
    assert all(laptop.locator(s).first.is_visible() for s in others[:4])
    laptop.locator("#sv-cls-presenter input").check()
    laptop.wait_for_function("() => document.documentElement.classList.contains('sv-presenter')")
    laptop.wait_for_timeout(300)
    assert size() >= max(24, 1.6 * before), (before, size())
    hidden = [s for s in others if laptop.locator(s).first.is_visible()]
    assert not hidden, hidden
    assert laptop.locator("#sv-cls-prev").is_visible() and laptop.locator("#sv-cls-next").is_visible()
    assert in_view(laptop, "#sv-cls-stage") and in_view(laptop, "#sv-cls-next")
    laptop.click("#sv-cls-next")
    wait_stage(laptop, {"round": "1", "stop": "2"})
    laptop.keyboard.press("Escape")                                        # Esc leaves presenter mode
    laptop.wait_for_function("() => !document.documentElement.classList.contains('sv-presenter')")
    assert laptop.locator("#sv-run").is_visible()


def test_the_guess_buttons_show_only_with_predict_and_only_where_a_guess_counts(laptop, server):
    """ The buttons showed on steps where clicking them did nothing (the draft, the verify)."""
    goto(laptop, server, query="lesson=early-rejection&step=1")
    wait_stage(laptop, {"round": "1", "stop": "1", "kind": "draft"})
    assert not laptop.locator("#sv-cls-guess-accept").is_visible()
    laptop.locator("#sv-cls-predict input").check()
    laptop.wait_for_selector("#sv-cls-score", state="visible", timeout=10_000)      # the score: with predict
    assert not laptop.locator("#sv-cls-guess-accept").is_visible()                 # nothing to guess at a draft
    laptop.click("#sv-cls-next")
    wait_stage(laptop, {"kind": "verify"})
    assert not laptop.locator("#sv-cls-guess-accept").is_visible()
    laptop.click("#sv-cls-next")
    wait_stage(laptop, {"kind": "test"})
    laptop.wait_for_selector("#sv-cls-guess-accept", state="visible", timeout=10_000)   # u hidden: guess now
    laptop.click("#sv-cls-guess-accept")
    laptop.wait_for_selector("#sv-cls-guess-accept", state="hidden", timeout=10_000)    # revealed: nothing left
    laptop.click("#sv-cls-next")
    laptop.wait_for_selector("#sv-cls-guess-accept", state="visible", timeout=10_000)   # the next test
    laptop.locator("#sv-cls-predict input").uncheck()
    laptop.wait_for_selector("#sv-cls-guess-accept", state="hidden", timeout=10_000)


def presenter_ticked_with_the_mouse(laptop, server) -> None:
    """A lesson's first stop with presenter mode ticked by a click: the switch (a checkbox) keeps the focus."""
    goto(laptop, server, query="lesson=prose-t07&step=1")
    wait_stage(laptop, {"round": "1", "stop": "1"})
    laptop.locator("#sv-cls-presenter input").click()
    laptop.wait_for_function("() => document.documentElement.classList.contains('sv-presenter')")
    assert laptop.evaluate("() => document.activeElement.type") == "checkbox"   # the switch has the focus


def test_escape_leaves_presenter_mode_right_after_a_mouse_click(laptop, server):
    """Switched on with the mouse, the switch kept the focus and Escape did nothing."""
    presenter_ticked_with_the_mouse(laptop, server)
    laptop.keyboard.press("Escape")
    laptop.wait_for_function("() => !document.documentElement.classList.contains('sv-presenter')", timeout=5_000)
    assert not laptop.locator("#sv-cls-presenter input").is_checked()


def test_the_arrows_step_right_after_presenter_mode_is_ticked(laptop, server):
    """Ticked with the mouse, the switch keeps the focus, and the key handler ignored every key over an <input>:
    → did nothing until the teacher clicked elsewhere. A switch takes no arrow keys, so they step; Space still
    belongs to the focused switch."""
    presenter_ticked_with_the_mouse(laptop, server)
    laptop.keyboard.press("ArrowRight")
    wait_stage(laptop, {"round": "1", "stop": "2"})
    laptop.keyboard.press("ArrowLeft")
    wait_stage(laptop, {"round": "1", "stop": "1"})
    assert laptop.locator("#sv-cls-presenter input").is_checked()               # the arrows left the switch be
    laptop.keyboard.press(" ")                                                  # Space: the switch's own key
    laptop.wait_for_function("() => !document.documentElement.classList.contains('sv-presenter')", timeout=5_000)
    assert "Play" in laptop.locator("#sv-cls-play").inner_text()                # ... and it did not start playing


def test_the_classroom_refuses_bad_boxes_with_a_sentence_never_gradios_error(laptop, server):
    """ Round 0 and seed -1 gave Gradio's bare red "Error" pill, α 1.5 was clamped to 1 without a word,
    and a temperature of 1e-400 ran greedy while its box still said 1e-400."""
    goto(laptop, server, query="lesson=early-rejection&step=1")
    wait_stage(laptop, {"round": "1", "stop": "1"})
    for value, said in (("0", "Round must be a whole number between 1 and"), ("2.5", "Round must be a whole number")):
        settle_box(laptop, "#sv-cls-round input", value)
        laptop.click("#sv-cls-go")
        laptop.wait_for_function("(s) => document.querySelector('#sv-cls-info').innerText.includes(s)", arg=said,
                                 timeout=10_000)
        assert laptop.locator("#sv-cls-round input").input_value() == value      # not rounded, not clamped
    settle_box(laptop, "#sv-cls-seed input", "-1")
    laptop.click("#sv-cls-redraw")
    laptop.wait_for_function("() => document.querySelector('#sv-cls-info').innerText.includes('Seed for re-drawn u')",
                             timeout=10_000)
    laptop.locator(".label-wrap").get_by_text("What-if calculator").click()
    alpha = laptop.locator("#sv-wi-alpha input")
    settle_box(laptop, "#sv-wi-alpha input", "1.5")
    laptop.wait_for_function("() => document.querySelector('#sv-wi-text').innerText.includes('between 0 and 1')",
                             timeout=10_000)
    assert alpha.input_value() == "1.5"
    assert laptop.locator(".toast-body, .toast-wrap .error").count() == 0        # no Gradio error pill anywhere
    temp = laptop.locator("#sv-temp input")
    temp.fill("1e-400")
    temp.press("Tab")
    laptop.wait_for_function("() => document.querySelector('#sv-temp input').value === '5e-324'", timeout=5_000)


def test_next_pressed_twice_quickly_moves_two_stops(laptop, server):
    """A teacher's quick double press of Next: the second press, made while the first is answered, is not lost
    (Gradio drops a click made while its event is pending unless told otherwise); it runs after the first, from
    the stop the first reached."""
    goto(laptop, server, query="lesson=prose-t07&step=1")
    wait_stage(laptop, {"round": "1", "stop": "1"})
    laptop.evaluate("() => { const b = document.querySelector('#sv-cls-next'); b.click(); b.click(); }")
    wait_stage(laptop, {"round": "1", "stop": "3"})
    laptop.evaluate("() => { const b = document.querySelector('#sv-cls-prev'); b.click(); b.click(); }")
    wait_stage(laptop, {"round": "1", "stop": "1"})
