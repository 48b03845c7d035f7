"""How the hybrid drafter should choose between prompt lookup and the draft model, tuned on prompts
that are NOT in the benchmark sets: python scripts/hybrid_policy.py record --out /tmp/traces.json
then python scripts/hybrid_policy.py simulate /tmp/traces.json

Greedy decoding is deterministic, so one recording per prompt is enough to replay any greedy policy
exactly: the target's output (which every exact method reproduces), the draft's teacher-forced top-1
token and confidence at every position (while its drafts match the output, drafting token by token
sees exactly this prefix), and the measured cost of a draft step (c) and of verifying k drafts
(V(k), both in units of one target step). A policy's cost is then the sum over its rounds of
drafted steps x c + V(drafted), and its modelled speedup is tokens / cost. Prompt lookup is replayed
with specviz's own `lookup_continuation`. What is modelled, not timed: the model cache's catch-up
after lookup rounds (one step reading a few tokens, counted as one step) and host-side overhead.
"""
import argparse
import json
from statistics import median_high
from pathlib import Path

import torch

from specviz.engine.drafters import lookup_continuation
from specviz.limits import ASSETS

# Summaries of a given text: the category the tuning set (assets/vocab/prompts.jsonl) has least of.
EXTRA = [
    ("summarization", "Summarize in one sentence: A hash table stores key-value pairs in an array of buckets. "
     "A hash function maps each key to a bucket index, so lookups, inserts and deletes take constant time "
     "on average. When two keys land in the same bucket, the table resolves the collision by chaining or "
     "by probing for another free slot."),
    ("summarization", "Summarize this paragraph in two sentences: Garbage collection frees memory that a "
     "program can no longer reach. A tracing collector starts from the roots, such as global variables and "
     "the stack, marks every object it can reach, and then sweeps away the rest. Reference counting instead "
     "frees an object as soon as its count of references drops to zero, but it cannot reclaim cycles."),
    ("summarization", "Give a short summary of this text: The Git staging area, also called the index, sits "
     "between the working directory and the repository. Changes are added to the index with git add and "
     "recorded permanently with git commit. This lets a developer build a commit from only some of the "
     "changes they made."),
    ("summarization", "Summarize for a beginner: A database index is a separate data structure, usually a "
     "B-tree, that keeps the values of one or more columns in sorted order together with pointers to the "
     "rows. Queries that filter on those columns can then find matching rows without scanning the whole "
     "table, at the cost of extra storage and slower writes."),
    ("summarization", "Summarize in two sentences: Unit tests check small pieces of code in isolation, "
     "integration tests check that several components work together, and end-to-end tests drive the whole "
     "application the way a user would. Unit tests are fast and precise, while end-to-end tests are slow "
     "but catch problems the others miss."),
    ("summarization", "Summarize the key points: HTTP caching lets a browser reuse a response it already "
     "has. The server sends a Cache-Control header that says how long the response stays fresh; after that, "
     "the browser can revalidate it with an ETag or Last-Modified date, and the server answers 304 Not "
     "Modified when nothing changed, which saves sending the body again."),
]


def record(args) -> None:
    from specviz.bench.costs import forward_costs
    from specviz.models.loading import load_pair
    from specviz.engine.sampling import SamplingConfig
    from specviz.generate import speculative_generate

    source = Path(args.prompts) if args.prompts else ASSETS / "vocab" / "prompts.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    prompts = [(r["category"], r.get("prompt", r.get("text"))) for r in rows] + ([] if args.prompts else EXTRA)
    pair = load_pair()
    first = pair.encode_chat(prompts[0][1])
    fc = forward_costs(pair.target, pair.draft, first, range(1, 9), repeats=args.repeats)
    out = {"c": fc.c, "verify": {k: fc.verify_cost(k) for k in range(1, 9)}, "pair": pair.name,
           "draft_weights": pair.draft_weights, "traces": []}
    print(f"c {fc.c:.3f}; V(k) " + " ".join(f"{k}:{v:.2f}" for k, v in out["verify"].items()), flush=True)
    for i, (category, text) in enumerate(prompts[: args.limit]):
        ids = pair.encode_chat(text)
        emitted = [t for rnd in speculative_generate(pair.target, pair.draft, ids, k=6, sampling=SamplingConfig(0.0),
                                                     max_new_tokens=args.max_new_tokens, record=False)
                   for t in rnd.emitted]
        seq = torch.tensor([ids + emitted])
        with torch.inference_mode():
            probs = torch.softmax(pair.draft(input_ids=seq).logits[0].float(), -1)
        conf, top = probs.max(-1)
        out["traces"].append({"category": category, "prompt": ids, "output": emitted,
                              "draft_top": top.tolist(), "draft_conf": [round(x, 4) for x in conf.tolist()]})
        print(f"{i + 1}/{len(prompts)} {category}: {len(emitted)} tokens", flush=True)
        Path(args.out).write_text(json.dumps(out))


