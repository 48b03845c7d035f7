"""Make the trimmed draft vocabulary's frequency table from text the TARGET generates.

    .venv/bin/python scripts/make_vocab.py                 # ~15 min on a 2-core CPU
    .venv/bin/python scripts/make_vocab.py --from-counts assets/vocab/counts.partial.json
    .venv/bin/python scripts/make_vocab.py --resume assets/vocab/qwen2.5-coder.vocab.json --minutes 10

The packaged pair's target (Qwen2.5-Coder 1.5B, fp32) answers the prompts of
assets/vocab/prompts.jsonl (none of them in the benchmark sets; a test checks)
in batches with left padding, alternating batches sampled at T = 0.7 and greedy,
until the wall-time cap. Every generated token up to and including the first EOS
is counted; the counts are saved after each batch (`--counts`), so an
interrupted run can still be turned into a table with `--from-counts`, and
`--resume` adds a new session's counts to an earlier table or counts file (the
batches continue where the earlier ones stopped in the prompt order). One torch
thread by default: on a shared 2-core machine a second thread fought the other
processes for the cores and ran ~5x slower (measured on the tiny-model tests).

The prior. A few thousand generated tokens cannot rank 150k ids, so the
table ranks the observed ids by count (ties by id) and then every unseen id in
ascending id order. In Qwen2's byte-level BPE tokenizer the id order is the
merge order: ids 0-255 are the bytes, and merge i of tokenizer.json creates token
256 + i for every i (the script checks this and records it in the metadata as
`prior_check`); BPE merges are learned most-frequent-pair first, so a lower id
means a token that was more frequent in the tokenizer's training corpus. The
table records `prior` and how many ids were observed, so a reader knows where
measurement ends and the prior begins. Evidence from the shipped table (2,766
generated tokens): among the observed ids, id and count rank correlate
(Spearman 0.37, lower id = more frequent), and 91 % of the generated tokens have
an id below 32768; the other 9 % are kept by the observed part of the ranking.

Always kept, whatever their rank: the special and added tokens (EOS, chat, FIM)
and every pure-whitespace token (indentation), listed in the table's `always`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from specviz.engine import vocab_trim
from specviz.limits import ASSETS, REPO_ROOT

HERE = ASSETS / "vocab"   # the prompts, the counts and the table live beside each other in assets/


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=Path, default=HERE / "prompts.jsonl")
    ap.add_argument("--out", type=Path, default=vocab_trim.DEFAULT_TABLE)
    ap.add_argument("--counts", type=Path, default=HERE / "counts.partial.json",
                    help="where counts are saved after every batch (deleted once the table is written)")
    ap.add_argument("--from-counts", type=Path, help="skip generation: make the table from saved counts")
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-time cap on generation")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--resume", type=Path, help="add to the counts of an earlier table or counts file")
    return ap.parse_args(argv)


def load_prompts(path: Path) -> list[str]:
    return [json.loads(line)["prompt"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def prior_check(tokenizer_json: Path) -> str:
    """Does merge i of the BPE model create token id 256 + i (id order = merge order)?"""
    model = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]
    vocab, merges = model["vocab"], model["merges"]
    made = [vocab.get("".join(m) if isinstance(m, list) else m.replace(" ", "")) for m in merges]
    ok = all(i == 256 + n for n, i in enumerate(made))
    return (f"{'yes' if ok else 'NO'}: merge i of {len(merges)} creates id 256 + i"
            f"{'' if ok else ' (not for every merge: the id prior is weaker)'}")


def generate_counts(args, pair, state: dict) -> None:
    """Batched generation with the target until the time cap; counts saved after every batch."""
    tok = pair.tokenizer
    tok.padding_side = "left"
    prompts = load_prompts(args.prompts)
    eos = set(pair.eos_token_ids)
    texts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
             for p in prompts]
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(args.seed)).tolist()
    deadline = time.monotonic() + 60 * args.minutes
    counts: Counter = Counter({int(k): v for k, v in state["counts"].items()})
    n_batch = state["batches"]
    while time.monotonic() < deadline - 20:
        start = (n_batch * args.batch) % len(order)
        rows = [texts[order[(start + j) % len(order)]] for j in range(args.batch)]
        # Alternate sampled and greedy batches; after a full pass a prompt returns in the other mode.
        greedy = (n_batch + (n_batch * args.batch) // len(order)) % 2 == 1
        enc = tok(rows, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(args.seed + n_batch)
        t0 = time.monotonic()
        out = pair.target.generate(**enc, max_new_tokens=args.max_new_tokens, do_sample=not greedy,
                                   temperature=None if greedy else 0.7, top_k=None if greedy else 0,
                                   top_p=None if greedy else 1.0, repetition_penalty=None,
                                   pad_token_id=tok.pad_token_id, max_time=max(1.0, deadline - time.monotonic()))
        new = 0
        for row in out[:, enc["input_ids"].shape[1]:].tolist():
            for t in row:
                counts[t] += 1
                new += 1
                if t in eos:
                    break
        n_batch += 1
        state.update(counts=dict(counts), batches=n_batch, rows=state["rows"] + len(rows),
                     tokens=sum(counts.values()), seconds=state["seconds"] + time.monotonic() - t0)
        state.setdefault("modes", []).append("greedy" if greedy else "T=0.7")
        args.counts.write_text(json.dumps(state), encoding="utf-8")
        print(f"batch {n_batch} ({'greedy' if greedy else 'T=0.7'}): {new} tokens in "
              f"{time.monotonic() - t0:.0f} s, {state['tokens']} in all", flush=True)


def write_table(args, tokenizer, tokenizer_json: Path, model_vocab: int, state: dict, command: str) -> dict:
    counts = {int(k): int(v) for k, v in state["counts"].items()}
    observed = sorted(counts, key=lambda i: (-counts[i], i))
    meta = {
        "tokenizer_size": len(tokenizer), "tokenizer_fingerprint": vocab_trim.tokenizer_fingerprint(tokenizer),
        "model_vocab": model_vocab, "counted_on": "text generated by the packaged target, Qwen2.5-Coder-1.5B-Instruct "
        "(Q4_K_M GGUF dequantized, fp32, CPU)",
        "generated_tokens": sum(counts.values()), "observed_ids": len(observed), "rows": state["rows"],
        "batches": state["batches"], "modes": state.get("modes", []), "generation_seconds": round(state["seconds"]),
        "prompts": str(args.prompts.relative_to(REPO_ROOT)) if args.prompts.is_absolute()
        and REPO_ROOT in args.prompts.parents else str(args.prompts),
        "prompts_sha256": hashlib.sha256(args.prompts.read_bytes()).hexdigest()[:16],
        "prior": "ids never observed follow in ascending id order (Qwen2 BPE: id order = merge order "
                 "~ frequency in the tokenizer's training corpus)",
        "prior_check": prior_check(tokenizer_json),
        "always": "special and added tokens (EOS, chat, FIM) and pure-whitespace tokens",
        "command": command, "earlier_commands": state.get("commands", []), "made": time.strftime("%Y-%m-%d"),
    }
    table = {"format": vocab_trim.TABLE_FORMAT, "meta": meta, "always": vocab_trim.always_kept_ids(tokenizer),
             "observed": observed, "counts": [counts[i] for i in observed]}
    args.out.write_text(json.dumps(table, separators=(",", ":")) + "\n", encoding="utf-8")
    return meta


def earlier_state(path: Path) -> dict:
    """The generation state of an earlier run, from its counts file or from the table it made."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != vocab_trim.TABLE_FORMAT:
        return data
    meta = data["meta"]
    return {"counts": dict(zip(data["observed"], data["counts"])), "batches": meta["batches"], "rows": meta["rows"],
            "tokens": meta["generated_tokens"], "seconds": float(meta["generation_seconds"]),
            "modes": list(meta["modes"]), "commands": [*meta.get("earlier_commands", []), meta["command"]]}


