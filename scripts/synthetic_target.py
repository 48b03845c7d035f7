"""A 7B-class target's costs on this CPU, from a synthetic GGUF of Qwen2.5-7B-Instruct's shape (random valid blocks).

Why: model drafting pays on a CPU in proportion to how much more the target
reads per token than the draft; the packaged pair (0.5B -> 1.5B, c ~ 0.30) tops out near 1.4-1.5x, a 7B target
should do far better, and no 7B model is reachable from these machines. So this measures the costs - not the
acceptance, which needs real weights - of a target with Qwen2.5-7B-Instruct's exact shape:

  1. writes (gguf.GGUFWriter, streamed) a GGUF of that shape (qwen2; hidden 3584, 28 layers, 28 heads, 4 kv heads,
     intermediate 18944, rope theta 1e6, rms eps 1e-6, q/k/v biases), each tensor of the type the packaged Q4_K_M
     target's llama.cpp recipe gave the tensor of the same name (both have 28 layers: mostly Q4_K; attn_v and
     ffn_down Q6_K in 14 layers; output Q6_K; token_embd Q4_K), with random but valid blocks written as raw bytes
     (fp16 d/dmin small and positive, random 6-bit scales, random codes), F32 norms (ones) and biases (small); its
     tokenizer fields copied from the packaged target's GGUF, so its vocabulary is the packaged draft's: 151,936
     embedding rows (Qwen2.5-7B's own table has 152,064; the extra 128 are padding no token uses). ~4.7 GB; a file
     already written with the same parameters is kept;
  2. loads it as load_pair would (GGUFModelFile + load_gguf_model, q4a8, the pair's dtype, then the load's
     read-ahead choice and the lean layer stack) beside the packaged draft (q4a8, its own grid), and reports RSS;
  3. times bare cached forwards as the decoder runs them (specviz.bench.costs.forward_costs: one token, and 2..K+1
     rows, interleaved, medians), against the memory roofline (bytes read per token / read bandwidth measured here,
     specviz.bench.roofline), and turns c and the verify costs into the chain theory (specviz.theory) at an
     acceptance alpha measured on the real packaged pair (0.84, the bench's own figure on this CPU);
  4. with --bench, runs `python -m specviz bench --draft <packaged draft> --target <synthetic>` once, briefly
     (its speeds only: acceptance on random weights means nothing).

Run it with nothing else on the machine (timings move with the neighbours):

    PYTHONPATH=. python scripts/synthetic_target.py [--out /tmp/synth/qwen2.5-7b-shape-q4_k_m.gguf] [--alpha 0.84]
        [--repeats 7] [--k-max 8] [--bench]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

DEFAULT_OUT = "/tmp/synth/qwen2.5-7b-shape-q4_k_m.gguf"
FORMAT = 1   # bump when what is written changes: a file of another format is written again

# Qwen2.5-7B-Instruct's config.json (vocab: see VOCAB)
SHAPE = {"hidden": 3584, "layers": 28, "heads": 28, "kv_heads": 4, "intermediate": 18944, "rope_theta": 1e6,
         "rms_eps": 1e-6, "context": 32768}
HF_VOCAB = 152064        # rows of Qwen2.5-7B's own embedding and output (padded to a multiple of 128)
VOCAB = 151936           # the packaged pair's tokenizer: what the synthetic file gets, so the packaged draft fits it
PROMPT = "Write a Python function that checks whether a string is a palindrome, ignoring case and punctuation."
Q4K_BYTES, Q6K_BYTES, QK = 144, 210, 256


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"the synthetic GGUF (default {DEFAULT_OUT})")
    ap.add_argument("--seed", type=int, default=0, help="random blocks' seed (default 0)")
    ap.add_argument("--alpha", type=float, default=0.84,
                    help="per-token acceptance for the theory: the packaged pair's measured 0.84")
    ap.add_argument("--k-max", type=int, default=8, help="draft lengths 1..K_MAX (verify at 2..K_MAX+1 rows)")
    ap.add_argument("--repeats", type=int, default=7, help="timed repetitions of every forward; medians (default 7)")
    ap.add_argument("--pairs", type=int, default=9,
                    help="one-token steps timed each between two read-bandwidth probes, for the roofline (default 9)")
    ap.add_argument("--no-packaged-target", action="store_true",
                    help="skip timing the packaged 1.5B target beside it (its column in the tables)")
    ap.add_argument("--bench", action="store_true",
                    help="also run `python -m specviz bench` once on the packaged draft and the synthetic target")
    ap.add_argument("--bench-prompts", type=int, default=2)
    ap.add_argument("--bench-tokens", type=int, default=24)
    ap.add_argument("--bench-k", type=int, nargs="+", default=[4])
    ap.add_argument("--max-rss-gb", type=float, default=8.0,
                    help="stop (this process, or the bench's) when its private memory passes this (default 8)")
    args = ap.parse_args(argv)
    if not 0 <= args.alpha < 1 or args.k_max < 1 or args.repeats < 1:
        ap.error("--alpha in [0, 1), --k-max and --repeats at least 1")
    return args


# ----------------------------------------------------------------------------------------------- memory

def memory(pid: int | str = "self") -> dict[str, float]:
    """GB from /proc/<pid>/status: VmRSS (resident now), VmHWM (peak resident), RssAnon (private), RssFile (mapped
    file pages: the GGUF's pages the loader touched, shared with the page cache and reclaimable)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024 / 1e9
    except OSError:
        pass
    return out


def mem_line(m: dict[str, float]) -> str:
    return (f"RSS {m.get('VmRSS', 0):.2f} GB (private {m.get('RssAnon', 0):.2f}, mapped file pages "
            f"{m.get('RssFile', 0):.2f}), peak RSS {m.get('VmHWM', 0):.2f} GB")


def private_memory_limit(limit_gb: float):
    """A load_gguf_model progress callback that stops the run if its private memory passes `limit_gb` (the load
    itself lets go of the file pages it has read, layer by layer: GGUFModelFile.drop_read_pages)."""
    def progress(fraction: float, message: str) -> None:
        if memory().get("RssAnon", 0) > limit_gb:
            sys.exit(f"stopped: private memory {memory()['RssAnon']:.1f} GB passed {limit_gb} GB while loading")
    return progress


# ----------------------------------------------------------------------------------------------- writing

def q4k_blocks(rng, rows: int, cols: int):
    """[rows, cols/256*144] uint8: valid Q4_K blocks (d, dmin fp16 small positive; 12 bytes of 6-bit scales and mins;
    128 bytes of 4-bit codes), values ~ d*sc*q - dmin*m with a mean near 0 and |w| < 0.1."""
    import numpy as np

    n = rows * cols // QK
    blocks = rng.integers(0, 256, size=(n, Q4K_BYTES), dtype=np.uint8)
    d = (rng.uniform(0.5, 1.5, n) * 1e-4).astype(np.float16)
    dmin = (d.astype(np.float32) * 7.5).astype(np.float16)   # E[sc*q] = 31.5*7.5 against E[m] = 31.5
    blocks[:, 0:2] = d.view(np.uint8).reshape(n, 2)
    blocks[:, 2:4] = dmin.view(np.uint8).reshape(n, 2)
    return blocks.reshape(rows, -1)


def q6k_blocks(rng, rows: int, cols: int):
    """[rows, cols/256*210] uint8: valid Q6_K blocks (128 bytes low 4 bits, 64 high 2 bits, 16 int8 scales, fp16 d
    small positive), values d*scale*(q-32) with |w| < 0.05."""
    import numpy as np

    n = rows * cols // QK
    blocks = rng.integers(0, 256, size=(n, Q6K_BYTES), dtype=np.uint8)
    d = (rng.uniform(0.5, 1.5, n) * 1e-5).astype(np.float16)
    blocks[:, 208:210] = d.view(np.uint8).reshape(n, 2)
    return blocks.reshape(rows, -1)


def packaged_types(reference) -> dict[str, str]:
    """Tensor name -> type name in the packaged Q4_K_M target (llama.cpp's recipe for a 28-layer qwen2)."""
    return {t.name: t.tensor_type.name for t in reference.tensors}


def tensor_plan(types: dict[str, str]) -> list[tuple[str, tuple[int, int], str]]:
    """(GGUF name, (rows, cols), type) of every tensor, in convert_hf_to_gguf's order; (rows,) for vectors."""
    h, f, L = SHAPE["hidden"], SHAPE["intermediate"], SHAPE["layers"]
    kv = SHAPE["kv_heads"] * (h // SHAPE["heads"])
    plan = [("token_embd.weight", (VOCAB, h), types["token_embd.weight"])]
    for i in range(L):
        b = f"blk.{i}."
        plan += [(b + "attn_norm.weight", (h,), "F32"),
                 (b + "attn_q.weight", (h, h), types[b + "attn_q.weight"]), (b + "attn_q.bias", (h,), "F32"),
                 (b + "attn_k.weight", (kv, h), types[b + "attn_k.weight"]), (b + "attn_k.bias", (kv,), "F32"),
                 (b + "attn_v.weight", (kv, h), types[b + "attn_v.weight"]), (b + "attn_v.bias", (kv,), "F32"),
                 (b + "attn_output.weight", (h, h), types[b + "attn_output.weight"]),
                 (b + "ffn_norm.weight", (h,), "F32"),
                 (b + "ffn_gate.weight", (f, h), types[b + "ffn_gate.weight"]),
                 (b + "ffn_up.weight", (f, h), types[b + "ffn_up.weight"]),
                 (b + "ffn_down.weight", (h, f), types[b + "ffn_down.weight"])]
    plan += [("output_norm.weight", (h,), "F32"), ("output.weight", (VOCAB, h), types["output.weight"])]
    return plan


def tensor_bytes(shape, kind: str) -> int:
    if kind == "F32":
        return 4 * shape[0]
    rows, cols = shape
    return rows * cols // QK * {"Q4_K": Q4K_BYTES, "Q6_K": Q6K_BYTES}[kind]


def params_key(args) -> str:
    return json.dumps({"format": FORMAT, "shape": SHAPE, "vocab": VOCAB, "seed": args.seed}, sort_keys=True)


def existing_params(path: Path) -> str | None:
    """The parameters a complete synthetic file at `path` was written with (None: absent, foreign or cut)."""
    from specviz.models.gguf_file import _reader

    try:
        r = _reader(path)
        field = r.fields.get("specviz.synthetic")
        end = max(int(t.data_offset) + int(t.n_bytes) for t in r.tensors)
        return field.contents() if field is not None and end <= path.stat().st_size else None
    except Exception:   # noqa: BLE001 - not a GGUF, or cut short
        return None


def write_synthetic(args, reference_path: Path) -> dict:
    """Writes the file (streamed: one tensor in memory at a time) unless one with the same parameters is there."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFValueType, GGUFWriter

    from specviz.models.gguf_file import _reader

    out: Path = args.out
    key = params_key(args)
    t0 = time.perf_counter()
    if out.is_file() and existing_params(out) == key:
        return {"written": False, "seconds": time.perf_counter() - t0, "bytes": out.stat().st_size}
    reference = _reader(reference_path)
    plan = tensor_plan(packaged_types(reference))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + f".{os.getpid()}.partial")
    w = GGUFWriter(partial, "qwen2")
    w.add_name("Qwen2.5-7B-Instruct shape, synthetic random Q4_K_M weights (specviz scripts/synthetic_target.py)")
    w.add_context_length(SHAPE["context"])
    w.add_embedding_length(SHAPE["hidden"])
    w.add_block_count(SHAPE["layers"])
    w.add_feed_forward_length(SHAPE["intermediate"])
    w.add_head_count(SHAPE["heads"])
    w.add_head_count_kv(SHAPE["kv_heads"])
    w.add_rope_freq_base(SHAPE["rope_theta"])
    w.add_layer_norm_rms_eps(SHAPE["rms_eps"])
    w.add_file_type(15)   # LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.add_quantization_version(2)
    w.add_string("specviz.synthetic", key)
    for name, field in reference.fields.items():   # the packaged target's tokenizer, whole
        if name.startswith("tokenizer."):
            main = field.types[0]
            sub = field.types[-1] if main == GGUFValueType.ARRAY else None
            w.add_key_value(name, field.contents(), main, sub)
    del reference
    for name, shape, kind in plan:
        raw = None if kind == "F32" else GGMLQuantizationType[kind]
        nbytes = tensor_bytes(shape, kind)
        byte_shape = shape if kind == "F32" else (shape[0], nbytes // shape[0])
        w.add_tensor_info(name, byte_shape, np.dtype(np.float32 if kind == "F32" else np.uint8), nbytes, raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(args.seed)
    for name, shape, kind in plan:
        if kind == "F32":
            data = (np.ones(shape, np.float32) if name.endswith("norm.weight")
                    else rng.normal(0, 0.02, shape).astype(np.float32))
        elif kind == "Q4_K":
            data = q4k_blocks(rng, *shape)
        elif kind == "Q6_K":
            data = q6k_blocks(rng, *shape)
        else:
            raise SystemExit(f"the packaged target types {name} {kind}; this script writes Q4_K, Q6_K and F32")
        w.write_tensor_data(data)
        del data
    w.close()
    os.replace(partial, out)
    counts: dict[str, int] = {}
    for _, _, kind in plan:
        counts[kind] = counts.get(kind, 0) + 1
    return {"written": True, "seconds": time.perf_counter() - t0, "bytes": out.stat().st_size, "types": counts}


# ----------------------------------------------------------------------------------------------- measuring

def embedding_overcount(model) -> int:
    """Bytes roofline.bytes_per_token counts for a GGUF-form embedding beyond the one row a token looks up: it
    counts an nn.Embedding by its row, but gguf_loader.GGUFEmbedding is not one, so its whole table is counted."""
    from specviz.models.gguf_loader import GGUFEmbedding

    emb = model.get_input_embeddings()
    if not isinstance(emb, GGUFEmbedding) or emb is model.get_output_embeddings():
        return 0
    return emb.raw.numel() * emb.raw.element_size() - emb.raw[0].numel() * emb.raw.element_size()


def load(path: Path, role: str, dtype, strict_grid: bool, limit_gb: float):
    from specviz.models.gguf_file import GGUFModelFile
    from specviz.models.gguf_loader import load_gguf_model

    t0 = time.perf_counter()
    file = GGUFModelFile(path, role)
    file.meta_folder()   # config, then the tokenizer (each written once into the cache: the first time takes seconds)
    file.tokenizer_folder()
    t1 = time.perf_counter()
    model, counts = load_gguf_model(file, "q4a8", dtype, strict_grid, progress=private_memory_limit(limit_gb))
    t2 = time.perf_counter()
    folder = file.tokenizer_folder()
    del file   # its mapping goes with it: the model holds copies of every byte it needs
    gc.collect()
    return model, counts, folder, t1 - t0, t2 - t1


def bench_run(args, draft_path: Path) -> None:
    """`python -m specviz bench` once on the packaged draft and the synthetic target, its memory sampled."""
    out_dir = args.out.parent / "bench"
    cmd = [sys.executable, "-m", "specviz", "bench", "--draft", str(draft_path), "--target", str(args.out),
           "--limit-prompts", str(args.bench_prompts), "--max-new-tokens", str(args.bench_tokens),
           "--k", *map(str, args.bench_k), "--temperature", "0", "--repeats", "1",
           "--methods", "target", "specviz", "--baselines", "none", "--quiet", "--out", str(out_dir)]
    print(f"\n== python -m specviz bench on the synthetic target ==\n$ {shlex.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak: dict[str, float] = {}
    killed = []

    def sample() -> None:
        while proc.poll() is None:
            m = memory(proc.pid)
            for k, v in m.items():
                peak[k] = max(peak.get(k, 0.0), v)
            if m.get("RssAnon", 0) > args.max_rss_gb and not killed:
                killed.append(m["RssAnon"])
                proc.kill()
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    text = proc.communicate()[0]
    sampler.join()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    print("\n".join(lines[-40:]))
    state = (f"killed: private memory {killed[0]:.1f} GB" if killed else f"exit {proc.returncode}")
    print(f"bench: {state}, {time.perf_counter() - t0:.0f} s; its peak private memory {peak.get('RssAnon', 0):.2f} GB,"
          f" peak mapped file pages {peak.get('RssFile', 0):.2f} GB, peak RSS {peak.get('VmHWM', 0):.2f} GB")


def llamacpp_pairs(path: Path, ids: list[int], threads: int, pairs: int, probe):
    """llama.cpp's own one-token decode of the file (the bench's peer, specviz.bench.llamacpp), timed as specviz's
    is: each step between two read probes (roofline.paired_shares). Returns (pairs, bytes a token reads, why not)."""
    from specviz.bench.llamacpp import peer_for
    from specviz.bench.roofline import paired_shares
    from specviz.models.gguf_file import GGUFModelFile

    peer, why = peer_for(path, threads)
    if peer is None:
        return None, None, why
    tensors = GGUFModelFile(path).tensor_sizes()   # name -> (rows, bytes)
    nbytes = sum(size for _, size in tensors.values())
    if "output.weight" in tensors:   # untied: a token reads one row of the embedding table
        rows, size = tensors["token_embd.weight"]
        nbytes -= size - size // rows
    llm = peer.context(False, len(ids) + pairs + 64)
    llm.reset()
    llm.eval(ids)

    def step() -> float:
        t0 = time.perf_counter()
        llm.eval([ids[-1]])
        return time.perf_counter() - t0

    for _ in range(3):   # warm: its first steps map the file's pages
        step()
    return paired_shares(step, nbytes, pairs, probe), nbytes, None


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from specviz import theory
    from specviz.bench.costs import forward_costs, one_token_timer
    from specviz.bench.roofline import ReadProbe, bytes_per_token, paired_shares, read_bandwidth
    from specviz.models.devices import resolve_device_dtype
    from specviz.models.prepare import prepare_models
    from specviz.runtime.state import runtime_of
    from specviz.models.packaged import packaged_gguf
    from specviz.models.quant import q4a8, read_ahead

    print("$ " + shlex.join([Path(sys.executable).name] + sys.argv))
    device, dtype = resolve_device_dtype("cpu", None)   # load_pair's pick on a CPU: bf16 where it computes it
    why = q4a8.unavailable()
    if why is not None:
        print(f"specviz's q4a8 kernels are unavailable here ({why}); nothing to measure")
        return 1
    target_ref, draft_path = packaged_gguf("target"), packaged_gguf("draft")
    threads = torch.get_num_threads()
    print(f"CPU: {os.cpu_count()} cores, torch {torch.__version__} on {threads} threads, ISA {q4a8.chosen_isa()}, "
          f"dtype {str(dtype).removeprefix('torch.')}")

    # 1. the file
    info = write_synthetic(args, target_ref)
    what = "written" if info["written"] else "kept (same parameters)"
    print(f"\n== synthetic target == {args.out}: {info['bytes'] / 1e9:.2f} GB, {what} in {info['seconds']:.1f} s"
          + (f"; tensors {info['types']}" if "types" in info else ""))
    print(f"   Qwen2.5-7B-Instruct's shape: hidden {SHAPE['hidden']}, {SHAPE['layers']} layers, {SHAPE['heads']} heads "
          f"/ {SHAPE['kv_heads']} kv heads, intermediate {SHAPE['intermediate']}, q/k/v biases, rope theta "
          f"{SHAPE['rope_theta']:g}, rms eps {SHAPE['rms_eps']:g}; types per tensor as the packaged Q4_K_M target's")
    print(f"   vocab {VOCAB}: the packaged pair's tokenizer (copied from its GGUF), so the packaged draft fits; "
          f"Qwen2.5-7B's own embedding and output have {HF_VOCAB} rows (+{HF_VOCAB - VOCAB} padding rows, "
          f"+{(HF_VOCAB - VOCAB) * SHAPE['hidden'] * (Q4K_BYTES + Q6K_BYTES) / QK / 1e6:.1f} MB of a real file)")

    bw = [read_bandwidth()]
    print(f"\nread bandwidth {bw[0] / 1e9:.1f} GB/s (roofline.read_bandwidth, {threads} threads), before loading")

    # 2. the load
    base = memory()
    target, counts, folder, meta_s, load_s = load(args.out, "target", dtype, True, args.max_rss_gb)
    after_target = memory()
    draft, _, _, _, draft_s = load(draft_path, "draft", dtype, False, args.max_rss_gb)
    ahead = read_ahead.choose(target)   # as load_pair: one row's read-ahead timed on the target's products
    t0 = time.perf_counter()
    prepare_models(target, draft)   # as load_pair ends: the runtime configured, the lean stacks built
    lean = [runtime_of(m).lean is not None for m in (target, draft)]
    lean_s = time.perf_counter() - t0
    loaded = memory()
    print(f"\n== load (GGUFModelFile + load_gguf_model, q4a8, {str(dtype).removeprefix('torch.')}) ==")
    print(f"target: {load_s:.1f} s placing {dict(counts)} (+ {meta_s:.1f} s config/tokenizer), the lean stack "
          f"{'built' if lean[0] else 'NOT eligible'}; read-ahead {ahead}")
    print(f"   before: {mem_line(base)}")
    print(f"   target loaded: {mem_line(after_target)}")
    print(f"draft (packaged 0.5B, q4a8, own grid): {draft_s:.1f} s; lean stack {'built' if lean[1] else 'NOT'}; "
          f"lean stacks {lean_s:.1f} s")
    print(f"   both loaded: {mem_line(loaded)}")
    print("   (the load lets go of the file pages it has read layer by layer - GGUFModelFile.drop_read_pages - so RSS "
          "counts what the process holds, not the file it read)")

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    text = tok.apply_chat_template([{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True)
    ids = list(tok.encode(text, add_special_tokens=False))
    ks = list(range(1, args.k_max + 1))

    # 3. the costs (the packaged target after the synthetic one is gone: never both resident)
    t0, load_before = time.perf_counter(), os.getloadavg()[0]
    fc = forward_costs(target, draft, ids, ks, repeats=args.repeats)
    counted = bytes_per_token(target)
    over = embedding_overcount(target)
    nbytes = counted - over
    probe = ReadProbe()   # 0.5 GiB in the weights' pages, allocated once: probed beside every paired step
    pairs = paired_shares(one_token_timer(target, ids), nbytes, args.pairs, probe)
    timing_s, load_after = time.perf_counter() - t0, os.getloadavg()[0]
    peak = memory()
    del target
    gc.collect()
    fc_packaged = nbytes_p = pairs_p = None
    if not args.no_packaged_target:
        packaged, _, _, _, _ = load(target_ref, "target", dtype, True, args.max_rss_gb)
        prepare_models(packaged)
        fc_packaged = forward_costs(packaged, draft, ids, ks, repeats=args.repeats)
        nbytes_p = bytes_per_token(packaged) - embedding_overcount(packaged)
        pairs_p = paired_shares(one_token_timer(packaged, ids), nbytes_p, args.pairs, probe)
        del packaged
    del draft
    gc.collect()
    peer_pairs, peer_bytes, peer_why = llamacpp_pairs(args.out, ids, threads, args.pairs, probe)
    bw.append(read_bandwidth())
    bandwidth = max(bw + [r["bandwidth"] for p in (pairs, pairs_p, peer_pairs) if p for r in p["pairs"]])
    print(f"\n== one-token forward against the roofline ({len(ids)}-token context, medians of {args.repeats}, "
          f"interleaved with the draft's and the verifies'; {timing_s:.0f} s for the synthetic target) ==")
    print(f"load average {load_before:.2f} before timing, {load_after:.2f} after (this run adds ~1-2: above ~2.5 "
          f"another job shared the 2 cores and the times are not the machine's)")
    print(f"read bandwidth {bw[0] / 1e9:.1f} GB/s before loading, {bw[1] / 1e9:.1f} after timing "
          f"(roofline.read_bandwidth): this memory's speed moves within minutes, so the roofline below is paired: "
          f"{args.pairs} one-token steps, each between two probes of 0.5 GiB (roofline.paired_shares), its floor the "
          f"bytes over the faster of its two probes")
    print(f"bytes a token reads: roofline.bytes_per_token {counted / 1e9:.3f} GB, of which {over / 1e9:.3f} GB is the "
          f"GGUF-form embedding table counted whole (a token reads one row): {nbytes / 1e9:.3f} GB")
    cols = [("synthetic 7B shape", nbytes, fc, pairs)] + (
        [("packaged 1.5B", nbytes_p, fc_packaged, pairs_p)] if fc_packaged else [])
    print("| target | GB/token | bandwidth GB/s (pairs: median, range) | roofline ms | one token ms | % of roofline "
          "(median, range) | draft ms | c |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, b, f, pr in cols:
        bws = [r["bandwidth"] / 1e9 for r in pr["pairs"]]
        shares = [r["share"] for r in pr["pairs"]]
        print(f"| {label} | {b / 1e9:.2f} | {pr['bandwidth'] / 1e9:.1f} ({min(bws):.1f}-{max(bws):.1f}) | "
              f"{b / pr['bandwidth'] * 1e3:.1f} | {pr['seconds'] * 1e3:.1f} | {pr['share']:.0%} "
              f"({min(shares):.0%}-{max(shares):.0%}) | {f.draft_1 * 1e3:.1f} | {f.c:.3f} |")
    if peer_pairs:
        bws = [r["bandwidth"] / 1e9 for r in peer_pairs["pairs"]]
        shares = [r["share"] for r in peer_pairs["pairs"]]
        print(f"| llama.cpp's own decode of the same file | {peer_bytes / 1e9:.2f} | {peer_pairs['bandwidth'] / 1e9:.1f} "
              f"({min(bws):.1f}-{max(bws):.1f}) | {peer_bytes / peer_pairs['bandwidth'] * 1e3:.1f} | "
              f"{peer_pairs['seconds'] * 1e3:.1f} | {peer_pairs['share']:.0%} ({min(shares):.0%}-{max(shares):.0%}) "
              f"| - | - |")
        print("   (llama.cpp: llama-cpp-python's Llama.eval of one token after the same prompt, the same threads; its "
              "bytes are the file's tensors, the embedding table one row)")
    else:
        print(f"   llama.cpp's own decode of the same file: not measured ({peer_why})")
    share = pairs["share"]
    print(f"the synthetic 7B target's one-token step reaches {share:.0%} of its roofline, the median of "
          f"{args.pairs} pairs ({'meets' if share >= 0.8 else 'below'} the 80 % aimed at); against the fastest probe "
          f"of the whole run ({bandwidth / 1e9:.1f} GB/s, a moment the step may never have met): "
          f"{nbytes / bandwidth / pairs['seconds']:.0%}")

    print("\n== verify: a forward over K+1 rows / one row ==")
    print("| rows | " + " | ".join(f"{k + 1}" for k in ks) + " |")
    print("|---|" + "---:|" * len(ks))
    for label, _, f, _ in cols:
        print(f"| {label} ms | " + " | ".join(f"{f.target_k[k] * 1e3:.0f}" for k in ks) + " |")
        print(f"| {label} v | " + " | ".join(f"{f.verify_cost(k):.2f}" for k in ks) + " |")

    a = args.alpha
    print(f"\n== chain theory at alpha {a} (specviz.theory: speedup = tau / (K*c + v_K)) ==")
    head = "| K | tau | " + " | ".join(f"v_K {lab.split()[1]} | speedup {lab.split()[1]}" for lab, _, _, _ in cols) \
        + " | speedup 7B if v=1 |"
    print(head)
    print("|---:" * (head.count("|") - 1) + "|")
    for k in ks:
        tau = theory.expected_tokens_per_round(a, k)
        cells = [f"{f.verify_cost(k):.2f} | {theory.expected_speedup(a, k, f.c, f.verify_cost(k)):.2f}x"
                 for _, _, f, _ in cols]
        print(f"| {k} | {tau:.2f} | " + " | ".join(cells) + f" | {theory.expected_speedup(a, k, fc.c):.2f}x |")
    for label, _, f, _ in cols:
        best = max(ks, key=lambda k: theory.expected_speedup(a, k, f.c, f.verify_cost(k)))
        print(f"best K, {label}: {best} -> {theory.expected_speedup(a, best, f.c, f.verify_cost(best)):.2f}x "
              f"(c {f.c:.3f}, v {f.verify_cost(best):.2f}); with v = 1 the best K would be "
              f"{theory.optimal_k(a, f.c, args.k_max)}")
    print("tree theory: specviz.theory has none (chains only); bench.costs.tree_speedup_bound needs a tree's measured "
          "tokens per round, which random weights cannot give")
    print(f"\nmemory with the synthetic target and the draft resident, after timing (and the 0.5 GiB probe): "
          f"{mem_line(peak)}")
    print(f"this process at the end (VmHWM: its peak over the whole run): {mem_line(memory())}")

    if args.bench:
        print(f"\nthis process before the bench: {mem_line(memory())}")
        bench_run(args, draft_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
