"""`python -m specviz generate`: run the decoder from a terminal, round by round."""
from __future__ import annotations

import argparse
import sys
import time

from ..runtime.decoding import COMPILE_CHOICES
from ..runtime.report import Reporting, RunReport, run_to_end
from ..engine.drafters import DRAFTERS
from ..engine.options import HYBRID_DRAFTERS
from ..limits import CLI_MAX_NEW_TOKENS, CLI_MAX_PROMPT_CHARS, MAX_K, MAX_TEMPERATURE
from ..engine.sampling import SamplingConfig
from ..trace.records import Trace, first_difference, metrics
from .args import Parser, add_weight_options, bounded, compile_refusal, weight_options


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m specviz", description="Speculative decoding, round by round.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    gen = sub.add_parser("generate", help="generate text and show every draft/verify round")
    # The other commands parse their own arguments (specviz/__main__.py dispatches them before this
    # parser runs); they are listed here so that --help and a mistyped command name them all.
    for name, what in (("bench", "throughput of every decoder versus K, with an HTML report"),
                       ("agreement", "how often greedy speculative output equals the target alone"),
                       ("costs", "c, verify_cost and theoretical speedup of known architectures, offline"),
                       ("prepare", "convert the packaged model pair into the cache, once"),
                       ("export", "a trace file as one HTML page that replays the run offline")):
        sub.add_parser(name, help=what, add_help=False)
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--raw", action="store_true", help="feed the prompt as raw text (no chat template)")
    gen.add_argument("--draft", default=None, help="draft model: Hub id, local folder or .gguf file (default: packaged pair)")
    gen.add_argument("--target", default=None, help="target model: Hub id, local folder or .gguf file (default: packaged pair)")
    gen.add_argument("--k", type=bounded(int, 1, MAX_K, "--k"), default=3,
                     help="draft length (default 3: a 4-bit target on a CPU verifies 3 drafts for about 1.3x a token, 4 for 2x)")
    gen.add_argument("--temperature", type=bounded(float, 0.0, MAX_TEMPERATURE, "--temperature"), default=0.0)
    gen.add_argument("--top-k", type=bounded(int, 0, 1_000_000, "--top-k"), default=0)
    gen.add_argument("--top-p", type=bounded(float, 1e-6, 1.0, "--top-p"), default=1.0)
    gen.add_argument("--max-new-tokens", type=bounded(int, 1, CLI_MAX_NEW_TOKENS, "--max-new-tokens"), default=64)
    gen.add_argument("--seed", type=bounded(int, 0, 2**63 - 1, "--seed"), default=0)
    gen.add_argument("--adaptive", metavar="T", type=bounded(float, 0.0, 1.0, "--adaptive"), default=None,
                     help="adaptive draft length: stop a round's drafting once the draft's confidence < T "
                          "(K is then a maximum; 0.6 measured well on the packaged pair)")
    gen.add_argument("--drafter", choices=DRAFTERS, default="model",
                     help="who proposes the drafts: model (the draft model, default), ngram (prompt lookup: what "
                          "followed the last n-gram earlier in the prompt or output; no draft model), hybrid "
                          "(prompt lookup when its match is long enough, else the draft model), trimmed (the "
                          "draft model with its output layer cut to the 32,768 most frequent tokens; packaged "
                          "Qwen2.5 tokenizer) or hybrid_trimmed (the hybrid with that trimmed draft)")
    gen.add_argument("--lookup-k", type=bounded(int, 1, MAX_K, "--lookup-k"), default=None, metavar="N",
                     help="with --drafter hybrid or hybrid_trimmed: the most tokens a round drafted by prompt "
                          "lookup proposes (its model rounds stay at --k; default: --k)")
    gen.add_argument("--json", metavar="FILE", help="write the full trace as JSON")
    gen.add_argument("--compare", action="store_true", help="also run the target alone and print the speedup")
    gen.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: automatic)")
    gen.add_argument("--dtype", default=None, choices=["fp32", "bf16", "fp16"], help="default: automatic")
    add_weight_options(gen)
    gen.add_argument("--compile", choices=COMPILE_CHOICES, default="auto",
                     help="static KV caches and CUDA-graph forwards (on: torch.compile; graphs: plain CUDA graphs "
                          "without it, as on ZeroGPU), compiled and captured before "
                          "the timed run; auto = on with CUDA, off on a CPU (default: auto)")
    return parser


