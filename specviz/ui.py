"""The Gradio app: layout and event wiring only.

No probability is computed here: the decoder (`speculative_generate`,
`autoregressive_generate`) produces `Round`/`Step` records, `specviz.viz`
turns them into HTML and figures, `specviz.bench.sweep_k` measures the
throughput-vs-K sweep.

Concurrency: models are loaded once per process (`PairCache`, one lock) and
shared by all sessions; each browser session keeps its own trace in `gr.State`
and its own stop flag. Decoding runs in a worker thread that pushes rounds into
a queue, so the page's rendering never sits inside the timed decode loop; the
decode events share one concurrency slot ("decode") so runs and sweeps never
overlap and their timings stay honest.
"""
from __future__ import annotations

import json
import math
import os
import queue
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import gradio as gr

from .baseline import autoregressive_generate
from .models import ModelLoadError
from .sampling import MAX_TEMPERATURE, SamplingConfig
from .speculative import speculative_generate
from .trace import Round, Trace, TraceFormatError, first_difference, metrics
from .viz import charts
from .viz import html as vh

ASSETS = Path(__file__).resolve().parents[1] / "assets"
MAX_PROMPT_CHARS = 8000
MAX_PROMPT_TOKENS = 4096
MAX_NEW_TOKENS = 512
MAX_K_UI = 16
MAX_SWEEP_TOKENS = 256
MAX_TRACE_BYTES = 20 * 1024 * 1024
CHART_INTERVAL_S = 1.0
ADAPTIVE_THRESHOLD = 0.6  # the "adaptive K" switch: measured best on the packaged pair (see README)

PACKAGED = "Qwen2.5-Coder 0.5B → 1.5B (packaged, runs offline)"
CUSTOM = "Custom Hub ids…"
HUB_PRESETS = {
    "Qwen2.5 0.5B → 7B Instruct (Hub)": ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    "SmolLM2 135M → 1.7B Instruct (Hub)": ("HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-1.7B-Instruct"),
}

PairLoader = Callable[[str | None, str | None, Callable[[float, str], None]], Any]

try:  # ZeroGPU on Hugging Face Spaces; a no-op everywhere else
    import spaces  # type: ignore

    _gpu = spaces.GPU(duration=120)
except Exception:  # noqa: BLE001 - not installed, or not on a Space
    def _gpu(fn):
        return fn


class InputError(ValueError):
    """Bad input from the page; the message is shown as is."""


def default_pair_loader(draft: str | None, target: str | None, progress) -> Any:
    from .models import load_pair

    return load_pair(draft, target, progress=progress, allow_local=False)


class PairCache:
    """Model pairs by (draft, target); loaded once per process, under one lock."""

    def __init__(self, loader: PairLoader, max_pairs: int = 2):
        self.loader, self.max_pairs = loader, max_pairs
        self._lock = threading.Lock()
        self._pairs: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, draft: str | None, target: str | None, progress=None) -> Any:
        key = (draft, target)
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            pair = self.loader(draft, target, progress or (lambda f, m: None))
            self._pairs[key] = pair
            while len(self._pairs) > self.max_pairs:
                self._pairs.popitem(last=False)
            return pair


_DEFAULT_CACHE: PairCache | None = None
_DEFAULT_CACHE_LOCK = threading.Lock()


def _default_cache() -> PairCache:
    global _DEFAULT_CACHE
    with _DEFAULT_CACHE_LOCK:
        if _DEFAULT_CACHE is None:
            _DEFAULT_CACHE = PairCache(default_pair_loader)
        return _DEFAULT_CACHE


# ---------------------------------------------------------------- per-session runs
@dataclass
class _Run:
    stop: threading.Event = field(default_factory=threading.Event)
    rounds: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)


_RUNS: dict[str, _Run] = {}
_RUNS_LOCK = threading.Lock()


