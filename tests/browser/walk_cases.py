"""The hostile inputs of `scripts/hostile_walk.py`: each a function that gives one input to the page (or the API) and
returns what answered, (kind, text, seconds, what was expected), for `walker.judge`."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tests.browser.walker import HANG_S, STATUS, answer, api_call, mark, type_into

CONFIGS = [("en", 1366), ("es", 1366), ("en", 390), ("es", 390)]   # the cases are dealt over these in turn
NUMBERS = ["-1", "0", "99999999999999999999", "1e-400", "5e-324", "NaN", "inf", "1,5", "١٢", "0x10", "", "2.5"]

BUTTONS = {"generate": "#sv-run", "sweep": "#sv-sweep", "race": "#sv-race-run", "lab": "#sv-lab-run",
           "why": "#sv-why-run", "whatif": None, "classroom": None, "trace": None}
CLASSROOM_BUTTON = {"sv-cls-round": "#sv-cls-go", "sv-cls-seed": "#sv-cls-redraw"}
ACCORDION = {"race": ("#sv-cls-race", "cls.tab_race"), "lab": ("#sv-cls-lab", "cls.tab_lab"),
             "whatif": ("#sv-cls-whatif", "cls.tab_whatif"), "why": ("#sv-cls-whatif", "cls.tab_whatif")}


def valid(text: str, spec) -> bool:
    """Whether `text` is a value the field takes, as typed (a non-zero text a float reads as 0 is not)."""
    _, lo, hi, whole, *rest = spec
    extra = rest[0] if rest else {}
    if not text.strip():
        return extra.get("blank", False)
    if not re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", text.strip()):
        return False
    v = float(text)
    if v == 0 and re.search(r"[1-9]", re.split("[eE]", text)[0]):
        return False
    if 0 < v < extra.get("least", 0):
        return False
    return lo <= v <= hi and (not whole or v.is_integer())


def open_area(br, area: str, lang: str, elem_id: str = "") -> None:
    from specviz.strings import t

    page = br.page
    tab = {"sweep": "tab.sweep", "trace": "tab.trace"}.get(area, "tab.classroom" if area in ACCORDION or
                                                            area == "classroom" else None)
    if tab:
        page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t(tab, lang)).first.click(timeout=20_000)
    if area in ACCORDION:
        sel, key = ACCORDION[area]
        page.locator(f"{sel} .label-wrap").get_by_text(t(key, lang)).first.click()
    if elem_id == "sv-lookup-k":
        page.locator("#sv-advanced .label-wrap").first.click()


def number_case(br, specs, elem_id: str, typed: str, lang: str, width: int):
    """Type a value into a number box and press the area's button (a box without one answers on change); (kind,
    text, seconds, expect). What is expected follows what the box shows: a value the browser itself changed as it was
    typed ("1,5" shows "15") is judged as shown, since the person sees it."""
    spec = specs[elem_id]
    area = spec[0]
    br.open(lang, width, "&lesson=prose-t07" if area == "classroom" else "")
    open_area(br, area, lang, elem_id)
    watch = STATUS[area]
    before = mark(br.page, watch)        # before typing: a what-if box answers on its own change
    shown = type_into(br.page, f"#{elem_id} input[type=number]", typed)
    kept = shown == typed or (valid(shown, spec) and valid(typed, spec) and float(shown) == float(typed))
    expect = ("either" if valid(typed, spec) else "refuse") if kept else (
        "either" if valid(shown, spec) else "refuse")
    note = "" if kept else f"(box shows {shown!r}) "
    if BUTTONS[area] or elem_id in CLASSROOM_BUTTON:
        before = mark(br.page, watch)
    button = CLASSROOM_BUTTON.get(elem_id) or BUTTONS[area]
    if button:
        br.page.click(button)
    kind, text, s = answer(br.page, watch, before, needs_final=area not in ("whatif", "classroom"),
                           timeout=HANG_S if button else 3.0)
    if kind is None and not button and expect == "either":
        kind = "quiet"   # a box that answers on change says nothing of a value it takes (a speed of 2)
    return kind, note + text, s, expect


def prompt_case(br, where: str, text: str, lang: str, width: int, expect: str):
    """A text into one of the three prompt boxes, then the box's button; a script in it must not run."""
    area = {"sv-prompt": "generate", "sv-race-prompt": "race", "sv-lab-prompt": "lab"}[where]
    br.open(lang, width)
    open_area(br, area, lang)
    box = br.page.locator(f"#{where} textarea").first
    box.fill(text)
    watch = STATUS[area]
    before = mark(br.page, watch)
    br.page.click(BUTTONS[area])
    kind, said, s = answer(br.page, watch, before)
    if "__sv_xss" in text and br.page.evaluate("() => window.__sv_xss") is not None:
        br.dialogs.append("window.__sv_xss was set")
    return kind, said, s, expect