# ---------------------------------------------------------------- replay
def model_round(tr, at: int, k: int, threshold: float | None) -> tuple[int, int]:
    """(accepted, drafted) of a draft-model round starting at sequence position `at`."""
    seq, top, conf = tr["seq"], tr["draft_top"], tr["draft_conf"]
    accepted, drafted, matching = 0, 0, True
    for j in range(k):
        pos = at - 1 + j   # the draft's prediction for token at + j reads the prefix up to at + j - 1
        drafted += 1
        matching = matching and top[pos] == seq[at + j]
        accepted += matching
        if threshold is not None and conf[pos] < threshold:
            break
    return accepted, drafted


def earliest_continuation(seq: list, k: int, max_ngram: int) -> tuple[list, int]:
    """transformers' prompt-lookup rule, for comparison: the EARLIEST match, n from max_ngram down."""
    T = len(seq)
    for n in range(min(max_ngram, T - 1), 0, -1):
        for start in range(T - n):
            if seq[start: start + n] == seq[T - n:] and start + n < T:
                return seq[start + n: start + n + k], n
    return [], 0


def lookup_round(tr, at: int, k: int, max_ngram: int, earliest: bool = False) -> tuple[int, int, int]:
    """(accepted, proposed, matched n) of a prompt-lookup round starting at sequence position `at`."""
    seq = tr["seq"]
    cont, n = (earliest_continuation(seq[:at], k, max_ngram) if earliest
               else lookup_continuation(torch.tensor(seq[:at]), k, max_ngram=max_ngram))
    accepted = 0
    for j, t in enumerate(cont):
        if t != seq[at + j]:
            break
        accepted += 1
    return accepted, len(cont), n


def extended_round(tr, at: int, k: int, threshold: float | None, min_match: int) -> tuple[int, int, int]:
    """(accepted, model steps, drafted) of a model round that hands over to prompt lookup as soon as the
    text so far (prompt, output, this round's drafts) ends in an n-gram match of at least `min_match`
    tokens: the rest of the round is the lookup's continuation, with no further draft steps. The
    lookup is replayed on the true prefix (exact while the drafts match; after a mismatch only the
    cost is approximate, the acceptance is already decided)."""
    seq, top, conf = tr["seq"], tr["draft_top"], tr["draft_conf"]
    accepted, steps, matching = 0, 0, True
    for j in range(k):
        if j:   # after at least one model token, look for a hand-over
            cont, n = lookup_continuation(torch.tensor(seq[: at + j]), k - j)
            if n >= min_match and cont:
                for i, t in enumerate(cont):
                    matching = matching and t == seq[at + j + i]
                    accepted += matching
                return accepted, steps, j + len(cont)
        pos = at - 1 + j
        steps += 1
        matching = matching and top[pos] == seq[at + j]
        accepted += matching
        if threshold is not None and conf[pos] < threshold:
            break
    return accepted, steps, steps


def replay(tr, policy: dict, k: int, c: float, verify: dict) -> tuple[float, int, int]:
    """(cost in target steps, tokens, rounds) of one greedy run under `policy`."""
    P, N = len(tr["prompt"]), len(tr["output"])
    at, cost, rounds = P, 0.0, 0
    streak = False   # the last lookup round was accepted whole ("after_whole": only then a longer one)
    while at < P + N:
        k_round = min(k, P + N - at - 1)
        if k_round <= 0:
            cost, at, rounds = cost + 1.0, at + 1, rounds + 1
            continue
        use_lookup = False
        if policy["kind"] in ("ngram", "hybrid"):   # a hybrid's lookup rounds may go to lookup_k (Chain.lookup_k)
            k_lookup = min(policy.get("lookup_k", k), P + N - at - 1)
            acc, drafted, n = lookup_round(tr, at, k_lookup, policy.get("max_ngram", 3), policy.get("earliest", False))
            if n < policy.get("long_match", 0) or (policy.get("after_whole") and not streak):
                acc, drafted = min(acc, k_round), min(drafted, k_round)   # only these earn the longer round
            use_lookup = policy["kind"] == "ngram" or (n >= policy["min_match"] and drafted >= policy["min_tokens"])
        if use_lookup:
            cost += verify.get(drafted, 1.0) if drafted else 1.0
            streak = acc == drafted
        elif policy.get("extend"):
            acc, steps, drafted = extended_round(tr, at, k_round, policy.get("threshold"), policy["min_match"])
            cost += steps * c + verify[drafted]
        else:
            acc, drafted = model_round(tr, at, k_round, policy.get("threshold"))
            cost += drafted * c + verify[drafted]
        at += acc + 1
        rounds += 1
    return cost, N, rounds