def round_line(rnd, text_of) -> str:
    """One round as one terminal line: a mark per draft token (✓ accepted, ✗ rejected, · discarded), timings, text."""
    marks = "".join({"accepted": "✓", "rejected": "✗", "discarded": "·"}[rnd.verdict(i)]
                    for i in range(rnd.k))
    how = ("correction" if rnd.correction else "bonus" if rnd.bonus else "eos")
    # Under --drafter hybrid a round is drafted by one or the other: say when it was prompt lookup.
    lookup = " ngram" if rnd.drafted and all(getattr(t, "source", "model") == "ngram" for t in rnd.drafted) else ""
    return (f"round {rnd.index + 1:>3}  K={rnd.k}  [{marks or '-':<{max(rnd.k, 1)}}]{lookup}  "
            f"+{len(rnd.emitted)} ({how})  draft {rnd.draft_seconds * 1000:6.0f} ms  "
            f"verify {rnd.verify_seconds * 1000:6.0f} ms  {text_of(rnd.emitted)!r}")


def _parse(parser: argparse.ArgumentParser, argv) -> tuple[argparse.Namespace, SamplingConfig]:
    """The arguments, checked; a bad one exits (SystemExit 2) after one line on stderr."""
    args = parser.parse_args(argv)
    if not args.prompt.strip():
        parser.error("--prompt is empty")
    if len(args.prompt) > CLI_MAX_PROMPT_CHARS:
        parser.error(f"--prompt is {len(args.prompt)} characters; the limit is {CLI_MAX_PROMPT_CHARS}")
    refusal = compile_refusal(args.compile, args.device)
    if refusal:
        parser.error(refusal)
    if args.drafter == "ngram" and args.adaptive is not None:
        parser.error("--adaptive stops on the draft model's confidence; --drafter ngram has no draft model")
    if args.lookup_k is not None and args.drafter not in HYBRID_DRAFTERS:
        parser.error("--lookup-k sets the lookup rounds of --drafter hybrid (or hybrid_trimmed)")
    try:
        sampling = SamplingConfig(args.temperature, args.top_k, args.top_p)
    except ValueError as e:
        parser.error(str(e))
    return args, sampling


def main(argv: list[str] | None = None) -> int:
    """`python -m specviz generate ...`; returns the exit code (2 for bad arguments or models)."""
    try:
        args, sampling = _parse(build_parser(), argv)
    except SystemExit as e:   # a bad argument (already reported in one line) or --help
        return int(e.code or 0)
    pair = _load(args)
    if pair is None:
        return 2
    ids = pair.encode(args.prompt) if args.raw else pair.encode_chat(args.prompt)
    context = getattr(pair.target.config, "max_position_embeddings", None)
    if context and len(ids) + args.max_new_tokens > context:
        print(f"specviz: error: the prompt has {len(ids)} tokens; with --max-new-tokens "
              f"{args.max_new_tokens} that exceeds the model's context of {context}", file=sys.stderr)
        return 2
    _announce(args, pair, sampling)
    rounds, report, wall = _decode(args, pair, ids, sampling)
    output = [t for r in rounds for t in r.emitted]
    m = metrics(rounds, seconds=wall)
    print("\n" + pair.decode(output) + "\n")
    print(f"speculative: {m['tokens']} tokens in {m['rounds']} rounds, acceptance rate {m['acceptance_rate']:.3f}, "
          f"tau {m['tau']:.2f} tokens/round, {m['tokens_per_s']:.2f} tokens/s "
          f"(prefill {report.seconds('prefill_seconds'):.2f} s"
          + (f", compile and graph capture {report.warmup_seconds:.1f} s before it"
             if report.warmup_seconds is not None else "")
          + (f", the drafter built in {report.drafter_seconds:.1f} s before it"
             if report.seconds("drafter_seconds") >= 0.1 else "") + ")")
    if report.graphs_fallback:
        print(f"capturing the CUDA graphs failed ({report.graphs_fallback}): this run decoded with eager forwards",
              file=sys.stderr)
    if args.json:
        _write_trace(args, pair, ids, sampling, rounds, output, report)
    if args.compare:
        _compare(args, pair, ids, sampling, output, m["tokens_per_s"])
    return 0


def _load(args):
    """The pair the arguments name, with the loader's progress on stderr; None (said in one line) if it cannot load."""
    # Imported here so that argument errors answer at once, without loading torch models.
    from ..models.loading import ModelLoadError, load_pair

    def progress(fraction, message):
        print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)

    try:
        return load_pair(draft=args.draft, target=args.target, device=args.device, dtype=args.dtype,
                         progress=progress, weights=weight_options(args))
    except ModelLoadError as e:
        print(f"specviz: error: {e}", file=sys.stderr)
        return None