def upload_case(br, name: str, data: bytes, lang: str, width: int, expect: str, tmp: Path):
    """A file given to the trace upload; a replay of markup tokens must not run them."""
    br.open(lang, width)
    open_area(br, "trace", lang)
    path = tmp / name
    path.write_bytes(data)
    before = mark(br.page, STATUS["trace"])
    br.page.locator("#sv-upload input[type=file]").set_input_files(str(path))
    kind, said, s = answer(br.page, STATUS["trace"], before, timeout=60.0)
    if br.page.evaluate("() => window.__sv_xss") is not None:
        br.dialogs.append("window.__sv_xss was set")
    return kind, said, s, expect


def switch_case(br, lang: str, width: int, work: str):
    """Start a piece of work, switch the page's language through its navbar, then Generate on the new page: the
    answer is that run's final status (a page left behind must not hold the queue)."""
    from specviz.strings import t

    br.open(lang, width)
    other = "es" if lang == "en" else "en"
    if work == "generate":
        type_into(br.page, "#sv-max-new input", "200")
        br.page.click("#sv-run")
        br.page.wait_for_function("() => document.querySelectorAll('#sv-live .sv-round').length >= 1", timeout=30_000)
    else:
        open_area(br, "sweep", lang)
        type_into(br.page, "#sv-sweep-tokens input", "200")
        br.page.click("#sv-sweep")
        br.page.wait_for_timeout(2500)
    br.page.get_by_role("link", name=t("lang.name", other)).first.click()
    br.page.wait_for_url(re.compile(r"/es" if other == "es" else r"/(\?.*)?$"), timeout=20_000)
    br.page.wait_for_selector("#sv-run", timeout=30_000)
    br.page.wait_for_timeout(300)
    type_into(br.page, "#sv-max-new input", "8")
    br.page.locator("#sv-compare-switch input").first.uncheck()
    before = mark(br.page, ["#sv-status"])
    br.page.click("#sv-run")
    kind, said, s = answer(br.page, ["#sv-status"], before)
    return kind, f"[{s:.1f} s on the {other} page] " + said, s, "run", other


def inspector_case(br, elem_id: str, typed: str, lang: str, width: int):
    """After a short run, a value typed into a slider's box of the round inspector: the slider shows where it went, and
    nothing is refused in Gradio's words."""
    from specviz.strings import t

    br.open(lang, width)
    type_into(br.page, "#sv-max-new input", "8")
    before = mark(br.page, STATUS["generate"])
    br.page.click("#sv-run")
    answer(br.page, STATUS["generate"], before)
    br.page.locator("#sv-tabs [role=tablist]").get_by_role("tab", name=t("tab.inspector", lang)).first.click()
    before = mark(br.page, ["#sv-inspect-text"])
    shown = type_into(br.page, f"#{elem_id} input[type=number]", typed)
    kind, said, s = answer(br.page, ["#sv-inspect-text"], before, needs_final=False, timeout=3.0)
    br.page.wait_for_timeout(500)
    after = br.page.locator(f"#{elem_id} input[type=number]").first.input_value()
    return kind or "quiet", f"(box shows {shown!r}, then {after!r}) {said[:80]}", s, "either"


def url_case(br, query: str, lang: str, width: int):
    """The page opened with hostile URL parameters: it loads, and says a sentence or nothing."""
    t0 = time.monotonic()
    br.open(lang, width, "&" + query)
    br.page.wait_for_timeout(2000)     # the page's on-load event answers the parameters
    said = " | ".join(x.strip() for x in br.page.evaluate(
        "() => ['#sv-status', '#sv-cls-info'].map(s => (document.querySelector(s) || {}).innerText || '')") if x.strip())
    if br.page.evaluate("() => window.__sv_xss") is not None:
        br.dialogs.append("window.__sv_xss was set")
    return "text", said, time.monotonic() - t0, "either"