def simulate(args) -> None:
    data = json.loads(Path(args.traces).read_text())
    c = args.c if args.c is not None else data["c"]
    verify = ({k + 1: v for k, v in enumerate(args.verify)} if args.verify
              else {int(k): v for k, v in data["verify"].items()})
    for tr in data["traces"]:
        tr["seq"] = tr["prompt"] + tr["output"]
    policies = {"model K": {"kind": "model"}, "ngram": {"kind": "ngram"},
                "ngram max 2": {"kind": "ngram", "max_ngram": 2},
                "transformers' lookup": {"kind": "ngram", "max_ngram": 2, "earliest": True}}
    for t in (0.4, 0.5, 0.6, 0.7, 0.8):
        policies[f"adaptive {t}"] = {"kind": "model", "threshold": t}
    for mm in (2, 3, 4):
        for t in (None, 0.5, 0.6, 0.7):
            for extend in (False, True):
                policies[f"hybrid n>={mm} t={t}{' +extend' if extend else ''}"] = {
                    "kind": "hybrid", "min_match": mm, "min_tokens": 2, "threshold": t, "extend": extend}
    for lookup_k in range(args.k + 1, max(verify) + 1):   # the default hybrid with longer lookup rounds
        policies[f"hybrid n>=3 t=0.6 lookup {lookup_k}"] = {
            "kind": "hybrid", "min_match": 3, "min_tokens": 2, "threshold": 0.6, "lookup_k": lookup_k}
        for long_match in (4, 6, 8):   # ... only where the match is at least long_match tokens
            policies[f"hybrid n>=3 t=0.6 lookup {lookup_k} if n>={long_match}"] = {
                "kind": "hybrid", "min_match": 3, "min_tokens": 2, "threshold": 0.6, "lookup_k": lookup_k,
                "max_ngram": long_match, "long_match": long_match}
        policies[f"hybrid n>=3 t=0.6 lookup {lookup_k} after a whole"] = {   # ... only after a lookup accepted whole
            "kind": "hybrid", "min_match": 3, "min_tokens": 2, "threshold": 0.6, "lookup_k": lookup_k,
            "after_whole": True}
    cats = sorted({tr["category"] for tr in data["traces"]})
    print(f"c {c:.3f}, K {args.k}; modelled speedup over the target alone (tokens / cost), "
          f"median over prompts (the upper of two middles), {len(data['traces'])} prompts")
    print(f"{'policy':32s} {'all':>5s} " + " ".join(f"{x[:7]:>7s}" for x in cats))
    scored = []
    for name, pol in policies.items():
        per = [(tr["category"], n / cost) for tr in data["traces"]
               for cost, n, _ in [replay(tr, pol, args.k, c, verify)]]
        overall = median_high([s for _, s in per])
        by_cat = [median_high([s for cat, s in per if cat == x]) for x in cats]
        scored.append((overall, name))
        print(f"{name:32s} {overall:5.2f} " + " ".join(f"{s:7.2f}" for s in by_cat))
    print("best:", max(scored))
    if args.rounds:   # rounds per prompt, to check the replay against a bench's recorded "rounds"
        for i, tr in enumerate(data["traces"]):
            counts = {name: replay(tr, policies[name], args.k, c, verify)[2] for name in args.rounds}
            print(f"prompt {i + 1:2d} {tr['category']:14s} rounds " + ", ".join(f"{n} {r}" for n, r in counts.items()))


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
sub = parser.add_subparsers(dest="cmd", required=True)
rec = sub.add_parser("record")
rec.add_argument("--out", required=True)
rec.add_argument("--max-new-tokens", type=int, default=40)
rec.add_argument("--repeats", type=int, default=5)
rec.add_argument("--limit", type=int, default=None)
rec.add_argument("--prompts", help="a JSONL file of prompts (default: the tuning set, assets/vocab/prompts.jsonl "
                 "and the summaries above; pass the benchmark's only to check, never to tune)")
sim = sub.add_parser("simulate")
sim.add_argument("traces")
sim.add_argument("--k", type=int, default=6)
sim.add_argument("--rounds", nargs="*", default=[], help="policies whose rounds to print per prompt")
sim.add_argument("--c", type=float, default=None, help="override the recorded draft-step cost")
sim.add_argument("--verify", type=float, nargs="+", default=None, metavar="V",
                 help="override the recorded verify costs: V(1), V(2), ... in one-token forwards")
if __name__ == "__main__":
    a = parser.parse_args()
    record(a) if a.cmd == "record" else simulate(a)
