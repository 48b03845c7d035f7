"""The app's drafter choice, compile setting, GPU presets and "cannot pay" sentence, without a browser.

Event functions are driven directly (`generate.generate` is a generator of page updates) on the tiny pair of
tests/browser/tiny_app.py; `forward_costs` is replaced where a test needs c and verify_cost to be known.
"""
from __future__ import annotations

import dataclasses

import queue
from types import SimpleNamespace

import pytest

from specviz.bench.costs import ForwardCosts
from specviz.engine.drafters import DRAFTERS
from specviz.ui import inputs, pays, worker
from specviz.ui.inputs import PACKAGED, InputError
from specviz.ui.session import AppContext, PairCache, Run
from specviz.ui.tabs import generate
from tests.browser.tiny_app import TinyPair

FORM = dict(prompt="the cat sat on the mat", raw=False, k=3, adaptive=False, temperature=0.0, top_k=0, top_p=1.0,
            max_new=16, seed=0, pair=PACKAGED, draft_id="", target_id="", compare_switch=True, drafter="model",
            compile="auto")


@pytest.fixture
def pair():
    return TinyPair(0.0)


@pytest.fixture(autouse=True)
def fresh_costs():
    pays.COSTS.clear()
    yield
    pays.COSTS.clear()


def fake_costs(c: float, verify: float, calls: list):
    """A forward_costs stand-in with known c and verify_cost (the real one times bare forwards)."""
    def forward_costs(target, draft, input_ids, ks, repeats=3):
        calls.append(list(ks))
        return ForwardCosts(target_1=1.0, draft_1=c, target_k={k: verify for k in ks})

    return forward_costs


def drive(gen):
    """Run an event generator to its end: (its updates, its return value)."""
    updates = []
    try:
        while True:
            updates.append(next(gen))
    except StopIteration as e:
        return updates, e.value


REAL_CHECK = pays.check


def measured_speedup(monkeypatch, value: float):
    """The run's measured speedup set to `value` where the run measured one: the tiny pair's own speed is noise
    (a loaded machine has measured it on either side of 1), and these tests are about what the page says."""
    def check(costs, k, metrics, rounds, measured, device):
        return REAL_CHECK(costs, k, metrics, rounds, None if measured is None else value, device)
    monkeypatch.setattr(pays, "check", check)


def run_app(pair, lang="en", **over) -> list[dict]:
    ctx = AppContext(cache=PairCache(lambda d, t, progress: pair), lang=lang, tick_s=0.05, chart_interval_s=0.0)
    form = {**FORM, **over}
    request = SimpleNamespace(session_hash=f"pays-{id(form)}")
    updates, _ = drive(generate.generate(ctx, form, request=request))
    return updates


# ---------------------------------------------------------------- the form
def test_drafter_choices_follow_the_decoders_list(monkeypatch):
    assert [v for _, v in inputs.drafter_choices()] == [*DRAFTERS, inputs.TREE]   # the page adds the tree
    from specviz.ui import choices   # the page's choices live there (inputs re-exports them)

    monkeypatch.setattr(choices, "DRAFTERS", ("model", "ngram", "hybrid", "trimmed", "future"))
    labels = dict((v, label) for label, v in inputs.drafter_choices())
    assert labels["ngram"] == "prompt lookup (n-gram)" and labels["trimmed"].startswith("draft model with a trimmed")
    assert labels["future"] == "future"                      # a drafter nobody wrote a label for: its name
    assert dict((v, label) for label, v in inputs.drafter_choices("es"))["model"] == "modelo borrador"


def test_drafter_compile_and_adaptive_are_checked():
    s = inputs.run_settings(FORM)
    assert (s.drafter, s.compile, s.adaptive_threshold) == ("model", "auto", None)
    assert inputs.run_settings({**FORM, "drafter": "ngram", "compile": "off"}).drafter == "ngram"
    for over, needle in ((dict(drafter="oracle"), "Unknown drafter “oracle”"),
                         (dict(compile="maybe"), "auto, on, off or graphs"),
                         (dict(drafter="ngram", adaptive=True), "has no draft model")):
        with pytest.raises(InputError, match=needle):
            inputs.run_settings({**FORM, **over})
    errors = inputs.field_errors({"adaptive": True, "drafter": "ngram", "compile": "x"})
    assert set(errors) == {"adaptive", "compile"}
    assert "K adaptativo" in inputs.field_errors({"adaptive": True, "drafter": "ngram"}, "es")["adaptive"]


