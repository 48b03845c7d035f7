"""Where does a specviz round spend its time? Side-by-side micro timings + torch.profiler + cProfile."""
import cProfile, io, pstats, statistics, time
import torch
from specviz.models.loading import load_pair
from specviz.engine.sampling import SamplingConfig, probabilities, sample
from specviz.engine.options import DecodeOptions
from specviz.engine.speculative import speculative_generate
from specviz.bench import run_method, forward_costs, load_prompts, default_prompts_file

t = time.perf_counter()
pair = load_pair()
print(f"load {time.perf_counter()-t:.1f}s  {pair.name} {pair.device} {pair.dtype} threads={torch.get_num_threads()}", flush=True)
T, D, tok = pair.target, pair.draft, pair.tokenizer
prompt = load_prompts(default_prompts_file())[0]
ids = pair.encode_chat(prompt.text)
print("prompt tokens", len(ids))

# --- micro timings of the pieces of one round, interleaved, medians of 7
def med(f, n=7):
    xs = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); xs.append(time.perf_counter() - t0)
    return statistics.median(xs)

V = T.config.vocab_size
with torch.inference_mode():
    fc = forward_costs(T, D, ids, [1, 2, 4, 6, 8], repeats=5)
    print(f"target fwd 1 tok {fc.target_1*1e3:.1f} ms; draft fwd 1 tok {fc.draft_1*1e3:.1f} ms; c={fc.c:.3f}")
    for k, v in fc.target_k.items():
        print(f"  target fwd {k+1} tok {v*1e3:.1f} ms  verify_cost={v/fc.target_1:.3f}")
    lg = torch.randn(V, dtype=pair.dtype)
    lg5 = torch.randn(5, V, dtype=pair.dtype)
    g = torch.Generator().manual_seed(0)
    for name, cfg in [("greedy", SamplingConfig()), ("T0.7", SamplingConfig(0.7)), ("T0.7 top_p0.9", SamplingConfig(0.7, 0, 0.9)), ("T0.7 top_k50", SamplingConfig(0.7, 50))]:
        a = med(lambda: probabilities(lg, cfg)); b = med(lambda: probabilities(lg5, cfg))
        q = probabilities(lg[None], cfg)
        c = med(lambda: sample(q, g))
        print(f"probabilities[{name}] 1 row {a*1e3:.2f} ms, 5 rows {b*1e3:.2f} ms; multinomial 1 row {c*1e3:.2f} ms")
    P = torch.rand(5, V); Q = torch.rand(4, V)
    r = med(lambda: torch.clamp(P[:4] - Q, min=0.0).sum(-1))
    print(f"residual over 4x{V}: {r*1e3:.2f} ms")
    sm = med(lambda: torch.softmax(lg5.float(), -1)); tk = med(lambda: torch.softmax(lg5.float(), -1).topk(5, dim=-1))
    print(f"record: softmax 5 rows {sm*1e3:.2f} ms, +topk {tk*1e3:.2f} ms")

# --- side-by-side: target alone vs specviz K=4 notrace vs trace, greedy, 64 tokens
for cfg in (SamplingConfig(), SamplingConfig(0.7)):
    res = {}
    for m in ("target", "specviz_notrace", "specviz", "hf_assisted", "hf_generate"):
        r = run_method(m, T, D, ids, 4, DecodeOptions(sampling=cfg, max_new_tokens=64, tokenizer=tok))
        res[m] = r
        print(f"T={cfg.temperature} {m:16s} {r.tokens_per_s:6.2f} tok/s  tau={r.tau:.2f} acc={r.acceptance_rate:.2f} alpha={r.alpha:.2f} first={r.first_emit_seconds:.2f}s", flush=True)

# --- profile one specviz notrace run (greedy K=4 64 tokens): where per-round time goes
rounds = list(speculative_generate(T, D, ids, k=4, max_new_tokens=64, ignore_eos=True, record=False))
ds = sum(r.draft_seconds for r in rounds); vs = sum(r.verify_seconds for r in rounds); tot = sum(r.seconds for r in rounds)
print(f"rounds={len(rounds)} draft {ds:.2f}s verify {vs:.2f}s bookkeeping {tot-ds-vs:.3f}s total {tot:.2f}s")
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as prof:
    list(speculative_generate(T, D, ids, k=4, max_new_tokens=64, ignore_eos=True, record=False))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22))
pr = cProfile.Profile(); pr.enable()
list(speculative_generate(T, D, ids, k=4, max_new_tokens=64, ignore_eos=True, record=True, tokenizer=tok))
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30); print(s.getvalue()[:6000])
