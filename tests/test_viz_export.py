"""A run as one HTML page (specviz.viz.export, `python -m specviz export`): every round and token of a real recorded
run is in it with its numbers, in the page's language; a trace's markup stays text; bad input is refused in a
sentence. The page in a browser, offline: tests/browser/test_browser_export.py."""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest

from exported import HOSTILE, hostile, recorded
from specviz import __main__ as cli
from specviz.limits import EXPORT_MAX_ROUNDS
from specviz.strings import t
from specviz.trace.files import TraceFormatError
from specviz.trace.records import Trace, metrics
from specviz.viz import export
from specviz.viz.format import display_number, pct, ratio_shown

@pytest.fixture(scope="module")
def chain() -> Trace:
    return Trace.from_json(recorded().to_json())        # as a file gives it back


@pytest.fixture(scope="module")
def tree() -> Trace:
    return Trace.from_json(recorded("dynamic:6").to_json())


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of the JSON block and of the page's script."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))

    def having(self, **attrs) -> list[dict]:
        return [a for _, a in self.tags if all(a.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items())]


def page_data(parsed: Elements) -> dict:
    return json.loads(next(text for attrs, text in parsed.scripts if attrs.get("id") == "sv-x-data"))


def test_every_round_and_token_of_a_real_run_is_in_the_page_with_its_numbers(chain):
    assert any(r.rejected_at is not None for r in chain.rounds) and any(r.bonus for r in chain.rounds)
    parsed = Elements(export.export_html(chain))
    for rnd in chain.rounds:
        n = rnd.index + 1
        assert parsed.having(class_="sv-round", data_round=str(n)), n                  # its text in the live text
        assert [a for a in parsed.having(data_round=str(n)) if "sv-card" in a.get("class", "")], n   # its card
        for i, tk in enumerate(rnd.drafted):
            shown = parsed.having(data_round=str(n), data_pos=str(i + 1), data_token_id=str(tk.token_id))
            token = [a for a in shown if a.get("data-verdict") == rnd.verdict(i)]
            assert token, (n, i)
            shown = ratio_shown(tk.p, tk.q, tk.accept_prob, tk.u)   # as the app's live text writes them
            assert (token[0]["data-q"], token[0]["data-p"], token[0]["data-a"], token[0]["data-u"]) == \
                (shown.q, shown.p, shown.a, shown.u)
            assert f"= {shown.a}" in token[0]["data-tip"] and "min(1, p/q)" in token[0]["data-tip"]
        choice = rnd.correction or rnd.bonus
        kind = "correction" if rnd.correction else "bonus"
        assert parsed.having(data_round=str(n), data_verdict=kind, data_token_id=str(choice.token_id)), n


def test_the_tiles_and_chart_numbers_after_each_round_are_the_apps(chain):
    data = page_data(Elements(export.export_html(chain)))
    assert data["total"] == len(chain.rounds) and len(data["tiles"]) == len(chain.rounds) + 1
    for n in range(len(chain.rounds) + 1):
        m = metrics(chain.rounds[:n])
        tiles = data["tiles"][n]
        assert tiles["rounds"] == str(n) and tiles["tokens"] == str(m["tokens"])
        assert tiles["acceptance"] == pct(m["acceptance_rate"]) and tiles["tau"] == display_number(m["tau"], 2)
        assert tiles["tps"] == display_number(m["tokens_per_s"], 1)
    for rnd, numbers in zip(chain.rounds, data["rounds"]):
        assert numbers[:2] == [rnd.k, rnd.n_accepted] and numbers[4] == len(rnd.emitted)
        assert numbers[2] == pytest.approx(1000 * rnd.draft_seconds, abs=1e-3)


def test_a_tree_run_has_every_round_s_tree_with_its_nodes_numbers(tree):
    assert sum(bool(r.tree) for r in tree.rounds) >= 3    # (a round the budget cut to one token drafts a chain)
    parsed = Elements(export.export_html(tree, "es"))
    drawn = parsed.having(class_="sv-tree")
    assert [int(a["data-nodes"]) for a in drawn] == [len(r.tree) for r in reversed(tree.rounds) if r.tree]
    page = export.export_html(tree, "es")
    for rnd in tree.rounds:
        for node in rnd.tree or []:
            if node.status != "untried":
                assert t("tree.tip", "es", q=display_number(node.q), p=display_number(node.p),
                         a=display_number(node.accept_prob), u=display_number(node.u),
                         status=t(f"tree.status_{node.status}", "es")).replace('"', "&quot;") in page


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_page_speaks_its_language(chain, lang):
    page = export.export_html(chain, lang)
    parsed = Elements(page)
    assert parsed.having(lang=lang)
    for key in ("export.title", "export.next", "export.prev", "export.play", "chart.timeline", "tab.log"):
        assert t(key, lang).replace('"', "&quot;") in page, key
    words = page_data(parsed)["words"]
    assert words["play"] == t("export.play", lang) and "{total}" in words["round_of"]


def test_nothing_is_fetched_and_only_the_page_s_own_script_may_run(chain):
    page = export.export_html(chain)
    parsed = Elements(page)
    for tag, attrs in parsed.tags:                 # no file, font, image or style from anywhere
        assert not {"src", "href", "srcset", "action"} & set(attrs), (tag, attrs)
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    policy = parsed.having(http_equiv="Content-Security-Policy")[0]["content"]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    code = [text for attrs, text in parsed.scripts if "type" not in attrs]
    assert len(code) == 1
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy
    assert "plotly" not in page.lower()


