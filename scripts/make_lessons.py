"""Regenerate the classroom's prepared lessons with the packaged pair: `python scripts/make_lessons.py`.

Each lesson is a specviz trace (the JSON of `python -m specviz generate --json`)
plus a title and a description in every language, listed in index.json. Runs
are short (≤ 64 tokens) so the whole set takes a few minutes on a 2-core CPU.
Where a lesson promises something (a rejection early, an all-accepted round),
the script tries a few seeds or prompts and keeps the first run that shows it,
and `start` points the step mode at that round (`step`, where given, at one decision of it: the rejection
a lesson is named after).
"""
from __future__ import annotations

import argparse
import json
import sys

from specviz.classroom import race
from specviz.classroom.lessons import LESSONS_DIR   # the lessons themselves stay in assets/lessons/
from specviz.classroom.state import StepState
from specviz.classroom.steps import stops
from specviz.models.loading import load_pair
from specviz.engine.options import Chain, DecodeOptions, Tree
from specviz.engine.sampling import SamplingConfig
from specviz.generate import speculative_generate
from specviz.strings import t
from specviz.trace.records import Trace


def second_branch_wins(trace: Trace) -> int | None:
    """The first tree round where a child that is not its parent's first is accepted (the residual at work),
    with a word winning rather than an end-of-text token, in a round that did not end the text."""
    return next((r.index for r in trace.rounds if r.tree and not r.eos and any(
        n.status == "accepted" and i > 0 and r.tree[i - 1].parent == n.parent and not n.text.startswith("<|")
        for i, n in enumerate(r.tree))), None)


def at_residual(trace: Trace, start: int) -> int:
    """The decision number of the residual step (a rejected child's leftover) just before its sibling's
    acceptance in round `start`: the moment the lesson is named after."""
    rnd = trace.rounds[start]
    all_stops = stops(rnd)
    stop = next(i for i, s in enumerate(all_stops) if s.kind == "residual"
                and rnd.tree[all_stops[i + 1].pos].status == "accepted")
    return StepState(round=start, stop=stop).step_number(trace.rounds)


def ngram_kept(rnd) -> int:
    """Drafts proposed by prompt lookup that the target kept in this round."""
    return sum(1 for tk in rnd.drafted if tk.accepted and tk.source == "ngram")


def longest_lookup(trace: Trace) -> int | None:
    """The round where prompt lookup had the most drafts kept (the first such), if it had any kept at all."""
    best = max(trace.rounds, key=ngram_kept)
    return best.index if ngram_kept(best) > 0 else None


def lookup_figures(pair, spec: dict, trace: Trace, seed: int) -> dict:
    """What the code-edit lesson says it measured: prompt lookup's drafted and kept tokens, its longest kept run in
    one round, τ of this run, and τ of the draft model alone on the same prompt (a second run, same settings)."""
    lookup = [r for r in trace.rounds if any(tk.source == "ngram" for tk in r.drafted)]
    drafted = sum(1 for r in lookup for tk in r.drafted)
    kept = sum(ngram_kept(r) for r in lookup)
    emitted = sum(len(r.emitted) for r in trace.rounds)
    alone = run(pair, {**spec, "drafter": "model"}, seed)
    figures = dict(lookup_rounds=len(lookup), rounds=len(trace.rounds), drafted=drafted, kept=kept,
                   share=f"{100 * kept / max(drafted, 1):.0f}%", longest=max(map(ngram_kept, trace.rounds)),
                   tokens=emitted, tau=f"{emitted / len(trace.rounds):.2f}",
                   tau_model=f"{sum(len(r.emitted) for r in alone.rounds) / len(alone.rounds):.2f}",
                   same="yes" if [t for r in alone.rounds for t in r.emitted] ==
                   [t for r in trace.rounds for t in r.emitted] else "NO")
    print(f"{spec['name']}: measured {figures}", file=sys.stderr)
    # The classroom's race on the same prompt (not written into the lesson: its times depend on the machine).
    lanes = race.run_race(pair, pair.encode_chat(spec["prompt"]), spec["k"], spec["tokens"])
    for lane in lanes:
        print(f"  race {lane.entrant:7s} tokens {lane.tokens:3d}  tau {lane.tau:5.2f}  accept {lane.acceptance:.2f}  "
              f"lookup {lane.count('ngram'):3d}  {lane.tokens_per_s:6.2f} tok/s  "
              f"same as target alone: {race.verdict(lanes[0], lane).same}", file=sys.stderr)
    return figures


# The code-edit lesson: the race's own default prompt, a rename, so the answer repeats the prompt's
# code and prompt lookup copies it.
CODE_EDIT_PROMPT = t("race.default_prompt", "en")


