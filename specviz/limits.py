"""Every bound on a user-controlled size, and the tunables, in one place.

The decoder's own checks use the wide limits; the app and the command line use
narrower ones because each unit costs a user real time on a 2-core CPU. A
change here is a change of behaviour: the tests import these names.
"""
from pathlib import Path

# ---------------------------------------------------------------- the decoder (Python API)
MAX_K = 32                      # draft tokens per round
MAX_TREE_NODES = 64             # nodes of a draft tree: one verify forward reads them all
DECODER_MAX_NEW_TOKENS = 100_000
MAX_TEMPERATURE = 10.0
TOP_N = 5                       # alternatives recorded per position in a trace

# Adaptive draft length: stop a round's drafting once the draft's confidence in
# its token falls below this. 0.6 measured best on the packaged pair (docs/measurements.md, "Hybrid drafting").
ADAPTIVE_THRESHOLD = 0.6

# ---------------------------------------------------------------- the command line and the bench
CLI_MAX_NEW_TOKENS = 4096
CLI_MAX_PROMPT_CHARS = 20_000
BENCH_MAX_REPEATS = 20

# ---------------------------------------------------------------- the web app
APP_MAX_K = 16
APP_MAX_TREE_NODES = 16         # K of the page's "draft tree" drafter: nodes verified in one target pass
APP_MAX_NEW_TOKENS = 512
APP_MAX_PROMPT_CHARS = 8000
APP_MAX_PROMPT_TOKENS = 4096
APP_MAX_SWEEP_TOKENS = 256
APP_MAX_RACE_TOKENS = 128       # the drafter race: five runs of this many tokens (the target alone and four drafters)
APP_MAX_RACE_PROMPT_CHARS = 2000   # ... each reads the prompt once: refused beyond, never cut
APP_MAX_LAB_PROMPT_CHARS = 500  # the losslessness lab's prompt: one forward of each model per run, refused beyond
APP_MAX_TRACE_BYTES = 20_000_000   # 20 MB as the docs and the refusal say it (20 MiB read "21 MB")
APP_MAX_TEMPERATURE = 2.0       # the app's temperature box; the decoder accepts up to MAX_TEMPERATURE
# ... and its least positive value: below it logits / T overflows float32 (a logit of 30 at T = 1e-37), and a
# text such as 1e-400 reads as 0 and ran greedy while the box still said 1e-400. 0 itself is greedy.
APP_MIN_TEMPERATURE = 0.01
APP_MAX_HUB_ID_CHARS = 96       # each of owner and name in a Hub id (the Hub's own limit)
APP_MAX_DRAW = 10_000           # re-draws of u per classroom round; the count then starts again at 1
APP_WHY_MAX_K = 8               # "why it is fast" times the target over 1..K+1 positions: each K is a timed forward
APP_WHY_REPEATS = 5             # "why it is fast" repeats its timing this often, to show the spread
APP_WHY_MAX_S = 60.0            # ... and starts no repetition after this many seconds (model load not counted)
MAX_SEED = 2**31 - 1            # the seed boxes: a signed 32-bit int
MAX_TOP_K = 1_000_000           # the top-k box (0 is off); above any vocabulary
APP_CHART_INTERVAL_S = 1.0      # redraw charts (a live run: its log and tiles) at most this often while streaming
APP_TICK_S = 0.5                # how often a waiting event function looks at its Stop flag and the clock
# Watching a run must not slow it. The page's event function shares the cores and the GIL with the decode
# thread, so it draws the newest state at most this often (every round still reaches the log and the trace); a live
# run's log and tiles follow at APP_CHART_INTERVAL_S, its charts once, after the run.
# Each streamed message costs Chromium ~20-40 ms whatever it carries (Gradio's frontend snapshots every output):
# at 2 a second the decode beside a browser ran at 0.885 / 0.865 the worker's speed, at 1 a second 0.979 / 1.016
# (speculative / target alone, 8 prompts interleaved, 2-core Zen 4: docs/measurements.md).
APP_LIVE_UPDATES_PER_S = 1.0    # page updates a second while a run streams