def test_gpu_presets_are_offered_and_taken_only_with_a_gpu():
    assert inputs.default_pair("qwen2.5-0.5b-7b", gpu=False) == PACKAGED       # never the default on a CPU
    assert inputs.default_pair("qwen2.5-0.5b-14b", gpu=True) == "qwen2.5-0.5b-14b"
    assert inputs.default_pair(None, gpu=True) == PACKAGED
    assert inputs.default_pair("custom", gpu=True) == PACKAGED
    labels = dict((v, label) for label, v in inputs.pair_choices(gpu=True))
    assert labels["qwen2.5-0.5b-7b"] == "Qwen2.5 0.5B → 7B Instruct (Hub, GPU)"
    assert inputs.pair_ids("qwen2.5-0.5b-14b", "", "") == ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-14B-Instruct")


# ---------------------------------------------------------------- the worker
def test_worker_passes_drafter_and_compile_and_reports_the_warm_up(monkeypatch, pair):
    seen = {}
    real = worker.speculative_generate

    def spy(target, draft, ids, options):   # the page decodes through one DecodeOptions
        seen.update(drafter=options.drafting.drafter, compile=options.compile, draft=draft)
        return real(target, draft, ids, dataclasses.replace(options, compile="off"))

    monkeypatch.setattr(worker, "speculative_generate", spy)
    job = worker.DecodeJob(pair, pair.encode_chat("the cat"), 3, inputs.sampling_config(0, 0, 1), 12, 0,
                           drafter="ngram", compile="on")
    events = [e for b in worker.batches(worker.start(job, Run())) for e in b]
    assert seen["drafter"] == "ngram" and seen["compile"] == "on" and seen["draft"] is None
    rounds = [e.round for e in events if isinstance(e, worker.RoundDone)]
    assert rounds and {r.drafter for r in rounds} == {"ngram"}
    out: queue.Queue = queue.Queue()
    on_event = worker.warmup_events(out)
    on_event("prefill_seconds", 0.2)
    assert out.empty()
    on_event("warmup_seconds", 12.5)
    assert out.get_nowait() == worker.WarmupDone(12.5)


def test_status_names_the_warm_up_then_the_prefill():
    outcome = generate.Outcome()
    assert generate.waiting_line(outcome, True, 0.0, 7, 4, "en").startswith("Compiling the forwards and capturing "
                                                                           "CUDA graphs for K = 4")
    outcome.warmup_seconds = 1.0
    assert generate.waiting_line(outcome, True, 0.0, 7, 4, "en").startswith("Reading the prompt (7 tokens)")
    assert generate.waiting_line(generate.Outcome(), False, 0.0, 7, 4, "es").startswith("Leyendo la instrucción")


# ---------------------------------------------------------------- costs: when, how often
def test_what_is_measured_and_what_compiles(monkeypatch, pair):
    assert not pays.compiles("auto", pair) and pays.compiles("on", pair) and not pays.compiles("off", pair)
    assert pays.wanted(pair, "model", False) and pays.wanted(pair, "hybrid", False)
    assert not pays.wanted(pair, "ngram", False)                              # prompt lookup costs no forward
    assert not pays.wanted(pair, "trimmed", False)      # its draft step is not the plain forward that is timed
    assert not pays.wanted(pair, "hybrid_trimmed", False)   # nor is its model rounds'
    assert not pays.wanted(SimpleNamespace(draft=None), "model", False)
    # A compiled run's forwards are timed compiled (forward_costs takes compile=; nothing asks whether it does).
    assert pays.wanted(pair, "model", True)
    seen = {}

    def with_compile(target, draft, input_ids, ks, repeats=3, compile="off"):
        seen["compile"] = compile
        return ForwardCosts(target_1=1.0, draft_1=0.5, target_k={k: 1.0 for k in ks})

    monkeypatch.setattr(pays, "_forward_costs", lambda: with_compile)
    pays.measure(pair, [1, 2], 3, True, lambda f, m: None)
    assert seen == {"compile": "graphs"}     # a CPU: the static buffers, never minutes of CPU compilation
    monkeypatch.setattr(pays, "device_of", lambda p: "cuda:0")
    pays.measure(pair, [1, 2], 3, True, lambda f, m: None)
    assert seen == {"compile": "auto"}       # CUDA: the platform's way (torch.compile, or graphs on ZeroGPU)