def first_rejection(trace: Trace) -> int | None:
    return next((r.index for r in trace.rounds if r.rejected_at is not None and r.correction is not None), None)


def first_bonus(trace: Trace) -> int | None:
    return next((r.index for r in trace.rounds if r.bonus is not None and r.k > 1), None)


def at_rejection(trace: Trace, start: int) -> int:
    """The decision number (1-based, as a link's ?step=N) of the failed test in round `start` (0-based)."""
    rnd = trace.rounds[start]
    stop = next(i for i, s in enumerate(stops(rnd)) if s.kind == "test" and s.pos == rnd.rejected_at)
    return StepState(round=start, stop=stop).step_number(trace.rounds)


# name, prompt, K, temperature, max tokens, seeds or prompts to try, the round to start at (None: round 1)
LESSONS = [
    dict(name="greedy-code", prompt="Write a Python function that checks whether a number is prime.", k=4,
         temperature=0.0, tokens=32, start=None,
         title={"en": "Greedy code", "es": "Código en modo greedy"},
         description={"en": "Temperature 0: a draft token is kept iff it is the target's own top choice. "
                            "Code is predictable, so most drafts pass.",
                      "es": "Temperatura 0: un token del borrador se queda si y solo si es la primera opción del "
                            "objetivo. El código es predecible, así que la mayoría de borradores pasan."}),
    dict(name="prose-t07", prompt="Explain in two sentences what a hash map is.", k=4, temperature=0.7, tokens=32,
         start=None,
         title={"en": "Prose at T = 0.7", "es": "Prosa con T = 0,7"},
         description={"en": "Sampling: every test is a coin flip u < a = min(1, p/q). Watch a differ from 0 and 1.",
                      "es": "Muestreo: cada prueba es una moneda u < a = min(1, p/q). Observa cómo a se aleja "
                            "de 0 y de 1."}),
    dict(name="early-rejection", prompt="Write a haiku about the sea.", k=4, temperature=1.0, tokens=24,
         start=first_rejection, step=at_rejection, seeds=range(8),
         title={"en": "A rejection and its correction", "es": "Un rechazo y su corrección"},
         description={"en": "Starts at the first rejected draft: p < q, the test fails, and the correction is "
                            "drawn from the residual max(0, p − q).",
                      "es": "Empieza en el primer borrador rechazado: p < q, la prueba falla y la corrección se "
                            "extrae del residuo max(0, p − q)."}),
    dict(name="bonus-round", prompt="Write a Python function that returns the n-th Fibonacci number.", k=3,
         temperature=0.0, tokens=24, start=first_bonus,
         title={"en": "All accepted: the bonus token", "es": "Todo aceptado: el token extra"},
         description={"en": "Starts at a round where every draft passes: the target's forward already holds p "
                            "for one more position, so the round emits K + 1 tokens.",
                      "es": "Empieza en una ronda donde todos los borradores pasan: la pasada del objetivo ya "
                            "contiene p para una posición más, así que la ronda emite K + 1 tokens."}),
    dict(name="spanish-t07", prompt="Explica en dos frases qué es una tabla hash.", k=4, temperature=0.7, tokens=32,
         start=None,
         title={"en": "Spanish prose at T = 0.7", "es": "Prosa en español con T = 0,7"},
         description={"en": "The same rule on a Spanish prompt: tokens are pieces of words, and accents can "
                            "split across tokens.",
                      "es": "La misma regla con un prompt en español: los tokens son trozos de palabras y las "
                            "tildes pueden repartirse entre tokens."}),
    dict(name="tree-second-branch", prompt="Explain in two sentences what a hash map is.", k=3, tree="2x2x1",
         temperature=1.0, tokens=32, start=second_branch_wins, step=at_residual, seeds=range(16),
         title={"en": "A draft tree: the second branch wins", "es": "Un árbol de borradores: gana la segunda rama"},
         description={"en": "The draft proposes two candidates at each position and the target checks the whole "
                            "tree in one pass. Starts where the first candidate is rejected: the second is tested "
                            "against what is left of p, the residual max(0, p − q) normalised, and is accepted.",
                      "es": "El borrador propone dos candidatos en cada posición y el objetivo comprueba el árbol "
                            "entero en una pasada. Empieza donde el primer candidato es rechazado: el segundo se "
                            "prueba contra lo que queda de p, el residuo max(0, p − q) normalizado, y es aceptado."}),
    # The figures in the description are this script's own measurement ({...}, filled by `lookup_figures`).
    dict(name="code-edit-lookup", prompt=CODE_EDIT_PROMPT, k=8, drafter="hybrid", temperature=0.0, tokens=64,
         start=longest_lookup, measure=lookup_figures,
         title={"en": "A code edit: prompt lookup copies long runs",
                "es": "Una edición de código: la búsqueda en el prompt copia tramos largos"},
         description={"en": "Greedy, K = 8, hybrid drafting (prompt lookup when the text repeats, else the draft "
                            "model) on a rename in a small function: the answer repeats the prompt's code. Measured "
                            "when this lesson was recorded with the packaged pair: prompt lookup drafted in "
                            "{lookup_rounds} of {rounds} rounds, {drafted} tokens, and the target kept {kept} of them "
                            "({share}); the most it kept in one round was {longest}. τ = {tau} tokens per target "
                            "pass, against {tau_model} with the draft model alone on the same prompt; a lookup round "
                            "runs no draft forward at all, so its tokens cost less. Opens at the round with the "
                            "longest run.",
                      "es": "Greedy, K = 8, borrador híbrido (búsqueda en el prompt cuando el texto se repite; si "
                            "no, el modelo borrador) en un cambio de nombre dentro de una función pequeña: la "
                            "respuesta repite el código del prompt. Medido al grabar esta lección con el par "
                            "incluido: la búsqueda en el prompt propuso en {lookup_rounds} de {rounds} rondas, "
                            "{drafted} tokens, y el objetivo se quedó {kept} ({share}); lo más que se quedó en una "
                            "ronda fue {longest}. τ = {tau} tokens por pasada del objetivo, frente a {tau_model} "
                            "con solo el modelo borrador en el mismo prompt; una ronda de búsqueda no hace ninguna "
                            "pasada del borrador, así que sus tokens cuestan menos. Empieza en la ronda del tramo "
                            "más largo."}),
]


