"""The API a program sees (`specviz.ui.api`), called through `gradio_client` against the app served on tiny models.

One set of five endpoints for both languages, settings by name, integers as integers, plain JSON back; every
page event is private, and a refused input comes back as a sentence from the strings table.
"""
from __future__ import annotations

import json
import math
import re
import urllib.request

import pytest

from specviz import theory
from specviz.classroom import whatif
from specviz.limits import APP_MAX_K, MAX_SEED
from specviz.strings import t
from specviz.trace.records import Trace, TraceFormatError

ENDPOINTS = {"/generate", "/replay", "/sweep", "/what_if", "/race"}



@pytest.fixture(scope="module")
def client(app):
    gradio_client = pytest.importorskip("gradio_client")
    return gradio_client.Client(app, verbose=False, download_files=False)


@pytest.fixture(scope="module")
def run(client):
    return client.predict(prompt="the cat sat", k=2, max_new_tokens=12, seed=3, api_name="/generate")


def _refusal(client, api_name: str, **kwargs) -> str:
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as caught:
        client.predict(api_name=api_name, **kwargs)
    return caught.value.message


# ---------------------------------------------------------------- what is listed
def test_the_api_lists_the_five_endpoints_once_and_nothing_of_the_page(app, client):
    listed = client.view_api(print_info=False, return_format="dict")
    assert set(listed["named_endpoints"]) == ENDPOINTS and not listed["unnamed_endpoints"]
    # Undocumented endpoints are callable too: there must be none (examples, page events) besides the five.
    with urllib.request.urlopen(app + "gradio_api/info?all_endpoints=true", timeout=30) as response:
        everything = json.load(response)
    assert set(everything["named_endpoints"]) == ENDPOINTS and not everything["unnamed_endpoints"]


def test_parameters_are_named_and_integers_are_typed_as_integers(client):
    listed = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    types = {p["parameter_name"]: p["type"].get("type") for p in listed["/generate"]["parameters"]}
    assert types["prompt"] == "string"
    assert {types[n] for n in ("k", "max_new_tokens", "seed", "top_k")} == {"integer"}
    assert {types[n] for n in ("temperature", "top_p")} == {"number"}
    assert {p["parameter_name"] for p in listed["/sweep"]["parameters"]} >= {"k_lo", "k_hi", "tokens"}
    assert listed["/generate"]["description"].startswith("Run speculative decoding")


# The public parameters, in order: a program calls them by these names (or by position), so they never change.
PARAMETERS = {"/generate": ["prompt", "k", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "drafter",
                            "adaptive", "raw", "pair", "draft_id", "target_id", "compile", "compare", "lookup_k"],
              "/sweep": ["prompt", "k_lo", "k_hi", "tokens", "temperature", "top_k", "top_p", "seed", "raw", "pair",
                         "draft_id", "target_id"]}


def test_the_parameters_are_the_requests_fields_in_order_with_their_defaults(client):
    import dataclasses

    from specviz.ui import api

    listed = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name, request in (("/generate", api.GenerateRequest), ("/sweep", api.SweepRequest)):
        fields = dataclasses.fields(request)
        assert [p["parameter_name"] for p in listed[name]["parameters"]] == PARAMETERS[name] == [f.name for f in fields]
        assert [p["parameter_default"] if p["parameter_has_default"] else None for p in listed[name]["parameters"]] \
            == [None if f.default is dataclasses.MISSING else f.default for f in fields]


def test_an_endpoint_takes_its_fields_by_position_or_name_and_refuses_others():
    from specviz.ui import api

    seen = []
    endpoint = api.by_fields(lambda r: seen.append(r) or {}, api.SweepRequest)
    endpoint("the cat", 2, k_hi=3)
    assert seen == [api.SweepRequest(prompt="the cat", k_lo=2, k_hi=3)]
    with pytest.raises(TypeError):
        endpoint("the cat", k=2)          # generate's name, not sweep's: refused before anything runs
    assert len(seen) == 1


def test_a_page_event_cannot_be_called_by_a_program(client):
    for name in ("/submitted", "/generate_1", "/tick", "/load_example"):    # /generate_1: the page's own run
        with pytest.raises(ValueError, match="Cannot find a function"):
            client.predict(api_name=name)


