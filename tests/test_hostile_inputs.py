"""Hostile input, without a browser: every field, trace file and loading failure gets one sentence in
the page's language; no Python words (exception text, code names, rounded echoes), no English on the Spanish page,
no markup that could run. The browser tests (tests/browser/) check a few of these end to end."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from specviz.errors import ModelLoadError, StepMessage, step
from specviz.limits import APP_MAX_K, MAX_SEED
from specviz.strings import LANGUAGES, placeholders, t, table
from specviz.ui import inputs, session, waiting
from specviz.ui.inputs import CUSTOM, PACKAGED, InputError
from specviz.ui.session import AppContext, PairCache, Run
from specviz.ui.tabs import classroom, classroom_lab, trace_files
from specviz.viz.format import ordinal
from specviz.viz.html import status_html

ROOT = Path(__file__).resolve().parents[1]

# What Python says when it speaks for itself: exception names and texts, reprs, rounded floats, snake_case names.
# A whole number echoed as a float ("2.0") is Python's word; a measured rate that happens to be round
# ("67.0 tokens/s") is not.
PYTHON = re.compile(r"Traceback|Error\b|Exception|Expecting value|codec|\(char \d+\)|line \d+ column \d+|\bNone\b|"
                    r"\bnan\b|\binf\b|e\+\d\d|9223372036854776000|(?<![\d.])\d+\.0\b(?!\s*tokens/s)|'[^']*'|\b[a-z]+_[a-z_]+\b")


def english_fragments() -> set[str]:
    """The English table's own words (the parts between placeholders, 12 characters or more) that no Spanish text
    uses: none of them may reach a Spanish page."""
    es_all = " ".join(table("es").values())
    found = set()
    for key, text in table("en").items():
        if table("es").get(key) == text:
            continue
        for part in re.split(r"\{[^}]*\}", text):
            part = part.strip(" .,:;()“”\n")
            if len(part) >= 12 and part not in es_all:
                found.add(part)
    return found


ENGLISH = english_fragments()


def assert_sentence(message: str, lang: str):
    """One sentence for a person: no Python, and in the page's language."""
    assert message and "\n" not in message and len(message) < 400, message
    assert not PYTHON.search(message), (lang, message)
    if lang == "es":
        left = [part for part in ENGLISH if part in message]
        assert not left, (message, left)


def form(**over):
    values = dict(prompt="hi", raw=False, k=4, adaptive=False, temperature=0.0, top_k=0, top_p=1.0, max_new=16,
                  seed=0, pair=PACKAGED, draft_id="", target_id="", compare_switch=True, drafter="model",
                  compile="auto")
    values.update(over)
    return values


def sweep_form(**over):
    values = dict(prompt="hi", raw=False, temperature=0.0, top_k=0, top_p=1.0, seed=0, pair=PACKAGED, draft_id="",
                  target_id="", k_lo=1, k_hi=4, sweep_tokens=16)
    values.update(over)
    return values


# ---------------------------------------------------------------- every numeric field
HOSTILE_NUMBERS = [float("nan"), float("inf"), float("-inf"), 1e308, 10**30, 2**63, -1, -5.5, "abc", "", None, "1e99999",
                   "nan", "0x10", [], True]
RUN_NUMBERS = ("k", "max_new", "temperature", "top_k", "top_p", "seed")
SWEEP_NUMBERS = ("k_lo", "k_hi", "sweep_tokens", "seed", "temperature", "top_p", "top_k")


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("value", HOSTILE_NUMBERS, ids=repr)
def test_every_numeric_field_refuses_hostile_values_with_a_sentence(value, lang):
    for name in RUN_NUMBERS:
        with pytest.raises(InputError) as e:
            inputs.run_settings(form(**{name: value}), lang)
        assert_sentence(str(e.value), lang)
        assert t(f"field.{name}", lang) in str(e.value)          # the field as the page labels it
        assert inputs.field_errors(form(**{name: value}), lang)[name] == str(e.value)   # the same beside the box
    for name in SWEEP_NUMBERS:
        with pytest.raises(InputError) as e:
            inputs.sweep_settings(sweep_form(**{name: value}), lang)
        assert_sentence(str(e.value), lang)


def test_nan_and_infinity_are_never_replaced():
    """The issue saw temperature `nan` run as 0: every finite-number check refuses it instead."""
    for value in (float("nan"), "nan", "NaN", float("inf"), "-inf", "Infinity"):
        with pytest.raises(InputError):
            inputs.temperature(value)
        with pytest.raises(InputError):
            inputs.number_between(value, "whatif.alpha_name", 0, 1)
        with pytest.raises(InputError):
            inputs.whole_number(value, "field.seed", 0, MAX_SEED)