def run(pair, spec: dict, seed: int) -> Trace:
    sampling = SamplingConfig(temperature=spec["temperature"])
    ids = pair.encode_chat(spec["prompt"])
    drafter = spec.get("drafter", "model")
    drafting = Tree(spec["tree"]) if spec.get("tree") else Chain(spec["k"], drafter=drafter)
    options = DecodeOptions(sampling=sampling, max_new_tokens=spec["tokens"], seed=seed, drafting=drafting,
                            tokenizer=pair.tokenizer, eos_token_id=list(pair.eos_token_ids or []) or None)
    rounds = list(speculative_generate(pair.target, None if drafter == "ngram" else pair.draft, ids, options))
    return Trace(prompt=spec["prompt"], prompt_ids=list(ids), draft_model=pair.draft_name,
                 target_model=pair.target_name, k=spec["k"], max_new_tokens=spec["tokens"], seed=seed,
                 sampling=sampling.to_dict(), rounds=rounds,
                 output_text=pair.decode([t for r in rounds for t in r.emitted]),
                 device=str(pair.device), dtype=str(pair.dtype).replace("torch.", ""))


def main(argv=None) -> None:
    """All lessons; `--only NAME ...` re-records those and keeps every other lesson's file and index entry."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])   # --help says so, and records nothing
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=[spec["name"] for spec in LESSONS],
                    help="re-record these lessons only (the others keep their files and index entries)")
    only = ap.parse_args(argv).only
    pair = load_pair(progress=lambda f, m: print(f"[{f * 100:3.0f}%] {m}", file=sys.stderr, flush=True))
    kept = {e["name"]: e for e in json.loads((LESSONS_DIR / "index.json").read_text(encoding="utf-8"))["lessons"]} \
        if only else {}
    index = []
    for spec in LESSONS:
        if only and spec["name"] not in only:
            if spec["name"] in kept:
                index.append(kept[spec["name"]])
            continue
        for seed in spec.get("seeds", [0]):
            trace = run(pair, spec, seed)
            start = spec["start"](trace) if spec["start"] else 0
            if start is not None:
                break
        else:
            raise SystemExit(f"{spec['name']}: no run showed what the lesson promises; try more seeds")
        (LESSONS_DIR / f"{spec['name']}.json").write_text(trace.to_json(indent=1), encoding="utf-8")
        entry = {"name": spec["name"], "file": f"{spec['name']}.json", "start": start + 1}
        if spec.get("step"):
            entry["step"] = spec["step"](trace, start)
        description = spec["description"]
        if spec.get("measure"):
            figures = spec["measure"](pair, spec, trace, seed)
            description = {lang: text.format(**figures) for lang, text in description.items()}
        index.append({**entry, "title": spec["title"], "description": description})
        print(f"{spec['name']}: seed {seed}, {len(trace.rounds)} rounds, start at round {start + 1}", file=sys.stderr)
    (LESSONS_DIR / "index.json").write_text(json.dumps({"lessons": index}, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


if __name__ == "__main__":
    main()