# ---------------------------------------------------------------- generate and replay
def test_generate_returns_the_text_the_metrics_and_the_trace(run):
    from tests.browser.tiny_app import VOCAB

    trace = run["trace"]
    emitted = [tok for r in trace["rounds"] for tok in r["emitted"]]
    assert run["text"] == "".join(VOCAB[i] for i in emitted) and run["text"]
    assert trace["output_text"] == run["text"] and trace["format"] == "specviz-trace"
    assert type(trace["k"]) is int and trace["k"] == 2 and trace["seed"] == 3 and trace["max_new_tokens"] == 12
    m = run["metrics"]
    assert type(m["tokens"]) is int and m["tokens"] == len(emitted) == 12
    assert type(m["rounds"]) is int and m["rounds"] == len(trace["rounds"])
    assert 0.0 <= m["acceptance_rate"] <= 1.0 and m["tokens_per_s"] > 0
    assert Trace.from_dict(trace).metrics()["tokens"] == 12        # the trace file format, checked on reading


def test_generate_with_compare_runs_the_target_alone_and_gives_the_speedup(client, run):
    assert run["comparison"] is None                                   # not asked for
    compared = client.predict(prompt="the cat sat", k=2, max_new_tokens=12, seed=3, compare=True,
                              api_name="/generate")
    c = compared["comparison"]
    assert c["greedy"] is True and c["identical"] is True and c["first_difference"] is None   # greedy: the same text
    assert type(c["target_tokens"]) is int and c["target_tokens"] == 12
    assert c["target_tokens_per_s"] > 0
    assert math.isclose(c["speedup"], compared["metrics"]["tokens_per_s"] / c["target_tokens_per_s"], rel_tol=1e-9)


def test_the_same_seed_gives_the_same_trace_tokens(client, run):
    again = client.predict(prompt="the cat sat", k=2, max_new_tokens=12, seed=3, api_name="/generate")
    assert again["text"] == run["text"]
    assert [r["emitted"] for r in again["trace"]["rounds"]] == [r["emitted"] for r in run["trace"]["rounds"]]


def test_replay_of_generates_trace_gives_its_metrics_and_text(client, run):
    for given in (run["trace"], json.dumps(run["trace"])):     # the object, or a trace file's text
        replayed = client.predict(trace=given, api_name="/replay")
        assert replayed["metrics"] == run["metrics"]
        assert replayed["text"] == run["text"]
        assert replayed["rounds"] == run["metrics"]["rounds"] and type(replayed["rounds"]) is int


# ---------------------------------------------------------------- sweep and what-if
def test_sweep_returns_the_measured_numbers_per_k(client):
    result = client.predict(prompt="the cat", k_lo=1, k_hi=2, tokens=4, api_name="/sweep")
    assert [row["k"] for row in result["rows"]] == [1, 2] and all(type(r["k"]) is int for r in result["rows"])
    assert result["target_tokens_per_s"] > 0 and result["best_k"] in (1, 2)
    for row in result["rows"]:
        assert row["tokens_per_s"] > 0 and row["new_tokens"] == 4
        assert math.isclose(row["speedup"], row["tokens_per_s"] / result["target_tokens_per_s"], rel_tol=1e-9)


def test_what_if_gives_the_theorys_numbers(client):
    result = client.predict(alpha=0.78, k=5, c=8 / 70, api_name="/what_if")
    assert type(result["k"]) is int and type(result["best_k"]) is int
    assert math.isclose(result["speedup"], theory.expected_speedup(0.78, 5, 8 / 70))
    assert math.isclose(result["expected_tokens"], theory.expected_tokens_per_round(0.78, 5))
    assert result["ks"] == list(range(1, whatif.K_MAX + 1)) and len(result["speedups"]) == whatif.K_MAX
    assert result["best_k"] == theory.optimal_k(0.78, 8 / 70, whatif.K_MAX)
    assert math.isclose(result["worked_example"]["claimed"], 2.5)