def api_case(server, endpoint: str, body: bytes, content_type: str = "application/json"):
    """A POST to /gradio_api/call/<endpoint>: the answer must be one sentence, in a 404/422 body or an error event."""
    t0 = time.monotonic()
    try:
        status, said = api_call(server.url, endpoint, body, content_type)
    except Exception as e:   # a hang or a dropped connection is the finding
        return None, f"{type(e).__name__}: {e}"[:160], time.monotonic() - t0, "refuse"
    sentence = said
    if status == 200 and said.startswith("event: error"):
        data = json.loads(said.split("data:", 1)[1].strip() or "null")
        sentence = data.get("error") if isinstance(data, dict) else data   # Gradio 6 sends {"error": ..., "title": ...}
    elif status == 200:
        return "ok", said, time.monotonic() - t0, "refuse"
    else:
        try:
            sentence = json.loads(said).get("error")
        except (ValueError, AttributeError):
            sentence = None
    if not isinstance(sentence, str) or not sentence.strip():
        return "toast", f"HTTP {status}: {said}", time.monotonic() - t0, "refuse"
    return "error", f"HTTP {status}: {sentence}", time.monotonic() - t0, "refuse"


# ---------------------------------------------------------------- the cases
FIELD_VALUES = {   # which of NUMBERS each box gets (indices), so the walk stays within minutes
    "sv-k": range(12), "sv-temp": range(12), "sv-seed": (0, 2, 3, 5, 6, 7, 9, 11), "sv-max-new": (0, 1, 2, 5, 7, 10, 11),
    "sv-topp": (0, 1, 3, 5, 8, 10), "sv-topk": (0, 2, 4, 6, 9, 11), "sv-lookup-k": (0, 2, 5, 11),
    "sv-klo": (0, 2, 5, 10, 11), "sv-khi": (1, 3, 6, 7), "sv-sweep-tokens": (1, 4, 8, 10, 11),
    "sv-race-tokens": (0, 2, 5, 10, 11), "sv-race-k": (1, 3, 6, 8), "sv-lab-temp": (1, 3, 5, 7),
    "sv-lab-n": (0, 2, 6, 11), "sv-lab-seed": (0, 4, 9), "sv-wi-alpha": (0, 2, 4, 5, 7), "sv-wi-k": (1, 3, 6, 11),
    "sv-wi-c": (0, 2, 5, 6), "sv-why-k": (0, 2, 5, 11), "sv-cls-round": (0, 1, 2, 5, 11), "sv-cls-seed": (0, 5, 10),
    "sv-cls-speed": (1, 2, 5, 11),
}
XSS = "<script>window.__sv_xss = 1</script><img src=x onerror=\"window.__sv_xss = 2\">"
PROMPTS = [  # (box, text, expect)
    ("sv-prompt", "", "refuse"), ("sv-prompt", "   \n\t  ", "refuse"), ("sv-prompt", "x" * 100_000, "refuse"),
    ("sv-prompt", "a\x00b\x00c", "either"), ("sv-prompt", "\u202eRTL مرحبا بالعالم \u200f", "either"),
    ("sv-prompt", "\u200b\u200c\u200d\ufeff", "either"), ("sv-prompt", "🙂👍🏽👨‍👩‍👧 " * 20, "either"),
    ("sv-prompt", "e" + "\u0301" * 300, "either"), ("sv-prompt", XSS, "either"),
    ("sv-prompt", "{{7*7}} ${7*7} {0} %s %(x)s {prompt}", "either"), ("sv-prompt", "'; DROP TABLE users; --", "either"),
    ("sv-prompt", "x" * 7999, "either"), ("sv-prompt", "word " * 1700, "refuse"), ("sv-prompt", "line\n" * 2000, "refuse"),
    ("sv-race-prompt", "", "refuse"), ("sv-race-prompt", "y" * 2001, "refuse"), ("sv-race-prompt", XSS, "either"),
    ("sv-lab-prompt", "", "refuse"), ("sv-lab-prompt", "z" * 501, "refuse"), ("sv-lab-prompt", XSS, "either"),
]