def test_minus_zero_is_zero():
    s = inputs.run_settings(form(temperature=-0.0, seed=-0.0, top_k="-0"))
    assert (s.sampling.temperature, s.seed, s.sampling.top_k) == (0.0, 0, 0)


def test_seeds_are_exact_integers_or_refused():
    assert inputs.run_settings(form(seed=MAX_SEED)).seed == MAX_SEED
    assert inputs.run_settings(form(seed=str(MAX_SEED))).seed == MAX_SEED
    assert inputs.run_settings(form(seed=float(MAX_SEED))).seed == MAX_SEED
    for lang in LANGUAGES:
        for seed in (2**63, float(2**63), str(2**63), 2**63 + 1, MAX_SEED + 1, -1, "2147483647.5"):
            with pytest.raises(InputError) as e:
                inputs.run_settings(form(seed=seed), lang)
            assert_sentence(str(e.value), lang)
            assert str(MAX_SEED) in str(e.value) and "922337" not in str(e.value)   # the limit, never a rounded echo


@pytest.mark.parametrize("lang", LANGUAGES)
def test_classroom_numbers_refuse_hostile_values(lang):
    ctx = AppContext(cache=None, lang=lang)
    for value in (float("nan"), float("inf"), -1, 2**63, "x", None):
        with pytest.raises(InputError) as e:
            classroom_lab.lab_settings("tiny", "real", value, 1000, 0, lang)
        assert_sentence(str(e.value), lang)
        with pytest.raises(InputError) as e:
            classroom_lab.lab_settings("tiny", "real", 0.6, value, 0, lang)
        assert_sentence(str(e.value), lang)
        with pytest.raises(InputError) as e:
            classroom_lab.lab_settings("tiny", "real", 0.6, 1000, value, lang)
        assert_sentence(str(e.value), lang)
        out = classroom.what_if(ctx, value, 5, 0.1, None, None, None)
        assert "data-kind=\"error\"" in out["wi_text"]
        assert_sentence(re.sub(r"<[^>]+>", "", out["wi_text"]).replace("✗", "").strip(), lang)


# ---------------------------------------------------------------- text fields and choices
@pytest.mark.parametrize("lang", LANGUAGES)
def test_prompts_and_choices_get_sentences(lang):
    cases = [dict(prompt=""), dict(prompt="   \n\t "), dict(prompt="x" * 8001), dict(prompt=None),
             dict(drafter="evil"), dict(drafter="<script>alert(1)</script>"), dict(compile="sometimes"),
             dict(pair="no-such-pair"), dict(pair="<img src=x onerror=alert(1)>"),
             dict(pair=CUSTOM, draft_id="<script>alert(1)</script>", target_id="a/b"),
             dict(pair=CUSTOM, draft_id="a/b", target_id="javascript:alert(1)"),
             dict(pair=CUSTOM, draft_id="", target_id="")]
    for over in cases:
        with pytest.raises(InputError) as e:
            inputs.run_settings(form(**over), lang)
        message = str(e.value)
        assert_sentence(message.replace("<script>alert(1)</script>", "").replace("<img src=x onerror=alert(1)>", ""),
                        lang)
        assert "<script" not in status_html(message, "error") and "<img" not in status_html(message, "error")
    assert "pair" in inputs.field_errors(form(pair="no-such-pair"), lang)


def test_a_script_in_the_prompt_is_text_everywhere_it_is_shown():
    from specviz.viz import html as vh

    prompt = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    assert inputs.run_settings(form(prompt=prompt)).prompt == prompt      # a prompt may say anything...
    shown = vh.trace_summary_html(prompt, "<b>d</b>", "<i>t</i>", 3, {"temperature": 0.0}, "", lang="es")
    assert "<script" not in shown and "<img" not in shown and "<b>d" not in shown   # ...and is shown as text


# ---------------------------------------------------------------- trace files
def _replay(tmp_path, name: str, data: bytes, lang: str, **ctx_over) -> list[str]:
    path = tmp_path / name
    path.write_bytes(data)
    ctx = AppContext(cache=None, lang=lang, replay_delay=0, **ctx_over)
    return [u["status"] for u in trace_files._replay(ctx, Run(uses_models=False), str(path)) if "status" in u]


def _valid_trace() -> dict:
    from specviz import SamplingConfig, Trace

    return json.loads(Trace(prompt="p", prompt_ids=[1], draft_model="d", target_model="t", k=3, max_new_tokens=8,
                            seed=1, sampling=SamplingConfig(1.0).to_dict(), rounds=[]).to_json())


