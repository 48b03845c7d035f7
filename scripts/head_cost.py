"""Cost of the output layer, multinomial vs argmax: the measurements behind the greedy fast path.

    python scripts/head_cost.py                 # the packaged pair; the trimmed head over its first 32k rows
    python scripts/head_cost.py --subset 16384 --repeats 15
"""
import argparse
import statistics
import time

import torch
from transformers import DynamicCache

from specviz.engine.vocab_trim import trimmed_head
from specviz.models.loading import load_pair


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", type=int, default=32768, help="rows of the trimmed head timed (default 32768)")
    ap.add_argument("--repeats", type=int, default=9, help="timings a median is taken over (default 9)")
    args = ap.parse_args()
    pair = load_pair(); T, D = pair.target, pair.draft
    ids = torch.tensor([pair.encode_chat("Write a Python function that returns the n-th Fibonacci number.")])
    def med(f, n=args.repeats):
        xs = []
        for _ in range(n):
            t0 = time.perf_counter(); f(); xs.append(time.perf_counter() - t0)
        return statistics.median(xs)
    with torch.inference_mode():
        for name, M in (("draft", D), ("target", T)):
            cache = DynamicCache(); M(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1); n = ids.shape[1]
            x = ids[:, -1:]
            def full():
                M(input_ids=x, cache=cache, use_cache=True, logits_to_keep=1); cache.crop(-(cache.get_seq_length() - n))
            def body():
                M.model(input_ids=x, cache=cache, use_cache=True); cache.crop(-(cache.get_seq_length() - n))
            h = torch.randn(1, M.config.hidden_size, dtype=pair.dtype)
            W = M.lm_head.weight   # dense values (a packed 4-bit layer dequantizes them): for the parameter count
            head = lambda: M.lm_head(h)   # the output layer on its own kernel path (q4a8 where the load chose it)
            trimmed = trimmed_head(M, torch.arange(args.subset))   # the trimmed drafter's head, on the same path
            sub = lambda: trimmed(h)
            print(f"{name}: full fwd {med(full)*1e3:.1f} ms, body only {med(body)*1e3:.1f} ms, lm_head {med(head)*1e3:.1f} ms, lm_head over its first {args.subset} rows {med(sub)*1e3:.1f} ms; head {W.numel()/1e6:.0f}M weights (tied={M.config.tie_word_embeddings})")
        V = T.config.vocab_size
        p = torch.softmax(torch.randn(1, V), -1); g = torch.Generator().manual_seed(0)
        print(f"multinomial {med(lambda: torch.multinomial(p, 1, generator=g))*1e3:.2f} ms; argmax {med(lambda: p.argmax(-1))*1e3:.3f} ms; "
              f"cumsum+searchsorted {med(lambda: torch.searchsorted(p.cumsum(-1), torch.rand(1, 1, generator=g)))*1e3:.3f} ms")
        lg = torch.randn(5, V)
        def fast_top_p(lg, top_p=0.9, cand=1024):
            v, i = lg.softmax(-1).topk(cand, -1)
            return v.cumsum(-1)
        print(f"sort 5x{V} {med(lambda: lg.sort(-1))*1e3:.1f} ms; topk(1024) 5 rows {med(lambda: lg.topk(1024, -1))*1e3:.2f} ms")
        print("threads", torch.get_num_threads())


if __name__ == "__main__":
    main()