def load_target():
    """The packaged pair's target (as loaded, fp32) and tokenizer alone (the draft is never needed here: half the
    memory)."""
    from specviz.models.gguf_file import GGUFModelFile
    from specviz.models.gguf_loader import load_gguf_model
    from specviz.models.gguf_pair import tokenizer_of
    from specviz.models.loading import ModelPair
    from specviz.models.packaged import PACKAGED_PAIR_NAME, packaged_gguf

    file = GGUFModelFile(packaged_gguf("target"))
    cpu = torch.device("cpu")
    pair = ModelPair(target=load_gguf_model(file, "as-loaded", torch.float32)[0], draft=None, tokenizer=tokenizer_of(file),
                     name=PACKAGED_PAIR_NAME, device=cpu, dtype=torch.float32, load_seconds=0.0)
    return pair, file.tokenizer_folder() / "tokenizer.json"


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python scripts/make_vocab.py " + " ".join(sys.argv[1:] if argv is None else argv)
    pair, tokenizer_json = load_target()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.from_counts:
        state = json.loads(args.from_counts.read_text(encoding="utf-8"))
    else:
        state = earlier_state(args.resume) if args.resume else {"counts": {}, "batches": 0, "rows": 0,
                                                                 "tokens": 0, "seconds": 0.0}
        with torch.inference_mode():
            generate_counts(args, pair, state)
    meta = write_table(args, pair.tokenizer, tokenizer_json, pair.target.config.vocab_size, state, command)
    if not args.from_counts and args.counts.exists():
        args.counts.unlink()
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
