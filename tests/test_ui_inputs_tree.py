"""The page's "draft tree" drafter: the Generate form -> RunSettings -> DecodeJob -> the decoder's
`tree="dynamic:K"`, what the form refuses with it, and a tree run's trace as the download and the replay read it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from specviz import Chain, RunReport, Tree, speculative_generate
from specviz.limits import APP_MAX_K, APP_MAX_TREE_NODES
from specviz.engine.sampling import SamplingConfig
from specviz.strings import t
from specviz.trace.records import Trace
from specviz.ui import inputs, worker
from specviz.ui.inputs import PACKAGED, TREE, InputError
from specviz.ui.session import Run
from specviz.ui.run import make_trace
from specviz.ui.stream import StreamView

pytestmark = pytest.mark.usefixtures("one_thread")

PROMPT = [1, 2, 3]


def values(**over) -> dict:
    form = dict(prompt="hi", raw=False, k=5, adaptive=False, temperature=0.0, top_k=0, top_p=1.0, max_new=16,
                seed=0, pair=PACKAGED, draft_id="", target_id="", compare_switch=True, drafter=TREE, compile="auto")
    form.update(over)
    return form


def events_of(job) -> list:
    return [e for batch in worker.batches(worker.start(job, Run())) for e in batch]


def tree_job(tiny_pair, k=5, sampling=SamplingConfig(), compare=True, compile="auto"):
    target, draft = tiny_pair
    pair = SimpleNamespace(target=target, draft=draft, tokenizer=None, eos_token_ids=[])
    s = inputs.run_settings(values(k=k, compile=compile, temperature=sampling.temperature))
    return worker.DecodeJob(pair, PROMPT, s.k, s.sampling, 14, 3, compare=compare, drafter=s.drafter,
                            compile=s.compile)


# ---------------------------------------------------------------- the form
def test_the_tree_is_offered_among_the_drafters_in_both_languages():
    for lang, word in (("en", "draft tree"), ("es", "árbol de borradores")):
        assert (word, TREE) in inputs.drafter_choices(lang)
    s = inputs.run_settings(values(k=APP_MAX_TREE_NODES))
    assert (s.drafter, s.k, s.adaptive_threshold) == (TREE, APP_MAX_TREE_NODES, None)
    assert APP_MAX_TREE_NODES <= APP_MAX_K   # the K box's own range never lets a bigger tree through unnoticed


@pytest.mark.parametrize("over, field, key", [
    (dict(adaptive=True), "adaptive", "input.tree_adaptive"),
    (dict(compile="on"), "compile", "input.tree_compile"),
    (dict(compile="graphs"), "compile", "input.tree_compile"),
])
def test_what_a_tree_cannot_run_with_is_refused_beside_its_field(over, field, key, monkeypatch):
    for gpu in (False, True):   # the tree's own sentence, with a GPU or without
        monkeypatch.setattr(inputs, "gpu_here", lambda: gpu)
        for lang in ("en", "es"):
            with pytest.raises(InputError) as e:
                inputs.run_settings(values(**over), lang)
            assert str(e.value) == t(key, lang)
            assert inputs.field_errors(values(**over), lang) == {field: t(key, lang)}
    assert inputs.field_errors(values(**over, drafter="model")).get(field) is None   # a chain may (on a GPU)


def test_a_tree_over_its_node_budget_is_refused(monkeypatch):
    monkeypatch.setattr(inputs, "APP_MAX_TREE_NODES", 4)
    said = t("input.tree_nodes", "en", limit=4)
    with pytest.raises(InputError, match="at most 4 nodes"):
        inputs.run_settings(values(k=5))
    assert inputs.field_errors(values(k=5)) == {"k": said}
    assert inputs.run_settings(values(k=4)).k == 4 and inputs.run_settings(values(k=5, drafter="model")).k == 5


# ---------------------------------------------------------------- the form's settings reach the decoder
def test_the_page_tree_is_the_decoders_dynamic_tree_of_k_nodes_uncompiled():
    job = SimpleNamespace(drafter=TREE, k=7, adaptive_threshold=None, lookup_k=None)
    assert worker.drafting_of(job) == Tree("dynamic:7") and worker.compile_mode(TREE, "auto") == "off"
    job = SimpleNamespace(drafter="hybrid", k=7, adaptive_threshold=None, lookup_k=None)
    assert worker.drafting_of(job) == Chain(7, drafter="hybrid") and worker.compile_mode("hybrid", "on") == "on"


def test_a_tree_job_runs_the_decoders_tree_round_for_round(tiny_pair):
    events = events_of(tree_job(tiny_pair, k=5))
    rounds = [e.round for e in events if isinstance(e, worker.RoundDone)]
    assert not any(isinstance(e, worker.Failed) for e in events)
    assert rounds and all(r.drafter == "tree" and r.tree and len(r.tree) <= 5 for r in rounds[:-1])
    direct = list(speculative_generate(*tiny_pair, PROMPT, tree="dynamic:5", max_new_tokens=14, seed=3))
    assert [[n.token_id for n in r.tree or []] for r in rounds] == [[n.token_id for n in r.tree or []] for r in direct]
    steps = next(e for e in events if isinstance(e, worker.BaselineDone)).steps   # compare with the target alone
    assert [tok for r in rounds for tok in r.emitted] == [s.token_id for s in steps]   # greedy: the same text


def test_a_sampled_tree_job_runs_too(tiny_pair):
    events = events_of(tree_job(tiny_pair, k=4, sampling=SamplingConfig(temperature=1.0), compare=False))
    rounds = [e.round for e in events if isinstance(e, worker.RoundDone)]
    assert sum(len(r.emitted) for r in rounds) == 14 and any(r.tree for r in rounds)


# ---------------------------------------------------------------- the download and the replay
def test_a_tree_runs_trace_file_keeps_its_trees_and_the_replay_draws_them(tiny_pair):
    job = tree_job(tiny_pair, k=5, compare=False)
    rounds = [e.round for e in events_of(job) if isinstance(e, worker.RoundDone)]
    view = StreamView("hi", greedy=True)
    for rnd in rounds:
        view.add(rnd)
    pair = SimpleNamespace(draft_name="d", target_name="t", device="cpu", dtype="torch.float32",
                           tokenizer=SimpleNamespace(decode=lambda ids, **kw: " ".join(map(str, ids))),
                           weights_label=lambda: "")
    trace = make_trace(pair, inputs.run_settings(values()), PROMPT, view.rounds, RunReport())
    assert trace.draft_model == "d + draft tree"
    back = Trace.from_json(trace.to_json())
    assert [r.tree for r in back.rounds] == [r.tree for r in rounds]
    replay = StreamView(back.prompt, back.greedy, lang="es")
    for rnd in back.rounds:
        replay.add(rnd)
    log = replay.final()["log"]
    assert log.count('class="sv-tree"') == sum(1 for r in rounds if r.tree) and "Árbol de borradores" in log