# A page that never freezes, a Stop heard within one round.
LEAN_MAX_ROWS = 16              # new positions a forward may have to take the lean layer stack (models.lean_forward)
PREFILL_CHUNK = 32              # prompt positions per prefill forward when a run can be stopped (the app's)
APP_LIVE_ROUNDS = 50            # rounds the live text shows (the newest); the output box and the download hold all
APP_OUTPUT_TAIL_CHARS = 4000    # the end of a replay's text that the output box shows while it streams
APP_REPLAY_MAX_S = 30.0         # a replay's rounds come faster when pacing them one by one would take longer
APP_STOP_GRACE_S = 1.0          # after Stop, how long a page waits for a slow step (a load, a sweep point) to end

# ---------------------------------------------------------------- traces
MAX_TRACE_ROUNDS = 10_000
MAX_TRACE_DEPTH = 16            # nesting of [ and { in a trace file, checked before parsing (a trace needs 7)
MAX_TOKEN_ID = 2**31 - 1
# A run exported as one HTML page (viz/export.py): every round's text and card is in the file, about 5 KB a round, so
# the CLI's longest run (CLI_MAX_NEW_TOKENS, one token a round at worst) fits and a 10,000-round trace is refused
# rather than made into a page a browser opens slowly.
EXPORT_MAX_ROUNDS = 4096
EXPORT_TIMING_ROUNDS = 40       # the exported page's timing chart: the newest rounds up to the one shown
EXPORT_LOG_ROUNDS = 40          # ... and its round log's cards, as the app's log (cards.RoundLog) shows

# ---------------------------------------------------------------- `python -m specviz costs` (random-weight shapes)
COSTS_MAX_LAYERS = 128          # --layers override
COSTS_MAX_PROMPT_TOKENS = 8192  # context in the cache while timing
COSTS_MAX_REPEATS = 50          # timed repetitions per forward

# ---------------------------------------------------------------- files
REPO_ROOT = Path(__file__).resolve().parents[1]
ASSETS = REPO_ROOT / "assets"
ASSET_PROMPTS = ASSETS / "prompts.jsonl"
# The shared benchmark prompts sit beside the repository on the project's machines;
# the copy in assets/ is the fallback everywhere else.
SHARED_PROMPTS = REPO_ROOT.parent / "shared" / "prompts" / "bench.jsonl"


def default_prompts_file() -> Path:
    """The benchmark prompts: the shared file where it exists, else the copy in assets/."""
    return SHARED_PROMPTS if SHARED_PROMPTS.is_file() else ASSET_PROMPTS

# ---------------------------------------------------------------- ZeroGPU (Hugging Face Spaces), specviz.runtime.zerogpu
ZEROGPU_MIN_DURATION_S = 30     # the least GPU time asked for one call (graph capture happens inside every call)
ZEROGPU_MAX_DURATION_S = 240    # the most asked for one call: longer requests are announced, then cut at this
ZEROGPU_CALL_OVERHEAD_S = 20.0  # per call before the first token: attaching the GPU, capturing the graphs (unmeasured)
ZEROGPU_DEFAULT_STEP_S = 0.06   # a target step before one was measured (a pessimistic 14B eager step; unmeasured)
ZEROGPU_DRAFT_SHARE = 0.5       # a draft step as a share of a target step, pessimistic (compiled c: 0.25-0.43)
ZEROGPU_MARGIN = 1.5            # asked = estimate x this: an exhausted call is cut mid-run
# A visitor's daily ZeroGPU quota, as Hugging Face states it in late 2026 (seconds): without an account, a free one.
ZEROGPU_QUOTA_ANONYMOUS_S = 120
ZEROGPU_QUOTA_FREE_S = 300
# What one second asked counts against the quota: `spaces` 0.51.3 multiplies a `large` call's duration by its card's
# duration_factor (1.5 for the RTX Pro 6000 Blackwell in its zero/configs.json) and counts an `xlarge` call twice.
ZEROGPU_QUOTA_FACTOR = {"large": 1.5, "xlarge": 2.0}
ZEROGPU_QUOTA_NOTE_S = 60       # a request asking more than this of the quota (half an anonymous day) is announced
MEMORY_KV_TOKENS = 8192         # positions of KV cache counted per model when checking that a pair fits
MEMORY_HEADROOM = 1.15          # weights x this: activations, logits, the allocator's slack and the graphs' pool

# --- llama.cpp as a bench peer, specviz.bench.llamacpp
LLAMACPP_CTX_STEP = 512         # a llama.cpp context holds prompt + new tokens rounded up to this (reloaded when short)