# ---------------------------------------------------------------- refusals: the page's checks, as sentences
def test_generate_refuses_what_the_page_refuses_with_the_pages_sentence(client):
    said = _refusal(client, "/generate", prompt="x", k=APP_MAX_K + 1)
    assert said == t("input.not_whole", name=t("field.k"), lo=1, hi=APP_MAX_K, value=APP_MAX_K + 1)
    assert "temperature" in _refusal(client, "/generate", prompt="x", temperature=5.0).lower()
    assert said == _refusal(client, "/generate", prompt="x", k=2.5)          # not whole: refused, not rounded
    assert _refusal(client, "/generate", prompt="  ") == t("input.no_prompt")
    assert _refusal(client, "/generate", prompt="x", raw="false") == t("api.flag", name="raw", value='"false"')
    assert _refusal(client, "/generate", prompt=12) == t("api.text", name="prompt")
    assert _refusal(client, "/generate", prompt="x", pair=["packaged"]) == t("api.text", name="pair")
    said = _refusal(client, "/generate", prompt="x", seed=2**63)         # the seed echoed exactly
    assert said == t("input.not_whole", name=t("field.seed"), lo=0, hi=MAX_SEED, value=2**63)
    assert "ngram" not in _refusal(client, "/generate", prompt="x", drafter="ngram", adaptive=True)


def test_replay_refuses_what_is_not_a_trace_with_a_sentence(client):
    with pytest.raises(TraceFormatError) as caught:
        Trace.from_json("not json")
    assert _refusal(client, "/replay", trace="not json") == t("replay.unusable", error=caught.value.text("en"))
    assert _refusal(client, "/replay", trace="") == t("api.no_trace")
    broken = _refusal(client, "/replay", trace={"format": "specviz-trace", "version": 1})
    assert broken.startswith(t("replay.unusable", error=""))


def test_what_if_and_sweep_refuse_out_of_range_values(client):
    assert t("whatif.alpha_name") in _refusal(client, "/what_if", alpha=1.5)
    assert t("whatif.k_name") in _refusal(client, "/what_if", alpha=0.5, k=whatif.K_MAX + 1)
    assert t("field.sweep_tokens") in _refusal(client, "/sweep", prompt="x", tokens=10_000)


def test_a_trace_over_the_size_limit_is_refused_before_it_is_read(monkeypatch):
    import gradio as gr

    import specviz.trace.files as files
    from specviz.ui import api

    monkeypatch.setattr(files, "APP_MAX_TRACE_BYTES", 10)   # where the one size check reads it
    with pytest.raises(gr.Error) as caught:
        api.read_trace('{"format": "specviz-trace", "version": 1}')      # 42 bytes: not even parsed
    assert caught.value.message == t("replay.unusable", error=t("input.trace_size", mb="0.0", limit="0"))


# ---------------------------------------------------------------- the draft tree
def test_generate_with_the_tree_drafter_returns_trees_and_replays_them(client):
    run = client.predict(prompt="the cat sat", k=5, max_new_tokens=12, seed=3, drafter="tree", compare=True,
                         api_name="/generate")
    trees = [r.get("tree") for r in run["trace"]["rounds"]]
    assert trees[0] and all(len(tree) <= 5 for tree in trees if tree)
    assert run["comparison"]["identical"] is True                       # greedy: the target's own text
    assert client.predict(trace=run["trace"], api_name="/replay")["text"] == run["text"]
    said = _refusal(client, "/generate", prompt="x", drafter="tree", adaptive=True)
    assert said == t("input.tree_adaptive")
    assert _refusal(client, "/generate", prompt="x", drafter="tree", compile="on") == t("input.tree_compile")


# ---------------------------------------------------------------- the drafter race
RACE_PROMPT = "the cat sat on the mat, the cat sat on the mat"


@pytest.fixture(scope="module")
def race(client):
    return client.predict(prompt=RACE_PROMPT, max_new_tokens=12, k=4, api_name="/race")


def test_the_race_is_documented_with_typed_parameters(client):
    listed = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/race"]
    types = {p["parameter_name"]: p["type"].get("type") for p in listed["parameters"]}
    assert types == {"prompt": "string", "max_new_tokens": "integer", "k": "integer", "pair": "string",
                     "draft_id": "string", "target_id": "string"}
    assert listed["description"].startswith("A drafter race on one prompt")