def _session(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "local"


def _new_run(request) -> _Run:
    run = _Run()
    with _RUNS_LOCK:
        old = _RUNS.get(_session(request))
        if old is not None:
            old.stop.set()
        _RUNS[_session(request)] = run
    return run


# ---------------------------------------------------------------- input checks
def _int(value, name: str, lo: int, hi: int) -> int:
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number between {lo} and {hi}") from None
    if math.isnan(f) or f != int(f) or not lo <= f <= hi:
        raise InputError(f"{name} must be a whole number between {lo} and {hi}, got {value}")
    return int(f)


def _sampling(temperature, top_k, top_p) -> SamplingConfig:
    try:
        return SamplingConfig(temperature=float(temperature), top_k=_int(top_k, "top-k", 0, 1_000_000),
                              top_p=float(top_p))
    except (TypeError, ValueError) as e:
        raise InputError(str(e)) from None


def _pair_ids(choice: str, draft_id: str, target_id: str) -> tuple[str | None, str | None]:
    if choice in (None, "", PACKAGED):
        return None, None
    if choice in HUB_PRESETS:
        return HUB_PRESETS[choice]
    draft_id, target_id = (draft_id or "").strip(), (target_id or "").strip()
    if not draft_id or not target_id:
        raise InputError("Custom pair: give both a draft and a target Hub id, e.g. "
                         "Qwen/Qwen2.5-0.5B-Instruct and Qwen/Qwen2.5-1.5B-Instruct")
    return draft_id, target_id


def _check_prompt(prompt: str) -> str:
    if prompt is None or not str(prompt).strip():
        raise InputError("Please enter a prompt.")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InputError(f"The prompt is {len(prompt)} characters long; the limit here is {MAX_PROMPT_CHARS}.")
    return str(prompt)


def _encode(pair, prompt: str, raw: bool, max_new: int, k: int) -> list[int]:
    ids = pair.encode(prompt) if raw else pair.encode_chat(prompt)
    if not ids:
        raise InputError("The prompt encodes to no tokens.")
    cfg = pair.target.config.get_text_config() if hasattr(pair.target.config, "get_text_config") else pair.target.config
    ctx = getattr(cfg, "max_position_embeddings", None) or 1 << 30
    limit = min(MAX_PROMPT_TOKENS, ctx - max_new - k - 1)
    if len(ids) > limit:
        raise InputError(f"The prompt is {len(ids)} tokens; with {max_new} new tokens and K = {k} it must stay "
                         f"under {max(limit, 0)} tokens (model context {ctx}). Shorten it or lower max new tokens.")
    return ids


def _msg(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text[:500]


# ---------------------------------------------------------------- the decode worker
def _worker(run: _Run, out: queue.Queue, pair, ids, k, sampling, max_new, seed, compare, adaptive) -> None:
    """Decode in this thread; push ('round', r) ... ('spec_done', stats), ('steps', n) ..., ('base_done', steps)."""
    try:
        stats: dict = {}
        gen = speculative_generate(pair.target, pair.draft, ids, k=k, sampling=sampling, max_new_tokens=max_new,
                                   seed=seed, tokenizer=pair.tokenizer, eos_token_id=pair.eos_token_ids or None,
                                   stats=stats, adaptive_threshold=adaptive)
        try:
            for rnd in gen:
                out.put(("round", rnd))
                if run.stop.is_set():
                    break
        finally:
            gen.close()
        out.put(("spec_done", stats))
        if compare and not run.stop.is_set():
            steps = []
            bstats: dict = {}
            for step in autoregressive_generate(pair.target, ids, sampling, max_new, seed,
                                                eos_token_id=pair.eos_token_ids or None, stats=bstats):
                steps.append(step)
                if len(steps) % 4 == 0:
                    out.put(("steps", len(steps)))
                if run.stop.is_set():
                    break
            out.put(("base_done", steps))
    except Exception as e:  # noqa: BLE001 - reported in the page
        out.put(("error", e))
    finally:
        out.put(("end", None))


def _write_trace(trace: Trace, tmpdir: str, session: str) -> str:
    path = Path(tmpdir) / f"specviz-trace-{session[:8]}-{int(time.time() * 1000) % 10**9}.json"
    path.write_text(trace.to_json(indent=1), encoding="utf-8")
    return str(path)


def _css() -> str:
    return vh.token_css() + (ASSETS / "specviz.css").read_text(encoding="utf-8")


def _examples() -> list[list]:
    try:
        data = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
        return [[e["prompt"], int(e.get("k", 4)), float(e.get("temperature", 0.0)), str(e.get("label", e["prompt"][:40]))]
                for e in data]
    except (OSError, ValueError, KeyError, TypeError):
        return [["Write a Python function that checks whether a number is prime.", 4, 0.0, "Prime check"]]


INTRO = """
# specviz · watch speculative decoding
A small **draft** model guesses the next K tokens; the large **target** model checks all K guesses in **one** pass
and keeps the ones it agrees with. Same output distribution as the target alone, usually faster.
Press **Generate**, then hover any token to see why it was kept or replaced.
"""


# ---------------------------------------------------------------- the app
def build_app(pair_loader: PairLoader | None = None, *, sweep_fn: Callable | None = None,
              replay_delay: float = 0.12, concurrency_limit: int = 1, default_prompt: str | None = None,
              default_max_new_tokens: int = 64, default_k: int = 4, pair_label: str = PACKAGED) -> gr.Blocks:
    """The Blocks app. `pair_loader(draft_id|None, target_id|None, progress)` -> a ModelPair-like object.

    Tests inject tiny models with `pair_loader`; the default loads the packaged
    pair (or Hub ids) through `specviz.models.load_pair(..., allow_local=False)`.
    """
    cache = PairCache(pair_loader) if pair_loader is not None else _default_cache()
    tmpdir = tempfile.mkdtemp(prefix="specviz-traces-")
    examples = _examples()
    if default_prompt is None:
        default_prompt = examples[0][0]

    def get_sweep():
        if sweep_fn is not None:
            return sweep_fn
        from .bench import sweep_k
        return sweep_k

    # ---------------------------------------------------------- event functions
    def pair_visibility(choice):
        custom = choice == CUSTOM
        return gr.update(visible=custom), gr.update(visible=custom)

    def load(choice, draft_id, target_id, progress):
        d, t = _pair_ids(choice, draft_id, target_id)
        return cache.get(d, t, lambda f, m: progress(f, desc=m))

    @_gpu
    def generate(prompt, raw, k, adaptive, temperature, top_k, top_p, max_new, seed, choice, draft_id, target_id,
                 compare, _prev_trace, request: gr.Request, progress=gr.Progress()):
        run = _new_run(request)
        try:
            prompt = _check_prompt(prompt)
            k = _int(k, "K", 1, MAX_K_UI)
            max_new = _int(max_new, "max new tokens", 1, MAX_NEW_TOKENS)
            seed = _int(seed, "seed", 0, 2**31 - 1)
            sampling = _sampling(temperature, top_k, top_p)
            _pair_ids(choice, draft_id, target_id)
        except InputError as e:
            gr.Warning(str(e))
            yield {status: vh.status_html(str(e), "error")}
            return
        yield {status: vh.status_html("Loading models (first start can take a minute or two)…", "run")}
        try:
            pair = load(choice, draft_id, target_id, progress)
            ids = _encode(pair, prompt, bool(raw), max_new, k)
        except (InputError, ModelLoadError) as e:
            gr.Warning(_msg(e))
            yield {status: vh.status_html(_msg(e), "error")}
            return
        except Exception as e:  # noqa: BLE001 - keep serving; say what went wrong
            yield {status: vh.status_html(f"Could not prepare the run: {_msg(e)}", "error")}
            return

        greedy = sampling.greedy
        live, log = vh.LiveText(prompt, greedy), vh.RoundLog(greedy)
        rounds = run.rounds
        adaptive = ADAPTIVE_THRESHOLD if adaptive else None
        meta = dict(prompt=prompt, prompt_ids=ids, adaptive_threshold=adaptive,
                    draft_model=getattr(pair, "draft_name", "") or str(getattr(pair, "name", "draft")).split(" → ")[0],
                    target_model=getattr(pair, "target_name", "") or str(getattr(pair, "name", "target")).split(" → ")[-1],
                    k=k,
                    max_new_tokens=max_new, seed=seed, sampling=sampling.to_dict(),
                    device=str(getattr(pair, "device", "")), dtype=str(getattr(pair, "dtype", "")).replace("torch.", ""))
        run.meta = meta
        q: queue.Queue = queue.Queue()
        worker = threading.Thread(target=_worker, args=(run, q, pair, ids, k, sampling, max_new, seed, bool(compare), adaptive),
                                  daemon=True, name="specviz-decode")
        yield {status: vh.status_html(f"Decoding with K = {k}{' (adaptive: a maximum)' if adaptive else ''}…", "run"), live_html: live.html(), log_html: log.html(),
               compare_box: "", metrics_box: vh.metrics_html(metrics([]))}
        worker.start()
        last_chart = 0.0
        spec_stats: dict = {}
        steps = None
        error = None
        done = user_stopped = False
        try:
            while not done:
                items = [q.get()]
                while True:  # drain whatever else is ready: one page update per batch
                    try:
                        items.append(q.get_nowait())
                    except queue.Empty:
                        break
                new_rounds = False
                msg = None
                for kind, value in items:
                    if kind == "round":
                        rounds.append(value)
                        live.add(value)
                        log.add(value)
                        new_rounds = True
                    elif kind == "spec_done":
                        spec_stats = value
                        if compare and not run.stop.is_set():
                            msg = vh.status_html("Speculative run done. Now running the target alone for "
                                                 "comparison (after, never at the same time)…", "run")
                    elif kind == "steps":
                        msg = vh.status_html(f"Target alone: {value} / {max_new} tokens…", "run")
                    elif kind == "base_done":
                        steps = value
                    elif kind == "error":
                        error = value
                    elif kind == "end":
                        done = True
                        user_stopped = run.stop.is_set()
                upd: dict = {}
                if new_rounds:
                    m = metrics(rounds)
                    upd[live_html] = live.html()
                    upd[log_html] = log.html()
                    upd[metrics_box] = vh.metrics_html(m)
                    upd[status] = vh.status_html(f"Round {len(rounds)} · {m['tokens']} / {max_new} tokens", "run")
                    now = time.perf_counter()
                    if now - last_chart >= CHART_INTERVAL_S:
                        last_chart = now
                        upd[pos_plot] = charts.acceptance_by_position_figure(m["per_position"])
                        upd[time_plot] = charts.timeline_figure(rounds)
                if msg:
                    upd[status] = msg
                if upd and not done:
                    yield upd
        finally:
            run.stop.set()  # a cancelled or closed page stops the decoder too

        m = metrics(rounds)
        trace = Trace(rounds=list(rounds), output_text=_decode(pair, [t for r in rounds for t in r.emitted]),
                      prefill_seconds=float(spec_stats.get("prefill_seconds", 0.0)), **meta)
        final: dict = {live_html: live.html(), log_html: log.html(),
                       pos_plot: charts.acceptance_by_position_figure(m["per_position"]),
                       time_plot: charts.timeline_figure(rounds), state: trace}
        final.update(_inspector_updates(trace))
        base_tps = None
        if steps is not None and steps:
            secs = sum(s.seconds for s in steps)
            base_tps = len(steps) / secs if secs > 0 else float("nan")
            spec_ids, base_ids = trace.output_ids, [s.token_id for s in steps]
            same = spec_ids == base_ids
            final[compare_box] = vh.compare_html(m["tokens_per_s"], base_tps, greedy=greedy,
                                                 first_diff=None if same else first_difference(spec_ids, base_ids),
                                                 identical=same if greedy else None, dtype=meta["dtype"],
                                                 n_spec=len(spec_ids), n_base=len(base_ids))
        final[metrics_box] = vh.metrics_html(m, done=True, prefill_seconds=trace.prefill_seconds, baseline_tps=base_tps)
        if rounds:
            try:
                final[download] = gr.update(value=_write_trace(trace, tmpdir, _session(request)), interactive=True)
            except (OSError, ValueError) as e:
                error = error or e
        if error is not None:
            final[status] = vh.status_html(f"The run stopped with an error: {_msg(error)}", "error")
        elif user_stopped:
            final[status] = vh.status_html(f"Stopped after {len(rounds)} rounds ({m['tokens']} tokens).", "warn")
        else:
            final[status] = vh.status_html(
                f"Done: {m['tokens']} tokens in {m['rounds']} rounds, {vh.fmt(m['tokens_per_s'], 1)} tokens/s, "
                f"acceptance {vh.pct(m['acceptance_rate'])}, τ = {vh.fmt(m['tau'], 2)}.", "ok")
        yield final

    def stop(request: gr.Request):
        with _RUNS_LOCK:
            run = _RUNS.get(_session(request))
        if run is not None:
            run.stop.set()
        return vh.status_html("Stopped.", "warn")

    def replay(file, request: gr.Request):
        run = _new_run(request)
        if file is None:
            yield {status: vh.status_html("Choose a trace file (.json) to replay.", "warn")}
            return
        path = getattr(file, "name", file)
        try:
            size = os.path.getsize(path)
            if size > MAX_TRACE_BYTES:
                raise TraceFormatError(f"the file is {size / 1e6:.1f} MB; the limit is {MAX_TRACE_BYTES / 1e6:.0f} MB")
            with open(path, "rb") as fh:
                trace = Trace.from_json(fh.read())
        except (TraceFormatError, OSError) as e:
            gr.Warning(f"Not a usable trace: {_msg(e)}")
            yield {status: vh.status_html(f"Not a usable trace: {_msg(e)}", "error")}
            return
        greedy = float(trace.sampling.get("temperature", 0.0)) == 0.0
        live, log = vh.LiveText(trace.prompt, greedy), vh.RoundLog(greedy)
        yield {status: vh.status_html(f"Replaying a trace: {len(trace.rounds)} rounds, no model needed.", "run"),
               live_html: live.html(), log_html: log.html(), compare_box: vh.trace_summary_html(
                   trace.prompt, trace.draft_model, trace.target_model, trace.k, trace.sampling,
                   f"recorded on {trace.device} {trace.dtype}".strip())}
        shown = []
        last_chart = 0.0
        for rnd in trace.rounds:
            if run.stop.is_set():
                break
            shown.append(rnd)
            live.add(rnd)
            log.add(rnd)
            m = metrics(shown)
            upd = {live_html: live.html(), log_html: log.html(), metrics_box: vh.metrics_html(m),
                   status: vh.status_html(f"Replay: round {len(shown)} of {len(trace.rounds)}", "run")}
            now = time.perf_counter()
            if now - last_chart >= CHART_INTERVAL_S:
                last_chart = now
                upd[pos_plot] = charts.acceptance_by_position_figure(m["per_position"])
                upd[time_plot] = charts.timeline_figure(shown)
            yield upd
            if replay_delay > 0:
                time.sleep(replay_delay)
        m = metrics(shown)
        final = {live_html: live.html(), log_html: log.html(), state: trace,
                 metrics_box: vh.metrics_html(m, done=True, prefill_seconds=trace.prefill_seconds),
                 pos_plot: charts.acceptance_by_position_figure(m["per_position"]),
                 time_plot: charts.timeline_figure(shown),
                 status: vh.status_html(f"Replay finished: {m['tokens']} tokens in {m['rounds']} rounds "
                                        f"(timings as recorded).", "ok")}
        final.update(_inspector_updates(trace))
        yield final

    def _inspector_updates(trace: Trace | None) -> dict:
        n = len(trace.rounds) if trace else 0
        if not n:
            return {}
        r = trace.rounds[-1]
        greedy = float(trace.sampling.get("temperature", 0.0)) == 0.0
        pos = (r.rejected_at + 1) if r.rejected_at is not None else max(1, r.k)
        return {insp_round: gr.update(maximum=max(2, n), value=n, interactive=True),
                insp_pos: gr.update(maximum=max(2, r.k + (1 if r.bonus else 0)), value=pos, interactive=True),
                insp_plot: charts.inspector_figure(r, pos, greedy),
                insp_card: vh.round_card_html(r, greedy)}

    def inspect(trace, round_no, position):
        if not trace or not getattr(trace, "rounds", None):
            return charts.inspector_figure(None, 1, True), "", gr.update()
        i = max(1, min(int(round_no or 1), len(trace.rounds))) - 1
        r = trace.rounds[i]
        greedy = float(trace.sampling.get("temperature", 0.0)) == 0.0
        top = max(1, r.k + (1 if r.bonus else 0))
        pos = max(1, min(int(position or 1), top))
        return (charts.inspector_figure(r, pos, greedy), vh.round_card_html(r, greedy),
                gr.update(maximum=max(2, top), value=pos))

    @_gpu
    def sweep(prompt, raw, temperature, top_k, top_p, seed, choice, draft_id, target_id, k_lo, k_hi, n_tokens,
              progress=gr.Progress()):
        try:
            prompt = _check_prompt(prompt)
            k_lo, k_hi = _int(k_lo, "smallest K", 1, MAX_K_UI), _int(k_hi, "largest K", 1, MAX_K_UI)
            if k_lo > k_hi:
                k_lo, k_hi = k_hi, k_lo
            n_tokens = _int(n_tokens, "tokens per run", 4, MAX_SWEEP_TOKENS)
            seed = _int(seed, "seed", 0, 2**31 - 1)
            sampling = _sampling(temperature, top_k, top_p)
            progress(0.0, desc="loading models")
            pair = load(choice, draft_id, target_id, progress)
            ids = _encode(pair, prompt, bool(raw), n_tokens, k_hi)
        except (InputError, ModelLoadError) as e:
            gr.Warning(_msg(e))
            return gr.update(), vh.status_html(_msg(e), "error")
        ks = list(range(k_lo, k_hi + 1))
        try:
            result = get_sweep()(pair.target, pair.draft, ids, ks, sampling, n_tokens, seed=seed,
                                 tokenizer=pair.tokenizer, progress=lambda f, m: progress(f, desc=m))
        except Exception as e:  # noqa: BLE001
            return gr.update(), vh.status_html(f"The sweep failed: {_msg(e)}", "error")
        best = next((r for r in result.rows if r.k == result.best_k), None)
        text = (f"Best K = {result.best_k}: {vh.fmt(best.tokens_per_s, 1)} tokens/s, "
                f"{best.speedup:.2f}× the target alone ({vh.fmt(result.target_tokens_per_s, 1)} tokens/s). "
                f"{n_tokens} tokens per run, EOS ignored." if best else "No result.")
        return charts.throughput_vs_k_figure(result), vh.status_html(text, "ok")

    # ---------------------------------------------------------- layout
    with gr.Blocks(title="specviz · speculative decoding, visualised") as demo:
        state = gr.State(None)
        gr.Markdown(INTRO, elem_id="sv-title")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=330):
                prompt_box = gr.Textbox(label="Prompt", value=default_prompt, lines=4, max_lines=12,
                                        max_length=MAX_PROMPT_CHARS, elem_id="sv-prompt")
                raw_box = gr.Checkbox(label="Raw text (skip the chat template)", value=False)
                k_box = gr.Slider(1, MAX_K_UI, value=default_k, step=1, label="K: draft tokens per round",
                                  elem_id="sv-k")
                adaptive_box = gr.Checkbox(label=f"Adaptive K: stop drafting a round once the draft's confidence "
                                                 f"drops below {ADAPTIVE_THRESHOLD} (K becomes a maximum)",
                                           value=False, elem_id="sv-adaptive")
                max_box = gr.Slider(1, MAX_NEW_TOKENS, value=default_max_new_tokens, step=1,
                                    label="Max new tokens", elem_id="sv-max-new")
                with gr.Accordion("Sampling", open=True):
                    temp_box = gr.Slider(0.0, 2.0, value=0.0, step=0.05, label="Temperature (0 = greedy)",
                                         elem_id="sv-temp")
                    topp_box = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="top-p (1 = off)", elem_id="sv-topp")
                    with gr.Row():
                        topk_box = gr.Number(value=0, precision=0, minimum=0, label="top-k (0 = off)", elem_id="sv-topk")
                        seed_box = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="sv-seed")
                with gr.Accordion("Models", open=False, elem_id="sv-models"):
                    pair_box = gr.Dropdown([pair_label, *HUB_PRESETS, CUSTOM], value=pair_label,
                                           label="Draft → target pair", elem_id="sv-pair")
                    draft_box = gr.Textbox(label="Draft model (Hub id)", visible=False, elem_id="sv-draft",
                                           placeholder="Qwen/Qwen2.5-0.5B-Instruct")
                    target_box = gr.Textbox(label="Target model (Hub id)", visible=False, elem_id="sv-target",
                                            placeholder="Qwen/Qwen2.5-1.5B-Instruct")
                    gr.Markdown("Both models must share a tokenizer. Hub ids need internet access on the server.")
                compare_box_in = gr.Checkbox(label="Also run the target alone afterwards (speedup, identical-output check)",
                                             value=True, elem_id="sv-compare-switch")
                with gr.Row():
                    run_btn = gr.Button("Generate", variant="primary", elem_id="sv-run")
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="sv-stop")
                gr.Examples([e[:3] for e in examples], inputs=[prompt_box, k_box, temp_box],
                            example_labels=[e[3] for e in examples], label="Examples (click to fill)")
            with gr.Column(scale=2, min_width=520):
                status = gr.HTML(vh.status_html("Ready. Press Generate.", "info"), elem_id="sv-status")
                gr.HTML(vh.legend_html(), elem_id="sv-legend")
                live_html = gr.HTML("", elem_id="sv-live")
                metrics_box = gr.HTML(vh.metrics_html(metrics([])), elem_id="sv-metrics")
                compare_box = gr.HTML("", elem_id="sv-compare")
                with gr.Tabs():
                    with gr.Tab("Round log", id="log"):
                        log_html = gr.HTML(vh.RoundLog(True).html(), elem_id="sv-log")
                    with gr.Tab("Round inspector", id="inspect"):
                        with gr.Row():
                            insp_round = gr.Slider(1, 2, value=1, step=1, label="Round", interactive=False,
                                                   elem_id="sv-insp-round")
                            insp_pos = gr.Slider(1, 2, value=1, step=1, label="Position (K+1 = bonus)",
                                                 interactive=False, elem_id="sv-insp-pos")
                        insp_plot = gr.Plot(charts.inspector_figure(None, 1, True), show_label=False, elem_id="sv-insp-plot")
                        insp_card = gr.HTML("", elem_id="sv-inspect-text")
                    with gr.Tab("Acceptance & timing", id="charts"):
                        with gr.Row():
                            pos_plot = gr.Plot(charts.acceptance_by_position_figure([]), show_label=False, elem_id="sv-pos-plot")
                            time_plot = gr.Plot(charts.timeline_figure([]), show_label=False, elem_id="sv-time-plot")
                    with gr.Tab("Throughput vs K", id="sweep"):
                        gr.Markdown("Runs the target alone once, then the speculative decoder at each K, on the "
                                    "current prompt and sampling settings (EOS ignored so every run makes the same "
                                    "number of tokens).")
                        with gr.Row():
                            k_lo_box = gr.Slider(1, MAX_K_UI, value=1, step=1, label="Smallest K", elem_id="sv-klo")
                            k_hi_box = gr.Slider(1, MAX_K_UI, value=8, step=1, label="Largest K", elem_id="sv-khi")
                            sweep_tokens = gr.Slider(4, MAX_SWEEP_TOKENS, value=32, step=1, label="Tokens per run",
                                                     elem_id="sv-sweep-tokens")
                        sweep_btn = gr.Button("Run the sweep", variant="primary", elem_id="sv-sweep")
                        sweep_status = gr.HTML("", elem_id="sv-sweep-status")
                        sweep_plot = gr.Plot(charts.throughput_vs_k_figure(None), show_label=False, elem_id="sv-sweep-plot")
                    with gr.Tab("Trace files", id="trace"):
                        gr.Markdown("Download the run as JSON; upload a trace to replay it round by round without "
                                    "loading any model (prepare runs on a GPU, replay them anywhere).")
                        download = gr.DownloadButton("Download trace (JSON)", value=None, interactive=False,
                                                     elem_id="sv-download")
                        upload = gr.File(label="Replay a trace (.json)", file_types=[".json"], type="filepath",
                                         elem_id="sv-upload")
                        replay_btn = gr.Button("Replay again", elem_id="sv-replay")

        run_inputs = [prompt_box, raw_box, k_box, adaptive_box, temp_box, topk_box, topp_box, max_box, seed_box, pair_box,
                      draft_box, target_box, compare_box_in, state]
        stream_outputs = [status, live_html, log_html, metrics_box, compare_box, pos_plot, time_plot, download,
                          state, insp_round, insp_pos, insp_plot, insp_card]
        pair_box.change(pair_visibility, pair_box, [draft_box, target_box], queue=False)
        run_evt = run_btn.click(generate, run_inputs, stream_outputs, concurrency_limit=concurrency_limit,
                                concurrency_id="decode", show_progress="minimal")
        replay_evt = upload.upload(replay, upload, stream_outputs, concurrency_limit=None)
        replay_btn_evt = replay_btn.click(replay, upload, stream_outputs, concurrency_limit=None)
        stop_btn.click(stop, None, status, cancels=[run_evt, replay_evt, replay_btn_evt], queue=False)
        insp_round.input(inspect, [state, insp_round, insp_pos], [insp_plot, insp_card, insp_pos], queue=False)
        insp_pos.input(inspect, [state, insp_round, insp_pos], [insp_plot, insp_card, insp_pos], queue=False)
        sweep_btn.click(sweep, [prompt_box, raw_box, temp_box, topk_box, topp_box, seed_box, pair_box, draft_box,
                                target_box, k_lo_box, k_hi_box, sweep_tokens], [sweep_plot, sweep_status],
                        concurrency_limit=concurrency_limit, concurrency_id="decode")
    demo.specviz_css = _css()  # launch() takes css in Gradio 6; see launch_app
    return demo


def _decode(pair, ids: list[int]) -> str:
    try:
        return pair.decode(ids)
    except Exception:  # noqa: BLE001 - a display convenience only
        return ""


def launch_app(demo: gr.Blocks, **kwargs):
    """Launch with the specviz CSS and a light theme (the palette is tuned for a light page)."""
    kwargs.setdefault("css", getattr(demo, "specviz_css", _css()))
    kwargs.setdefault("theme", gr.themes.Soft(primary_hue="blue"))
    kwargs.setdefault("js", "() => { const u = new URL(window.location); if (u.searchParams.get('__theme') !== 'light') "
                            "{ u.searchParams.set('__theme', 'light'); window.location.href = u.href; } }")
    return demo.queue(default_concurrency_limit=4).launch(**kwargs)