def trace_files() -> list[tuple[str, bytes, str]]:
    """(name, bytes, expect) of the trace uploads: not JSON, JSON of the wrong shape, huge, markup in its tokens."""
    from tests.browser.test_browser_new_user import trace_json

    good = trace_json(None)
    marked = json.loads(json.dumps(good))
    for rnd in marked["rounds"]:
        for d in rnd.get("drafted", []):
            d["text"] = XSS
    marked["output_text"] = marked["prompt"] = XSS
    text = json.dumps(good)
    rounds_str = dict(good, rounds=["x"])
    return [("notes.txt", b"hello", "refuse"), ("list.json", b"[1, 2, 3]", "refuse"),
            ("object.json", b'{"a": 1}', "refuse"), ("null.json", b"null", "refuse"), ("number.json", b"42", "refuse"),
            ("huge.json", b"{" + b" " * 21_000_000 + b"}", "refuse"), ("markup.json", json.dumps(marked).encode(), "either"),
            ("utf16.json", text.encode("utf-16"), "either"), ("bom.json", b"\xef\xbb\xbf" + text.encode(), "either"),
            ("rounds.json", json.dumps(rounds_str).encode(), "refuse"),
            ("rounds-dict.json", json.dumps(dict(good, rounds={})).encode(), "refuse"),
            ("deep.json", b"[" * 100_000 + b"]" * 100_000, "refuse")]


URLS = ["lesson=%3Cscript%3Ewindow.__sv_xss%3D1%3C%2Fscript%3E", "lesson=prose-t07&step=99999999999999999999",
        "lesson=..%2F..%2Fetc%2Fpasswd", "lang=%3Cimg%20src%3Dx%20onerror%3Dwindow.__sv_xss%3D1%3E",
        "lesson=prose-t07&step=NaN", "lang=zz&lesson=" + "x" * 5000]
GEN = ["Hi", 3, 16, 0, 0, 1.0, 0, "model", False, False, "packaged", "", "", "auto", False, 0]
SWEEP = ["Hi", 1, 4, 8, 0, 0, 1.0, 0, False, "packaged", "", ""]


def _data(values) -> bytes:
    return json.dumps({"data": values}).encode()


API = [  # (endpoint, body, content type)
    ("generate", b"not json", "application/json"), ("generate", b'{"data": "Hi"}', "application/json"),
    ("generate", b'{"data": []}', "application/json"), ("generate", _data(GEN + ["extra"]), "application/json"),
    ("generate", b"[1, 2]", "application/json"), ("generate", b"hello", "text/plain"),
    ("generate", _data([None] + GEN[1:]), "application/json"), ("generate", _data(GEN[:1] + ["abc"] + GEN[2:]), "application/json"),
    ("generate", _data(GEN[:2] + [10**12] + GEN[3:]), "application/json"),
    ("generate", _data(GEN[:3]).replace(b"]}", b", NaN" + b", 0" * 12 + b"]}"), "application/json"),
    ("generate", _data(GEN[:8] + ["true"] + GEN[9:]), "application/json"),
    ("generate", _data(["x" * 2_000_000] + GEN[1:]), "application/json"),
    ("replay", _data([{"a": 1}]), "application/json"), ("replay", _data(["hello"]), "application/json"),
    ("replay", _data([42]), "application/json"), ("replay", _data(["[" * 50_000 + "]" * 50_000]), "application/json"),
    ("what_if", _data(["x", 5, 0.1]), "application/json"), ("what_if", b'{"data": [Infinity, 5, 0.1]}', "application/json"),
    ("what_if", _data([0.5, -3, 0.1]), "application/json"), ("race", _data(["hi", "lots"]), "application/json"),
    ("race", _data(["hi", 0, 4, "packaged", "", ""]), "application/json"),
    ("sweep", _data(SWEEP[:1] + [9, 2] + SWEEP[3:]), "application/json"), ("nope", _data([]), "application/json"),
]


