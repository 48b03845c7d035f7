"""The live text's appending script (assets/live_text.js) in Chromium, fed the values `LiveText` sends:
after every update the box holds exactly what the whole value would show, whatever the window and however many
rounds one update brings."""
from __future__ import annotations

import dataclasses

import pytest

from specviz.limits import ASSETS
from specviz.viz import html as vh
from tests.rounds import bonus_round, rejected_round

# The script runs as Gradio's js_on_load does: Function(element, trigger, props, server, upload, watch).
HARNESS = """(src) => {
  document.body.innerHTML = '<div id="host"><div class="sv-live-text"></div></div><template id="want"></template>';
  const host = document.getElementById('host'), props = {value: ''}, watchers = [];
  new Function('element', 'trigger', 'props', 'server', 'upload', 'watch', src)(
      host, () => {}, props, {}, null, (name, cb) => { if (name === 'value') watchers.push(cb); });
  window.feed = (value, whole) => {
    props.value = value;
    for (const cb of watchers) cb();
    const want = document.getElementById('want');
    want.innerHTML = whole;
    return [host.querySelector('.sv-live-text').innerHTML, want.innerHTML];
  };
}"""


@pytest.fixture
def feed(browser):
    page = browser.new_page()
    page.set_content("<!doctype html><html><body></body></html>")
    page.evaluate(HARNESS, (ASSETS / "live_text.js").read_text(encoding="utf-8"))
    yield lambda value, whole: page.evaluate("([v, w]) => feed(v, w)", [value, whole])
    page.close()


def evil_round(index):
    """A round whose tokens would be markup if a value were ever parsed unescaped."""
    rnd = rejected_round()
    drafted = [dataclasses.replace(tk, text="<img src=x onerror=alert(1)>") for tk in rnd.drafted]
    return dataclasses.replace(rnd, index=index, drafted=drafted)


@pytest.mark.parametrize("window", [4, None])
def test_appended_rounds_show_what_the_whole_text_shows(feed, window):
    sent, whole = (vh.LiveText("say <b>hi</b>", greedy=False, window=window) for _ in range(2))
    shown, want = feed(sent.html(), whole.html())
    assert shown == want
    index = 0
    for burst in (1, 2, 1, 3, 9, 1, 0, 2):    # rounds per update: past the window in one update, and none
        for _ in range(burst):
            rnd = evil_round(index) if index % 3 == 0 else bonus_round(index)
            sent.add(rnd)
            whole.add(rnd)
            index += 1
        shown, want = feed(sent.appended(), whole.html())
        assert shown == want, (window, index)
    assert shown.count('class="sv-round"') == (min(window, index) if window else index)
    assert ("sv-earlier" in shown) == (window is not None) and "<img" not in shown
    shown, want = feed(sent.html(), whole.html())   # the end of a run: the whole text again
    assert shown == want


def test_a_whole_value_replaces_what_the_appends_built(feed):
    live = vh.LiveText("first", greedy=True, window=3)
    feed(live.html(), "")
    for i in range(5):
        live.add(bonus_round(i))
    feed(live.appended(), "")
    other = vh.LiveText("second", greedy=True, window=3)
    shown, want = feed(other.html(), other.html())
    assert shown == want and "sv-round" not in shown and "second" in shown