def test_costs_are_measured_once_per_pair_and_k(monkeypatch, pair):
    calls: list = []
    monkeypatch.setattr(pays, "_forward_costs", lambda: fake_costs(0.4, 1.5, calls))
    ctx = AppContext(cache=PairCache(lambda d, t, p: pair), tick_s=0.05)
    say = lambda m, kind: {"status": m}   # noqa: E731
    ids = pair.encode_chat("hello")
    updates, fc = drive(pays.costs(ctx, Run(), pays.CostRequest(pair, ids, 4, "model", False), say))
    assert fc.c == 0.4 and fc.verify_cost(4) == 1.5 and calls == [[4]]
    assert any("Timing one forward pass of each model" in u["status"] for u in updates)
    updates, again = drive(pays.costs(ctx, Run(), pays.CostRequest(pair, ids, 4, "model", False), say))
    assert again is fc and updates == [] and calls == [[4]]                   # cached: no wait, no status
    drive(pays.costs(ctx, Run(), pays.CostRequest(pair, ids, 2, "model", False), say))
    drive(pays.costs(ctx, Run(), pays.CostRequest(TinyPair(0.0), ids, 4, "model", False), say))
    assert calls == [[4], [2], [4]]
    assert drive(pays.costs(ctx, Run(), pays.CostRequest(pair, ids, 3, "ngram", False), say)) == ([], None)


def test_real_forward_costs_run_on_the_tiny_pair(pair):
    fc = pays.measure(pair, pair.encode_chat("the cat"), 3, False, lambda f, m: None)
    assert fc.c > 0 and fc.verify_cost(3) > 0 and pays.COSTS.get(pair, 3, False) is fc


# ---------------------------------------------------------------- the sentence in a whole run
@pytest.mark.parametrize("lang, needle", [("en", "speculation cannot pay for this pair"),
                                          ("es", "la especulación no puede compensar")])
def test_a_run_that_cannot_pay_says_so_under_the_tiles(monkeypatch, pair, lang, needle):
    calls: list = []
    monkeypatch.setattr(pays, "_forward_costs", lambda: fake_costs(0.9, 3.0, calls))
    measured_speedup(monkeypatch, 0.8)
    updates = run_app(pair, lang)
    final = updates[-1]
    assert 'data-kind="ok"' in final["status"], final["status"]
    assert 'data-pays="cannot"' in final["metrics"] and needle in final["metrics"]
    assert "c = 0.90" in final["metrics"] and "K = 3" in final["metrics"] and "3.0×" in final["metrics"]
    assert calls == [[3]]
    assert all("sv-pays" not in u.get("metrics", "") for u in updates[:-1])   # only once the run is over


def test_a_run_that_pays_or_drafts_by_prompt_lookup_says_nothing(monkeypatch, pair):
    calls: list = []
    monkeypatch.setattr(pays, "_forward_costs", lambda: fake_costs(0.05, 1.0, calls))
    assert "sv-pays" not in run_app(pair, compare_switch=False)[-1]["metrics"]      # theory 3.5×, nothing measured
    # The same theory with a measured speedup below 1: did not pay; measured at 1x or more: nothing to say.
    measured_speedup(monkeypatch, 0.7)
    assert 'data-pays="did_not"' in run_app(pair)[-1]["metrics"]
    measured_speedup(monkeypatch, 1.2)
    assert "sv-pays" not in run_app(pair)[-1]["metrics"]
    monkeypatch.setattr(pays, "_forward_costs", lambda: fake_costs(0.9, 3.0, calls))
    final = run_app(pair, drafter="ngram")[-1]
    assert calls == [[3]]                 # measured once for the pair and K; nothing timed for prompt lookup
    assert "sv-pays" not in final["metrics"] and "sv-src-ngram" in final["live"]
    assert 'data-drafter="ngram"' in final["log"] and final["trace"].draft_model == "prompt lookup (n-gram)"


@pytest.mark.parametrize("lang, needle", [("en", "a draft tree cannot pay for this pair"),
                                          ("es", "un árbol de borradores no puede compensar")])
def test_a_tree_run_that_cannot_pay_says_so_too(monkeypatch, pair, lang, needle):
    """ Tree rounds got no "cannot pay" sentence; they get one from their measured τ and depth."""
    calls: list = []
    monkeypatch.setattr(pays, "_forward_costs", lambda: fake_costs(0.9, 3.0, calls))
    measured_speedup(monkeypatch, 0.8)
    final = run_app(pair, lang, drafter="tree")[-1]
    assert final["trace"].rounds[0].tree and calls == [[3]]
    assert 'data-pays="cannot"' in final["metrics"] and needle in final["metrics"], final["metrics"]
    assert "c = 0.90" in final["metrics"] and "3.0×" in final["metrics"]


def test_a_refused_drafter_combination_never_starts(pair):
    updates = run_app(pair, drafter="ngram", adaptive=True)
    assert len(updates) == 1 and 'data-kind="error"' in updates[0]["status"]