BAD_TRACES = {
    "empty.json": b"",
    "spaces.json": b"  \n ",
    "notes.json": b"hello, this is not JSON",
    "photo.json": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff\xfe",
    "latin1.json": '{"prompt": "café"}'.encode("latin-1"),
    "cut.json": json.dumps(_valid_trace())[:40].encode(),
    "trailing.json": b'{"a": 1} and more',
    "array.json": b"[1, 2, 3]",
    "other.json": b'{"format": "something-else", "version": 1}',
    "future.json": json.dumps({**_valid_trace(), "version": 99}).encode(),
    "deep.json": b"[" * 5000 + b"]" * 5000,
    "schema.json": json.dumps({**_valid_trace(), "k": "<script>alert(1)</script>"}).encode(),
    "notes.txt": b"{}",
}


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", list(BAD_TRACES))
def test_unusable_trace_files_get_a_sentence(tmp_path, name, lang):
    shown = _replay(tmp_path, name, BAD_TRACES[name], lang)
    assert len(shown) == 1 and 'data-kind="error"' in shown[0], shown
    assert "<script" not in shown[0]
    text = re.sub(r"<[^>]+>", "", shown[0]).replace("✗", "").strip()
    # a trace's own field names (k, rounds, "format") may be named: they are in the file the user chose
    assert not re.search(r"Expecting|codec|char \d|Error|Traceback|position \d+\b", text), text
    if lang == "es":
        assert not [part for part in ENGLISH if part in text], text


def test_trace_file_failures_name_what_is_wrong(tmp_path):
    said = {name: re.sub(r"<[^>]+>", "", _replay(tmp_path, name, data, "en")[0]) for name, data in BAD_TRACES.items()}
    assert "the file is empty" in said["empty.json"] and "the file is empty" in said["spaces.json"]
    assert "not valid JSON: it goes wrong at line 1, column 1" in said["notes.json"]
    assert "the file is not text" in said["photo.json"] and "the file is not text" in said["latin1.json"]
    assert "cut short" in said["cut.json"]
    assert "not a specviz trace" in said["array.json"] and "not a specviz trace" in said["other.json"]
    assert "unsupported trace version 99" in said["future.json"]
    assert "nested more than" in said["deep.json"]


def test_an_oversized_trace_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import specviz.trace.files as files   # where the size is checked (the upload's and the exporter's one check)

    monkeypatch.setattr(files, "APP_MAX_TRACE_BYTES", 100)
    for lang in LANGUAGES:
        shown = _replay(tmp_path, "big.json", b" " * 1000 + json.dumps(_valid_trace()).encode(), lang)
        assert 'data-kind="error"' in shown[0] and ("limit is 0 MB" in shown[0] or "límite" in shown[0])


# ---------------------------------------------------------------- errors that are not the user's input
@pytest.mark.parametrize("lang", LANGUAGES)
def test_error_message_never_shows_exception_text(lang):
    for error in (RuntimeError("CUDA error: device-side assert triggered"), KeyError("input_ids"),
                  ValueError("Expecting value: line 1 column 1 (char 0)"), ZeroDivisionError("division by zero"),
                  UnicodeDecodeError("utf-8", b"\x89", 0, 1, "invalid start byte"),
                  OSError(2, "No such file or directory"), ModelLoadError("an English-only message")):
        message = inputs.error_message(error, lang)
        assert_sentence(message, lang)
        assert str(error) not in message or lang == "en" and isinstance(error, ModelLoadError)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_keyed_load_errors_speak_the_pages_language(lang):
    error = ModelLoadError(key="load.not_found", role=__import__("specviz.errors", fromlist=["role"]).role("draft"),
                           repo="nobody/nothing")
    assert str(error).startswith("draft model nobody/nothing was not found")      # the command line's English
    message = inputs.error_message(error, lang)
    assert "nobody/nothing" in message and message[0].isupper()
    if lang == "es":
        assert "borrador" in message and "not found" not in message


def test_load_errors_pickle_with_their_key():
    import pickle

    from specviz.errors import role

    error = pickle.loads(pickle.dumps(ModelLoadError(key="load.gated", role=role("target"), repo="a/b")))
    assert error.text("es") == ModelLoadError(key="load.gated", role=role("target"), repo="a/b").text("es")
    assert str(pickle.loads(pickle.dumps(ModelLoadError("plain")))) == "plain"