def test_the_race_returns_every_lane_as_plain_numbers_and_tokens_with_their_source(race):
    from specviz.classroom import race as cr
    from tests.browser.tiny_app import VOCAB

    assert race["k"] == 4 and race["max_new_tokens"] == 12 and type(race["prompt_tokens"]) is int
    lanes = {lane["drafter"]: lane for lane in race["lanes"]}
    assert [lane["drafter"] for lane in race["lanes"]] == list(cr.LANES)
    reference = lanes["target"]
    ids = [tok["id"] for tok in reference["tokens"]]
    assert len(ids) == 12 and reference["speedup"] is None and reference["lookup_share"] is None
    assert reference["tau"] == 1.0 and reference["acceptance_rate"] is None          # nothing drafted: null, not NaN
    for name, lane in lanes.items():
        tokens = lane["tokens"]
        assert [tok["id"] for tok in tokens] == ids and lane["identical"] is True   # greedy: the target's own tokens
        assert lane["first_difference"] is None and type(lane["tokens_out"]) is int and lane["tokens_out"] == 12
        assert all(tok["text"] == VOCAB[tok["id"]] for tok in tokens)               # the text as it is: JSON
        assert lane["tokens_per_s"] > 0 and math.isclose(lane["tau"], 12 / lane["rounds"])
        sources = {tok["source"] for tok in tokens}
        allowed = {"target": {"target"}, "model": {"model", "target"}, "tree": {"model", "target"},
                   "ngram": {"ngram", "target"}, "hybrid": {"model", "ngram", "target"}}[name]
        assert sources <= allowed, (name, sources)
        if name == "target":
            continue
        assert math.isclose(lane["speedup"], lane["tokens_per_s"] / reference["tokens_per_s"], rel_tol=1e-9)
        assert math.isclose(lane["acceptance_rate"], lane["accepted"] / lane["drafted"])
        drafted_kept = sum(tok["source"] != "target" for tok in tokens)
        assert lane["accepted"] == drafted_kept                     # every accepted draft is shown as its drafter's
        assert math.isclose(lane["lookup_share"], sum(tok["source"] == "ngram" for tok in tokens) / 12)
    assert lanes["ngram"]["lookup_share"] > 0 and race["identical"] is True   # the repeated prompt: lookup finds it


def test_the_race_is_the_classrooms_race(race):
    """The same lanes as `specviz.classroom.race` gives on the same tiny pair (greedy: the same tokens and sources)."""
    from specviz.classroom import race as cr
    from tests.browser.tiny_app import TinyPair

    pair = TinyPair()
    lanes = cr.run_race(pair, pair.encode_chat(RACE_PROMPT), 4, 12)
    for mine, theirs in zip(lanes, race["lanes"]):
        assert [(p.token_id, p.source) for p in mine.pieces] == [(x["id"], x["source"]) for x in theirs["tokens"]]
        assert (mine.rounds, mine.drafted, mine.accepted) == (theirs["rounds"], theirs["drafted"], theirs["accepted"])


def test_a_lane_that_differs_is_flagged_with_its_first_differing_token():
    """The identical flag can fail: a lane whose fourth token differs says so, and so does the race."""
    from specviz.classroom import race as cr
    from specviz.ui import api_race

    def lane(name, ids, source):
        return cr.Lane(name, [cr.Piece(i, source) for i in ids], rounds=len(ids), seconds=1.0)

    lanes = [lane("target", [1, 2, 3, 4, 5], "target"), lane("model", [1, 2, 3, 9, 5], "model"),
             lane("ngram", [1, 2, 3, 4], "ngram")]
    out = api_race.race_json(lanes, lambda ids: str(ids), 4, 5, 7)
    assert [(x["identical"], x["first_difference"]) for x in out["lanes"]] == [(True, None), (False, 3), (False, 4)]
    assert out["identical"] is False