def cases(specs: dict, tmp: Path) -> list:
    """Every case as (lang, width, area, what, run(br, server, specs, lang, width)), spread over the four pages."""
    found = []

    def add(area: str, what: str, run) -> None:
        lang, width = CONFIGS[len(found) % len(CONFIGS)]
        found.append((lang, width, area, what, run))

    for elem_id, picks in FIELD_VALUES.items():
        for i in picks:
            add(specs[elem_id][0], f"{elem_id} = {NUMBERS[i]!r}",
                lambda br, server, sp, lang, width, e=elem_id, v=NUMBERS[i]: number_case(br, sp, e, v, lang, width))
    for box, text, expect in PROMPTS:
        add(box[3:], f"{box} = {text[:24]!r}{'…' if len(text) > 24 else ''} ({len(text)} ch)",
            lambda br, server, sp, lang, width, b=box, x=text, e=expect: prompt_case(br, b, x, lang, width, e))
    for name, data, expect in trace_files():
        add("trace", f"upload {name} ({len(data):,} B)",
            lambda br, server, sp, lang, width, n=name, d=data, e=expect: upload_case(br, n, d, lang, width, e, tmp))
    for endpoint, body, ctype in API:
        add("api", f"POST {endpoint} {body[:26]!r}",
            lambda br, server, sp, lang, width, ep=endpoint, b=body, c=ctype: api_case(server, ep, b, c))
    for elem_id, typed in (("sv-insp-round", "NaN"), ("sv-insp-round", "99999"), ("sv-insp-pos", "-1"),
                           ("sv-insp-pos", "2.5")):
        add("inspector", f"{elem_id} = {typed!r}",
            lambda br, server, sp, lang, width, e=elem_id, v=typed: inspector_case(br, e, v, lang, width))
    for query in URLS:
        add("url", f"?{query[:40]}", lambda br, server, sp, lang, width, q=query: url_case(br, q, lang, width))
    for work in ("generate", "sweep", "generate", "sweep"):
        add("language", f"switch language during {work}",
            lambda br, server, sp, lang, width, w=work: switch_case(br, lang, width, w))
    return found


def field_specs() -> dict:
    """elem_id -> (area, lo, hi, whole[, {"blank": empty is valid, "least": the least positive value}]): the ranges the page promises (specviz.limits and the classroom's checks)."""
    from specviz import limits as L
    from specviz.ui import classroom_inputs as ci

    return {"sv-k": ("generate", 1, L.APP_MAX_K, True), "sv-max-new": ("generate", 1, L.APP_MAX_NEW_TOKENS, True),
            "sv-temp": ("generate", 0, L.APP_MAX_TEMPERATURE, False, {"least": L.APP_MIN_TEMPERATURE}), "sv-topp": ("generate", 5e-324, 1, False),
            "sv-topk": ("generate", 0, L.MAX_TOP_K, True), "sv-seed": ("generate", 0, L.MAX_SEED, True),
            "sv-lookup-k": ("generate", 0, L.APP_MAX_K, True, {"blank": True}),   # empty: as K
            "sv-klo": ("sweep", 1, L.APP_MAX_K, True), "sv-khi": ("sweep", 1, L.APP_MAX_K, True),
            "sv-sweep-tokens": ("sweep", 4, L.APP_MAX_SWEEP_TOKENS, True),
            "sv-race-tokens": ("race", 1, L.APP_MAX_RACE_TOKENS, True), "sv-race-k": ("race", 1, ci.MAX_RACE_K, True),
            "sv-lab-temp": ("lab", ci.LAB_MIN_TEMPERATURE, ci.LAB_MAX_TEMPERATURE, False),
            "sv-lab-n": ("lab", 100, ci.LAB_MAX_SAMPLES, True), "sv-lab-seed": ("lab", 0, L.MAX_SEED, True),
            "sv-wi-alpha": ("whatif", 0, 1, False), "sv-wi-k": ("whatif", 1, ci.WHATIF_K_MAX, True),
            "sv-wi-c": ("whatif", 0, ci.WHATIF_C_MAX, False), "sv-why-k": ("why", 1, L.APP_WHY_MAX_K, True),
            "sv-cls-round": ("classroom", 1, 8, True), "sv-cls-seed": ("classroom", 0, L.MAX_SEED, True),
            "sv-cls-speed": ("classroom", 0.5, 5.0, False)}