@pytest.mark.parametrize("which", ["chain", "tree"])
def test_markup_in_a_trace_comes_out_as_text(which, request):
    trace = Trace.from_json(hostile(request.getfixturevalue(which)).to_json())   # a file that says so is valid
    page = export.export_html(trace)
    assert page.count("<script") == 2 and page.count("</script>") == 2            # the data block and the script
    assert "<img" not in page and "<iframe" not in page and "<svg onload" not in page and "<!-- ]]>" not in page
    assert all(h.replace("\u2028", "") not in page for h in HOSTILE)               # none of them as written
    assert "\u2028" not in page.split('id="sv-x-data">')[1]                        # escaped in the JSON block
    parsed = Elements(page)
    assert {tag for tag, _ in parsed.tags} <= {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2",
                                                "h3", "p", "b", "i", "div", "span", "nav", "button", "input", "svg",
                                                "table", "tr", "th", "td", "ul", "li", "noscript", "script"}
    assert not [a for _, a in parsed.tags if any(k.startswith("on") for k in a)]   # no handler attribute anywhere
    shown = parsed.having(class_="sv-prompt")
    assert shown and "alert(1)" in page                                             # ...but the text itself is shown
    assert "&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;" in page


def test_json_in_a_script_element_cannot_close_it():
    data = {"t": "</script><!-- <script> & \u2028\u2029 'x' \"y\""}
    text = export.script_json(data)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == data


def test_a_trace_too_long_for_one_page_is_refused_in_words(chain):
    rounds = [dataclasses.replace(chain.rounds[0], index=i) for i in range(EXPORT_MAX_ROUNDS + 1)]
    with pytest.raises(TraceFormatError) as e:
        export.export_html(dataclasses.replace(chain, rounds=rounds))
    assert e.value.key == "export.too_many_rounds" and str(EXPORT_MAX_ROUNDS) in e.value.text("es")


# ---------------------------------------------------------------- python -m specviz export
def test_the_command_writes_the_page(chain, tmp_path, capsys):
    source = tmp_path / "run.json"
    source.write_text(chain.to_json(), encoding="utf-8")
    assert cli.main(["export", str(source), "-o", str(tmp_path / "out.html"), "--lang", "es"]) == 0
    page = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'lang="es"' in page and t("export.next", "es") in page
    assert len(Elements(page).having(class_="sv-round")) == len(chain.rounds)
    out = capsys.readouterr().out
    assert "out.html" in out and f"{len(chain.rounds)} rounds" in out
    assert cli.main(["export", str(source)]) == 0 and (tmp_path / "run.html").exists()   # default: beside it


BAD = {
    "missing.json": (None, "cannot be read"),
    "empty.json": (b"", t("tracefile.empty")),
    "cut.json": (b'{"format": "specviz-trace", "version": 1, "rounds": [', t("tracefile.truncated")),
    "other.json": (b'{"format": "something else"}', "not a specviz trace"),
    "binary.json": (b"\xff\xfe\x00<script>", "cannot be exported"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_command_refuses_bad_input_in_one_sentence(name, tmp_path, capsys):
    data, says = BAD[name]
    if data is not None:
        (tmp_path / name).write_bytes(data)
    assert cli.main(["export", str(tmp_path / name), "-o", str(tmp_path / "out.html")]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specviz export: error:") and says in err[0], captured.err
    assert "Traceback" not in captured.err and not (tmp_path / "out.html").exists()


def test_the_command_refuses_a_file_over_the_upload_limit_and_its_own_trace(chain, tmp_path, capsys, monkeypatch):
    import specviz.trace.files as files

    source = tmp_path / "run.json"
    source.write_text(chain.to_json(), encoding="utf-8")
    monkeypatch.setattr(files, "APP_MAX_TRACE_BYTES", 1000)
    assert cli.main(["export", str(source), "-o", str(tmp_path / "out.html")]) == 1
    assert "the limit is 0 MB" in capsys.readouterr().err     # the page's own sentence, in MB
    assert cli.main(["export", str(source), "-o", str(source)]) == 1
    assert "overwrite its own trace" in capsys.readouterr().err
    assert cli.main(["export", str(source), "--lang", "fr"]) == 2                # argparse's one line


def test_the_command_refuses_a_trace_with_too_many_rounds(chain, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(export, "EXPORT_MAX_ROUNDS", 2)
    source = tmp_path / "run.json"
    source.write_text(chain.to_json(), encoding="utf-8")
    assert cli.main(["export", str(source)]) == 1
    err = capsys.readouterr().err
    assert re.search(r"has \d+ rounds; an exported page holds at most 2", err) and not (tmp_path / "run.html").exists()


# ---------------------------------------------------------------- the page's "Download as HTML"
def test_the_app_offers_a_run_and_a_loaded_trace_as_a_page(chain, tmp_path):
    from specviz.ui.session import AppContext, Run
    from specviz.ui.tabs import generate, trace_files

    source = tmp_path / "run.json"
    source.write_text(chain.to_json(), encoding="utf-8")
    ctx = AppContext(cache=None, lang="es", replay_delay=0)
    replayed = list(trace_files._replay(ctx, Run(uses_models=False), str(source)))
    button = replayed[-1]["download_html"]                       # the loaded trace
    assert button["interactive"] and button["value"].endswith(".html")
    with open(button["value"], encoding="utf-8") as fh:
        assert fh.read() == export.export_html(chain, "es")
    first = button["value"]
    button = generate.after_run(ctx, chain)["download_html"]     # a run, after its event
    assert button["interactive"] and button["value"].endswith(".html") and button["value"] != first
    assert generate.after_run(ctx, None) == {}                   # no run, no page (the button keeps its state)
    too_long = dataclasses.replace(chain, rounds=[dataclasses.replace(chain.rounds[0], index=i)
                                                  for i in range(EXPORT_MAX_ROUNDS + 1)])
    assert ctx.write_html(too_long) is None                      # the button stays off; the replay still runs