def test_the_race_refuses_out_of_range_values_with_the_pages_sentence_never_clamps(client):
    from specviz.classroom.race import MAX_RACE_K
    from specviz.limits import APP_MAX_RACE_PROMPT_CHARS, APP_MAX_RACE_TOKENS

    tokens = t("input.not_whole", name=t("race.tokens"), lo=1, hi=APP_MAX_RACE_TOKENS)
    for bad in (0, APP_MAX_RACE_TOKENS + 1, 2.5):
        assert _refusal(client, "/race", prompt="x", max_new_tokens=bad) == tokens
    assert _refusal(client, "/race", prompt="x", k=MAX_RACE_K + 1) == t("input.not_whole", name=t("field.k"), lo=1,
                                                                          hi=MAX_RACE_K)
    assert _refusal(client, "/race", prompt="\u200b ") == t("input.no_prompt")
    long = "x" * (APP_MAX_RACE_PROMPT_CHARS + 1)
    assert _refusal(client, "/race", prompt=long) == t("input.prompt_chars", n=len(long), limit=APP_MAX_RACE_PROMPT_CHARS)
    assert _refusal(client, "/race", prompt=12) == t("api.text", name="prompt")
    assert _refusal(client, "/race", prompt="x", pair="nope") == t("input.pair", value="nope")


# ---------------------------------------------------------------- the HTTP edge: a body the routes cannot use
def _post(app, path: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(app + path, data=body, headers={"Content-Type": "application/json"},
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def _call(app, name: str, data) -> str:
    """POST /gradio_api/call/<name> as curl would (no client), then read its event stream: the raw text."""
    status, answer = _post(app, f"gradio_api/call/{name}", json.dumps({"data": data}).encode())
    assert status == 200, answer
    with urllib.request.urlopen(f"{app}gradio_api/call/{name}/{answer['event_id']}", timeout=60) as response:
        return response.read().decode()


GENERATE = PARAMETERS["/generate"]


def test_a_call_with_too_few_or_too_many_values_gets_one_sentence_naming_the_parameters(app, capfd):
    for data in (["Hi"], ["Hi", 2], ["Hi", 2, 12, 0.0, 0, 1.0, 0, "model", False, False, "packaged", "", "", "auto",
                                    False, 0, "one too many"]):
        stream = _call(app, "generate", data)
        event, payload = re.match(r"event: (\w+)\ndata: (.*)\n", stream).groups()
        said = t("api.arguments", endpoint="generate", n=len(GENERATE), names=", ".join(GENERATE), got=len(data))
        assert event == "error" and json.loads(payload)["error"] == said, stream
        assert "prompt, k, max_new_tokens" in said and said.count(".") == 1           # one sentence
    status, answer = _post(app, "gradio_api/run/what_if", json.dumps({"data": [0.5]}).encode())
    assert answer["error"] == t("api.arguments", endpoint="what_if", n=3, names="alpha, k, c", got=1)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "didn't receive enough input values" not in out + err
    assert "event: complete" in _call(app, "what_if", [0.78, 5, 8 / 70])                # the right count runs


@pytest.mark.parametrize("body", [b'{"data": "Hi"}', b"not json", b'{"prompt": "Hi"}', b"[1, 2]", b""],
                         ids=["data not a list", "not json", "no data", "not an object", "empty"])
def test_a_malformed_body_gets_a_json_sentence_not_pydantics_bare_422(app, body):
    status, answer = _post(app, "gradio_api/call/generate", body)
    assert status == 422 and set(answer) == {"error"}
    assert answer["error"] == t("api.body_for", endpoint="generate", n=len(GENERATE), names=", ".join(GENERATE))
    status, answer = _post(app, "gradio_api/queue/join", body)          # no endpoint named: the general sentence
    assert status == 422 and answer == {"error": t("api.body")}


def test_a_call_to_an_endpoint_that_does_not_exist_is_a_404_sentence_not_a_500_traceback(app, capfd):
    for path in ("gradio_api/call/nope", "gradio_api/run/nope"):
        status, answer = _post(app, path, json.dumps({"data": []}).encode())
        assert status == 404 and set(answer) == {"error"}, (status, answer)
        assert "generate, race, replay, sweep, what_if" in answer["error"] and "Traceback" not in answer["error"]
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "FnIndexInferError" not in out + err
