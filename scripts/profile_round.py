"""Where does a specviz round spend its time? Forward costs, the glue's pieces, then a profiled run.

    python scripts/profile_round.py                       # the packaged pair, greedy, K 3, 64 tokens
    python scripts/profile_round.py --drafter hybrid_trimmed --temperature 0.7 --no-profile

Prints, in one run: the bare forward costs (c and the verify's cost at 2..K+1 rows), the sampling pieces a round calls,
bench methods side by side (tokens/s; by default the target alone and specviz without and with its trace), then
torch.profiler's and cProfile's tables of runs with --drafter (skipped with --no-profile).
"""
import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

from specviz.bench import METHODS, default_prompts_file, forward_costs, load_prompts, run_method
from specviz.engine.options import Chain, decode_options
from specviz.engine.sampling import SamplingConfig, draw, probabilities
from specviz.generate import speculative_generate
from specviz.models.loading import load_pair


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=3, help="draft tokens a round (default 3)")
    ap.add_argument("--drafter", default="model", choices=("model", "ngram", "hybrid", "trimmed", "hybrid_trimmed"),
                    help="the profiled runs' drafter (default model)")
    ap.add_argument("--methods", nargs="+", default=["target", "specviz_notrace", "specviz"], choices=METHODS,
                    help="the bench methods run side by side (default: target specviz_notrace specviz)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--prompt-index", type=int, default=0, help="which bench prompt (default the first)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiled runs")
    args = ap.parse_args()
    prompts = load_prompts(default_prompts_file())
    if not 0 <= args.prompt_index < len(prompts):
        ap.error(f"--prompt-index must be between 0 and {len(prompts) - 1}")

    t = time.perf_counter()
    pair = load_pair()
    print(f"load {time.perf_counter() - t:.1f}s  {pair.name} {pair.device} {pair.dtype} "
          f"threads={torch.get_num_threads()}", flush=True)
    T, D = pair.target, pair.draft
    ids = pair.encode_chat(prompts[args.prompt_index].text)
    sampling = SamplingConfig(args.temperature)
    options = decode_options(None, sampling=sampling, max_new_tokens=args.max_new_tokens, ignore_eos=True,
                             tokenizer=pair.tokenizer, drafting=Chain(args.k, None, args.drafter))
    print("prompt tokens", len(ids))

    def med(f, n=7):
        xs = []
        for _ in range(n):
            t0 = time.perf_counter(); f(); xs.append(time.perf_counter() - t0)
        return statistics.median(xs)

    with torch.inference_mode():
        fc = forward_costs(T, D, ids, range(1, args.k + 1), repeats=5)
        print(f"target fwd 1 tok {fc.target_1 * 1e3:.1f} ms; draft fwd 1 tok {fc.draft_1 * 1e3:.1f} ms; c={fc.c:.3f}")
        for k, v in fc.target_k.items():
            print(f"  target fwd {k + 1} tok {v * 1e3:.1f} ms  verify cost {v / fc.target_1:.3f}")
        V = T.config.vocab_size
        rows = torch.randn(args.k + 1, V, dtype=pair.dtype)
        g = torch.Generator().manual_seed(0)
        print(f"probabilities over {args.k + 1} rows {med(lambda: probabilities(rows, sampling)) * 1e3:.2f} ms; "
              f"draw one row {med(lambda: draw(rows[:1], sampling, g)) * 1e3:.2f} ms; record's softmax + top-5 "
              f"{med(lambda: torch.softmax(rows.float(), -1).topk(5, dim=-1)) * 1e3:.2f} ms")

    # side by side in one run (by default the target alone, specviz without its trace, specviz with it)
    for method in args.methods:
        r = run_method(method, T, D, ids, args.k, options)
        print(f"{method:24s} {r.tokens_per_s:6.2f} tok/s  tau={r.tau:.2f} acceptance={r.acceptance_rate:.2f}", flush=True)

    rounds = list(speculative_generate(T, D, ids, decode_options(options, record=False)))
    ds = sum(r.draft_seconds for r in rounds); vs = sum(r.verify_seconds for r in rounds)
    tot = sum(r.seconds for r in rounds)
    print(f"rounds={len(rounds)} draft {ds:.2f}s verify {vs:.2f}s the rest {tot - ds - vs:.3f}s total {tot:.2f}s")
    if args.no_profile:
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        list(speculative_generate(T, D, ids, decode_options(options, record=False)))
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22))
    pr = cProfile.Profile(); pr.enable()
    list(speculative_generate(T, D, ids, options))
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
    print(s.getvalue()[:6000])


if __name__ == "__main__":
    main()