# ---------------------------------------------------------------- loading in the page's language
def test_every_loader_progress_message_is_keyed():
    """models/loading.py and models/packaged.py report progress with `step(key)`, never a literal English text."""
    for name in ("models/loading.py", "models/packaged.py"):
        tree = ast.parse((ROOT / "specviz" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("report", "stage", "progress") \
                    and len(node.args) >= 2:
                assert not isinstance(node.args[1], (ast.Constant, ast.JoinedStr)), (name, ast.unparse(node))


def test_the_loaders_progress_reaches_the_page_in_its_language():
    def loader(draft, target, progress):
        progress(0.1, step("load.draft_named", name="a/b"))
        progress(0.5, "an unkeyed message")
        return "pair"

    for lang, first, second in (("en", "loading draft model a/b", "an unkeyed message"),
                                ("es", "cargando el modelo borrador a/b", "…")):
        seen = []
        ctx = AppContext(cache=PairCache(loader), lang=lang)
        assert ctx.load((None, None), lambda f, m: seen.append(m)) == "pair"
        assert seen == [first, second]
    message = step("load.assembling_parts", name="m", n=1)
    assert isinstance(message, StepMessage) and str(message) == "assembling and verifying m (1 part)"


def test_a_failed_load_is_said_in_the_pages_language():
    from specviz.errors import role

    def loader(draft, target, progress):
        progress(0.2, step("load.checking_ids"))
        raise ModelLoadError(key="load.not_found", role=role("target"), repo="x/y")

    ctx = AppContext(cache=PairCache(loader), lang="es", tick_s=0.01)
    lines = [u["status"] for u in waiting.load(ctx, Run(), ("a/b", "x/y"), lambda m, kind: {"status": (m, kind)})]
    assert lines[-1][1] == "error" and lines[-1][0].startswith("El modelo objetivo x/y no se encontró")
    assert all("model" not in m or "modelo" in m for m, _ in lines)


# ---------------------------------------------------------------- counts and places in words
def test_every_count_in_the_tables_agrees_with_its_noun():
    nouns = r"(rounds?|tokens?|drafts?|samples?|positions?|characters?|parts?|rondas?|muestras?|borradores?|" \
            r"posiciones?|caracteres?|partes?)\b"
    bare = re.compile(r"\{(\w+)\} " + nouns + r"(?!/)")     # "{tps} tokens/s" is a rate, not a count
    constants = {"limit"}       # bounds from specviz.limits, never 1
    for lang in LANGUAGES:
        for key, text in table(lang).items():
            for name, _ in bare.findall(text):
                assert name in constants or key.startswith("whatif."), (lang, key, text)   # whatif: decimals
            if ":" in text and "|" in text:
                one = t(key, lang, **{n: 50 if n in constants else 1 for n in placeholders(text)})
                assert not re.search(r"(?<!\+ )\b1 " + nouns.replace("?", "") + r"(?!/)", one.replace("1 of 1", "")), (lang, key, one)


def test_plural_forms_in_both_languages():
    assert t("status.done", "en", tokens=1, rounds=1, tps="2", acceptance="50%", tau="1").startswith(
        "Done: 1 token in 1 round,")
    assert t("status.done", "en", tokens=2, rounds=0, tps="2", acceptance="50%", tau="1").startswith(
        "Done: 2 tokens in 0 rounds,")
    assert t("status.stopped_after", "es", rounds=1, tokens=3).startswith("Detenido tras 1 ronda (3 tokens)")
    assert t("replay.stopped", "en", n=1, total=1) == "Replay stopped after 1 of 1 round."


def test_ordinals_and_the_queue_in_words(monkeypatch):
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th"]
    assert ordinal(2, "es") == "2.º"
    monkeypatch.setattr(session, "_DURATIONS", session.deque(maxlen=8))
    assert waiting.queued_line(1, 1, "en").startswith("2nd in line. ")           # no run has ended: no time said
    session._DURATIONS.extend([18.0, 20.0, 90.0])
    assert waiting.queued_line(1, 1, "en").startswith("2nd in line, about 40 s.")
    assert waiting.queued_line(1, 1, "es").startswith("2.º en la cola, unos 40 s.")
    assert waiting.queued_line(0, 2, "en").startswith("1st in line, about 20 s.")
    for lang in LANGUAGES:
        assert_sentence(waiting.queued_line(3, 1, lang), lang)


def test_a_finished_run_counts_towards_the_estimate(monkeypatch):
    monkeypatch.setattr(session, "_DURATIONS", session.deque(maxlen=8))
    run = Run()
    run.started -= 30
    session.end_run(run)
    session.end_run(run)                      # ending twice counts once
    session.end_run(Run(uses_models=False))   # a replay uses no model: not a wait for anyone
    assert list(session._DURATIONS) == [pytest.approx(30, abs=1)]
    assert session.expected_wait(2, 1) == pytest.approx(90, abs=3)


def test_k_bounds_named_in_messages():
    with pytest.raises(InputError, match=f"K must be a whole number between 1 and {APP_MAX_K}."):
        inputs.run_settings(form(k=0))


# ---------------------------------------------------------------- refused, not clamped, everywhere
from specviz.classroom import lessons  # noqa: E402 - this part's own imports, kept beside its tests
from specviz.classroom.state import StepState  # noqa: E402
from specviz.ui import classroom_inputs  # noqa: E402

ZERO_WIDTH = ["\u200b", "\u200b\u200c\u200d", "\ufeff", " \u2060\u200e ", "\u3164", "\u200b\n\t\u200b"]


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("✗", "").replace("⚠", "").strip()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_cuda_only_compile_modes_are_refused_without_a_gpu_and_nothing_runs(lang, monkeypatch):
    monkeypatch.setattr(inputs, "gpu_here", lambda: False)
    for mode in ("on", "graphs"):
        with pytest.raises(InputError) as e:
            inputs.run_settings(form(compile=mode), lang)
        assert str(e.value) == t("input.compile_cpu", lang)
        assert_sentence(str(e.value), lang)
        assert inputs.field_errors(form(compile=mode), lang) == {"compile": str(e.value)}
    assert inputs.run_settings(form(compile="auto"), lang).compile == "auto"      # what a CPU can run: accepted
    assert inputs.run_settings(form(compile="off"), lang).compile == "off"
    monkeypatch.setattr(inputs, "gpu_here", lambda: True)
    assert inputs.run_settings(form(compile="graphs"), lang).compile == "graphs"  # a GPU here: offered


@pytest.mark.parametrize("value", ["1e-400", "1E-400", "0.005", 1e-30, "4.9e-324", 5e-324], ids=repr)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_temperature_that_rounds_to_zero_is_refused_not_run_greedy(value, lang):
    said = t("input.temperature_low", lang, lo=0.01, hi=2)
    with pytest.raises(InputError, match=re.escape(said)):
        inputs.run_settings(form(temperature=value), lang)
    with pytest.raises(InputError, match=re.escape(said)):
        inputs.sweep_settings(sweep_form(temperature=value), lang)
    assert inputs.field_errors(form(temperature=value), lang) == {"temperature": said}
    assert_sentence(said, lang)
    assert inputs.run_settings(form(temperature="0"), lang).sampling.greedy            # 0 itself is greedy
    assert inputs.run_settings(form(temperature=0.01), lang).sampling.temperature == 0.01


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_sweep_range_the_wrong_way_round_is_refused(lang):
    said = t("input.k_order", lang, lo=6, hi=2)
    with pytest.raises(InputError) as e:
        inputs.sweep_settings(sweep_form(k_lo=6, k_hi=2), lang)
    assert str(e.value) == said and "6" in said and "2" in said
    assert_sentence(said, lang)
    assert inputs.field_errors(sweep_form(k_lo=6, k_hi=2), lang) == {"k_lo": said}
    assert inputs.sweep_settings(sweep_form(k_lo=2, k_hi=6), lang).ks == [2, 3, 4, 5, 6]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("prompt", ZERO_WIDTH, ids=repr)
def test_a_prompt_that_shows_nothing_is_refused_like_a_blank_one(prompt, lang):
    said = t("input.no_prompt", lang)
    for check in (lambda: inputs.run_settings(form(prompt=prompt), lang),
                  lambda: inputs.sweep_settings(sweep_form(prompt=prompt), lang),
                  lambda: classroom_inputs.lab_settings("tiny", "real", 0.6, 1000, 0, lang, prompt=prompt)):
        with pytest.raises(InputError, match=re.escape(said)):
            check()
    assert inputs.check_prompt("\u200bx", lang) == "\u200bx"        # a visible character among them: a prompt


@pytest.mark.parametrize("lang", LANGUAGES)
def test_what_if_refuses_every_value_outside_its_range(lang):
    ctx = AppContext(cache=None, lang=lang)
    for alpha, k, c, name in ((1.5, 5, 0.1, "whatif.alpha_name"), (0.7, 40, 0.1, "whatif.k_name"),
                              (0.7, 5, -2, "whatif.c_name"), (0.7, 2.5, 0.1, "whatif.k_name"),
                              (-0.1, 5, 0.1, "whatif.alpha_name"), (0.7, 0, 0.1, "whatif.k_name"),
                              (0.7, 5, 2.5, "whatif.c_name")):
        out = classroom.what_if(ctx, alpha, k, c, None, None, None)
        said = _text(out["wi_text"])
        assert 'data-kind="error"' in out["wi_text"] and said.startswith(t(name, lang)), said
        assert_sentence(said, lang)
        assert out["wi_plot"] == {"__type__": "update"}          # the curves stay as they were: nothing computed
        with pytest.raises(InputError):
            classroom_inputs.whatif_settings(alpha, k, c, lang)


def test_the_api_refuses_what_the_page_refuses(monkeypatch):
    import gradio as gr

    from specviz.ui import api

    monkeypatch.setattr(inputs, "gpu_here", lambda: False)

    endpoints = api.Endpoints(AppContext(cache=None))
    # Called as Gradio calls them: one argument per field of their request.
    generate, sweep = (api.by_fields(endpoints.generate, api.GenerateRequest),
                       api.by_fields(endpoints.sweep, api.SweepRequest))
    for alpha, k, c, name in ((1.5, 5, 0.1, "whatif.alpha_name"), (0.7, 40, 0.1, "whatif.k_name"),
                              (0.7, 5, -2, "whatif.c_name")):
        with pytest.raises(gr.Error) as e:
            endpoints.what_if(alpha, k, c)
        assert e.value.message.startswith(t(name)) and e.value.print_exception is False
    with pytest.raises(gr.Error) as e:
        sweep("the cat", k_lo=6, k_hi=2)
    assert e.value.message == t("input.k_order", lo=6, hi=2)
    with pytest.raises(gr.Error) as e:
        generate("the cat", temperature="1e-400")
    assert e.value.message == t("input.temperature_low", lo=0.01, hi=2)
    for mode in ("on", "graphs"):
        with pytest.raises(gr.Error) as e:
            generate("the cat", compile=mode)
        assert e.value.message == t("input.compile_cpu")
    with pytest.raises(gr.Error) as e:
        generate("\u200b\u200b")
    assert e.value.message == t("input.no_prompt")


def _race_said(key: str, **values) -> str:
    from specviz.limits import APP_MAX_RACE_TOKENS

    names = {"race.tokens": ("race.tokens", APP_MAX_RACE_TOKENS), "field.k": ("field.k", 16)}
    if key in names:
        name, hi = names[key]
        return t("input.not_whole", name=t(name), lo=1, hi=hi)
    return t(key, **values)


RACE_REFUSALS = [
    (dict(max_new_tokens=0), "race.tokens", {}), (dict(max_new_tokens=129), "race.tokens", {}),
    (dict(max_new_tokens=2.5), "race.tokens", {}), (dict(k=0), "field.k", {}), (dict(k=17), "field.k", {}),
    (dict(prompt="\u200b\u200b"), "input.no_prompt", {}), (dict(prompt=""), "input.no_prompt", {}),
    (dict(prompt="x" * 2001), "input.prompt_chars", dict(n=2001, limit=2000)),
    (dict(prompt=["x"]), "api.text", dict(name="prompt")), (dict(draft_id=7), "api.text", dict(name="draft_id")),
    (dict(pair="<img src=x onerror=alert(1)>"), "input.pair", dict(value="<img src=x onerror=alert(1)>")),
    (dict(pair="custom"), "input.custom_pair", {})]


@pytest.mark.parametrize("over, key, values", RACE_REFUSALS, ids=repr)
def test_the_race_endpoint_refuses_with_a_sentence_and_loads_nothing(over, key, values):
    """The API's race: every bad value the page's sentence, never clamped, and no model loaded."""
    import gradio as gr

    from specviz.ui import api_race

    loads = []
    ctx = AppContext(cache=PairCache(lambda *a: loads.append(a)))
    arguments = dict(prompt="the cat", max_new_tokens=8, k=2, pair="packaged", draft_id="", target_id="")
    with pytest.raises(gr.Error) as e:
        api_race.RaceEndpoint(ctx).race(**{**arguments, **over})
    assert e.value.message == _race_said(key, **values) and e.value.print_exception is False
    if key not in ("input.pair", "api.text"):    # these echo the caller's own words: its value, its parameter name
        assert_sentence(e.value.message, "en")
    assert loads == []


@pytest.mark.parametrize("over", [dict(max_new_tokens="1e-400"), dict(max_new_tokens=True), dict(k=float("nan")),
                                  dict(k=None)], ids=repr)
def test_the_race_endpoint_refuses_what_is_not_a_whole_number(over):
    import gradio as gr

    from specviz.ui import api_race

    with pytest.raises(gr.Error) as e:
        api_race.RaceEndpoint(AppContext(cache=None)).race("the cat", **{"max_new_tokens": 8, "k": 2, **over})
    assert_sentence(e.value.message, "en")
    assert e.value.message.startswith(t("race.tokens" if "max_new_tokens" in over else "field.k"))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_lab_refuses_its_prompt_over_the_limit_never_cuts_it(lang):
    from specviz.limits import APP_MAX_LAB_PROMPT_CHARS

    prompt = "x" * (APP_MAX_LAB_PROMPT_CHARS + 100)
    with pytest.raises(InputError) as e:
        classroom_inputs.lab_settings("tiny", "real", 0.6, 1000, 0, lang, prompt=prompt)
    assert str(e.value) == t("input.prompt_chars", lang, n=len(prompt), limit=APP_MAX_LAB_PROMPT_CHARS)
    assert_sentence(str(e.value), lang)
    request = type("R", (), {"session_hash": f"lab-long-{lang}"})()
    ctx = AppContext(cache=None, lang=lang)
    form = dict(zip(classroom_lab.LAB_FORM, ("tiny", "real", prompt, 0.6, 1000, 0, "packaged", "", "")))
    outs = list(classroom_lab.lab_run(ctx, form, request))
    assert len(outs) == 1 and set(outs[0]) == {"lab_stats"} and str(e.value) in outs[0]["lab_stats"]
    exact = "y" * APP_MAX_LAB_PROMPT_CHARS
    assert classroom_inputs.lab_settings("tiny", "real", 0.6, 1000, 0, lang, prompt=exact)[-1] == exact


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_labs_numbers_are_refused_not_clamped(lang):
    for temp, n, seed, name in ((2.5, 1000, 0, "lab.temperature"), (0.01, 1000, 0, "lab.temperature"),
                                ("1e-400", 1000, 0, "lab.temperature"), (0.6, 50, 0, "lab.n"),
                                (0.6, 99999, 0, "lab.n"), (0.6, 1000.5, 0, "lab.n"), (0.6, 1000, -1, "field.seed"),
                                (0.6, 1000, 2.5, "field.seed")):
        with pytest.raises(InputError) as e:
            classroom_lab.lab_settings("tiny", "real", temp, n, seed, lang)
        assert str(e.value).startswith(t(name, lang)), str(e.value)
        assert "0.05" in str(e.value) or name != "lab.temperature"          # the range it takes, said
        assert_sentence(str(e.value), lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_step_views_round_and_seed_are_refused_and_nothing_moves(lang):
    ctx = AppContext(cache=None, lang=lang)
    _, trace = lessons.load("bonus-round")
    state = StepState(round=1, stop=2)
    n = len(trace.rounds)
    for number in (0, 2.5, -1, n + 1, "abc", None, float("nan"), 10**30):
        out = classroom.go_round(ctx, trace, state, classroom.SEED, False, number)
        said = _text(out["cls_info"])
        assert said == t("input.not_whole", lang, name=t("cls.round", lang), lo=1, hi=n) or \
            said == t("input.not_a_number", lang, name=t("cls.round", lang), lo=1, hi=n), said
        assert out["cls_cur"] == state and "cls_round" not in out      # not moved; the box keeps what was typed
        assert_sentence(said, lang)
    assert classroom.go_round(ctx, trace, state, classroom.SEED, False, 2)["cls_cur"].round == 1
    for seed in (-1, 2.5, MAX_SEED + 1, "x"):
        out = classroom.redraw_u(ctx, trace, state, seed, False)
        assert out["cls_cur"].draw == state.draw and 'data-kind="error"' in out["cls_info"]   # nothing re-drawn
        assert _text(out["cls_info"]).startswith(t("cls.seed", lang))
    assert classroom.redraw_u(ctx, trace, state, 7, False)["cls_cur"].draw == 1


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_draft_tree_that_loops_back_is_said_in_words(tmp_path, lang):
    data = json.loads((ROOT / "assets" / "lessons" / lessons.find("tree-second-branch").file).read_text())
    first = next(i for i, r in enumerate(data["rounds"]) if r.get("tree") and len(r["tree"]) > 2)
    data["rounds"][first]["tree"][1]["parent"] = 2
    shown = _replay(tmp_path, "cycle.json", json.dumps(data).encode(), lang)
    said = _text(shown[0])
    assert 'data-kind="error"' in shown[0]
    assert t("tracefile.tree_parent", lang, round=first + 1, node=2, parent=3) in said
    assert "trace.rounds" not in said and ".parent" not in said and "between -1" not in said
    if lang == "es":
        assert not [part for part in ENGLISH if part in said], said


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_upload_limit_is_one_number_in_mb_as_the_docs_say_it(lang):
    from specviz.limits import APP_MAX_TRACE_BYTES
    from specviz.trace.files import TraceFormatError

    documented = re.search(r"at most (\d+) MB", (ROOT / "docs" / "reference.md").read_text(encoding="utf-8"))
    with pytest.raises(TraceFormatError) as e:
        inputs.check_trace_size(50 * 1024 * 1024)
    said = e.value.text(lang)
    assert f"{documented.group(1)} MB" in said and "52.4 MB" in said and "21" not in said
    assert APP_MAX_TRACE_BYTES == int(documented.group(1)) * 1_000_000
    inputs.check_trace_size(APP_MAX_TRACE_BYTES)                        # the limit itself is allowed


def test_no_classroom_box_lets_gradio_clamp_round_cut_or_raise_its_bare_error():
    """Gradio clamps a slider's own box, rounds a Number with `precision`, raises its bare "Error" pill (and logs a
    traceback) for a Number's minimum/maximum, and cuts a Textbox at `max_length`: no box of the page may use
    them, so every refusal is a sentence of ours. The classroom's one slider left is the play speed (a speed past
    its ends plays at that end and says so); the inspector's round slider only picks among recorded rounds. Every
    slider is `specviz.ui.sliders.Slider`: Gradio's own checked a typed 0 against its minimum and raised its English
    error, with a traceback, before our check could answer."""
    import gradio as gr

    from specviz.ui import build_app
    from specviz.ui.sliders import Slider
    from tests.browser.tiny_app import tiny_loader

    demo = build_app(tiny_loader())
    for block in demo.blocks.values():
        if isinstance(block, gr.Number):
            assert (block.minimum, block.maximum, block.precision) == (None, None, None), block.elem_id
        if isinstance(block, gr.Textbox):
            assert getattr(block, "max_length", None) is None, block.elem_id
        if isinstance(block, gr.Slider) and str(block.elem_id).startswith(("sv-cls-", "sv-wi-", "sv-why-", "sv-lab-")):
            assert block.elem_id == "sv-cls-speed", block.elem_id
        if isinstance(block, gr.Slider):   # a number typed into its box reaches our check, not Gradio's bounds error
            assert isinstance(block, Slider), block.elem_id


# ---------------------------------------------------------------- the classroom's drafter race
def race_form(**over):
    values = dict(race_prompt="hi", race_tokens=16, race_k=4, pair=PACKAGED, draft_id="", target_id="")
    values.update(over)
    return values


RACE_NUMBERS = [("race_tokens", "race.tokens", v) for v in HOSTILE_NUMBERS + [0, 129, 2.5, "4.5", 10**30]] + \
    [("race_k", "field.k", v) for v in HOSTILE_NUMBERS + [0, 17, 2.5, "4.5", 10**30]]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name,key,value", RACE_NUMBERS, ids=repr)
def test_the_races_numbers_are_refused_with_a_sentence_and_nothing_runs(name, key, value, lang):
    from specviz.ui.tabs import classroom_race

    with pytest.raises(InputError) as e:
        classroom_inputs.race_settings(race_form(**{name: value}), lang)
    assert str(e.value).startswith(t(key, lang)), str(e.value)
    assert_sentence(str(e.value), lang)
    ctx = AppContext(cache=None, lang=lang)                # no loader: nothing may be loaded or run
    outs = list(classroom_race.race(ctx, race_form(**{name: value}), type("R", (), {"session_hash": "h"})()))
    assert outs == [classroom_race.say(str(e.value), "error")]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_races_prompt_is_refused_not_cut_and_its_choices_get_sentences(lang):
    from specviz.limits import APP_MAX_RACE_PROMPT_CHARS

    long = "x" * (APP_MAX_RACE_PROMPT_CHARS + 1)
    cases = {"prompt_chars": dict(race_prompt=long), "blank": dict(race_prompt=" \n\t"),
             "none": dict(race_prompt=None), "pair": dict(pair="<img src=x onerror=alert(1)>"),
             "custom": dict(pair=CUSTOM, draft_id="<script>alert(1)</script>", target_id="a/b")}
    for name, over in cases.items():
        with pytest.raises(InputError) as e:
            classroom_inputs.race_settings(race_form(**over), lang)
        message = str(e.value)
        assert_sentence(message.replace("<script>alert(1)</script>", "").replace("<img src=x onerror=alert(1)>", ""),
                        lang)
        assert "<script" not in status_html(message, "error") and "<img" not in status_html(message, "error"), name
    with pytest.raises(InputError, match=re.escape(t("input.prompt_chars", lang, n=len(long),
                                                     limit=APP_MAX_RACE_PROMPT_CHARS))):
        classroom_inputs.race_settings(race_form(race_prompt=long), lang)
    exact = "y" * APP_MAX_RACE_PROMPT_CHARS
    assert classroom_inputs.race_settings(race_form(race_prompt=exact), lang)[0] == exact


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("prompt", ZERO_WIDTH, ids=repr)
def test_a_race_prompt_that_shows_nothing_is_refused_like_a_blank_one(prompt, lang):
    with pytest.raises(InputError, match=re.escape(t("input.no_prompt", lang))):
        classroom_inputs.race_settings(race_form(race_prompt=prompt), lang)