def _announce(args, pair, sampling: SamplingConfig) -> None:
    """What is about to run, on stderr: the pair, where and how it is stored, K, the drafter, the sampling."""
    from ..runtime.decoding import resolve_forwards

    forwards = resolve_forwards(args.compile, pair.device)
    compiled = forwards.compiled
    print(f"{pair.name} on {pair.device} ({str(pair.dtype).removeprefix('torch.')}, "
          f"{pair.linear_path} linear kernels, draft weights {pair.draft_weights}, target weights "
          f"{pair.weights_label()}), K={args.k}, "
          f"drafter {args.drafter}, {'greedy' if sampling.greedy else sampling}, "
          f"{forwards.backend} forwards", file=sys.stderr)
    if compiled:
        print("compiling and capturing the forwards before the timed run (once per process and shape) ...",
              file=sys.stderr, flush=True)


def _decode(args, pair, ids: list[int], sampling: SamplingConfig) -> tuple[list, RunReport, float]:
    """The speculative run, one line per round on stdout: (rounds, the decoder's report, decode wall seconds)."""
    from ..generate import speculative_generate

    rounds = []
    start = time.perf_counter()
    draft = None if args.drafter == "ngram" else pair.draft
    loop = Reporting(speculative_generate(pair.target, draft, ids, k=args.k, sampling=sampling,
                                          max_new_tokens=args.max_new_tokens, seed=args.seed,
                                          tokenizer=pair.tokenizer, eos_token_id=pair.eos_token_ids,
                                          adaptive_threshold=args.adaptive, drafter=args.drafter,
                                          compile=args.compile, lookup_k=args.lookup_k))
    for rnd in loop:
        rounds.append(rnd)
        print(round_line(rnd, pair.decode), flush=True)
    report = loop.report
    wall = (time.perf_counter() - start - report.seconds("prefill_seconds") - report.seconds("warmup_seconds")
            - report.seconds("drafter_seconds"))   # set-up, not decoding: a trimmed head is built once a process
    return rounds, report, wall


def _write_trace(args, pair, ids, sampling: SamplingConfig, rounds, output: list[int], report: RunReport) -> None:
    draft_name = "prompt lookup (ngram)" if args.drafter == "ngram" else pair.draft_name
    if args.drafter in HYBRID_DRAFTERS:
        draft_name += f" + prompt lookup ({args.drafter})"
    trace = Trace(prompt=args.prompt, prompt_ids=list(ids), draft_model=draft_name,
                  target_model=pair.target_name, k=args.k, max_new_tokens=args.max_new_tokens, seed=args.seed,
                  sampling=sampling.to_dict(), rounds=rounds, output_text=pair.decode(output),
                  prefill_seconds=report.seconds("prefill_seconds"), device=str(pair.device), dtype=str(pair.dtype),
                  adaptive_threshold=args.adaptive, lookup_k=args.lookup_k)
    with open(args.json, "w", encoding="utf-8") as f:
        f.write(trace.to_json(indent=1))
    print(f"trace written to {args.json}", file=sys.stderr)


def _compare(args, pair, ids, sampling: SamplingConfig, output: list[int], tokens_per_s: float) -> None:
    """--compare: the target alone on the same prompt and settings; speedup, and for greedy the first difference."""
    from ..engine.baseline import autoregressive_generate
    from ..runtime.decoding import resolve_forwards
    from ..viz.html import LIMIT_SENTENCES
    from ..runtime.invariance import identity_limit
    from ..strings import t

    start = time.perf_counter()
    steps, base = run_to_end(autoregressive_generate(pair.target, ids, sampling=sampling,
                                                     max_new_tokens=args.max_new_tokens, seed=args.seed,
                                                     eos_token_id=pair.eos_token_ids, compile=args.compile))
    base_wall = time.perf_counter() - start - base.seconds("prefill_seconds") - base.seconds("warmup_seconds")
    base_ids = [s.token_id for s in steps]
    base_rate = len(base_ids) / base_wall
    weights = pair.weights_label()
    print(f"target alone (the same target, weights {weights}): {len(base_ids)} tokens, {base_rate:.2f} tokens/s; "
          f"speedup {tokens_per_s / base_rate:.2f}x")
    if sampling.greedy:
        at = first_difference(output, base_ids)
        if at is None:
            print("greedy outputs: identical")
        else:
            limit = identity_limit(pair.target, resolve_forwards(args.compile, pair.device).compiled)
            print(f"greedy outputs: differ from token {at + 1} "
                  f"({t(LIMIT_SENTENCES[limit], weights=weights)})")
