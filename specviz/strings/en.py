"""English: the reference table. Keys are `area.name`; `{name}` is filled in by the code.

Notation (p, q, a, u, K, τ, α) stays as in docs/design.md in every language.
`**bold**` and `*italic*` are allowed where the text becomes HTML (see `rich`).
"""

STRINGS: dict[str, str] = {
    # ------------------------------------------------------------ provenance (legend, verdicts)
    "legend.accepted": "accepted draft token: the draft proposed it and the target agreed (u < a)",
    "legend.rejected": "rejected draft token: u ≥ a, so the target replaced it; shown struck through",
    "legend.discarded": "discarded draft token: drafted after a rejection, never used",
    "legend.correction": "correction: drawn from the residual max(0, p − q) after a rejection",
    "legend.bonus": "bonus: every draft was accepted, so the target's next-token distribution p gives one more token",
    "legend.sample": "token",
    "legend.rule": ("Each round the small **draft** model proposes K tokens (probabilities **q**); the big "
                    "**target** model checks all of them in one pass (probabilities **p**). A draft token x is "
                    "kept when a random **u** is below **a = min(1, p(x)/q(x))**. Hover over any token for its numbers."),
    "legend.greedy": ("**Greedy mode** (temperature 0): a draft token is kept iff it is the target's own top "
                      "choice; the percentages shown as *confidence* are for reading only."),
    "verdict.accepted": "accepted",
    "verdict.rejected": "rejected",
    "verdict.discarded": "discarded",

    # ------------------------------------------------------------ hovers in the live text
    "live.prompt_title": "your prompt (the model also sees the chat template)",
    "hover.draft_head": "{verdict} · draft token {token} · round {round}, position {pos} of {k}",
    "hover.discarded": "drafted after the rejection at position {pos}: never used",
    "hover.q": "q(x) = {q}   draft probability",
    "hover.p": "p(x) = {p}   target probability",
    "hover.accepted": "u < a  →  accepted",
    "hover.rejected": "u ≥ a  →  rejected: the correction is drawn from max(0, p − q)",
    "hover.greedy_rule": ("greedy (temperature 0): p and q are one-hot, so the token is accepted iff it is "
                          "the target's top token"),
    "hover.greedy_confidence": "confidence (untempered softmax, display only): draft {q}, target {p}",
    "hover.target_top": "target's top token: {token}",
    "hover.target_top5": "target top-5 p: {alts}",
    "hover.target_top5_conf": "target top-5 (confidence): {alts}",
    "hover.draft_top5": "draft top-5 q: {alts}",
    "hover.draft_top5_conf": "draft top-5 (confidence): {alts}",
    "hover.correction_head": ("CORRECTION · {token} · round {round}, position {pos}\n"
                              "the draft's token at position {pos} was rejected; this one is drawn from the residual "
                              "r(x) = max(0, p − q) / Σ"),
    "hover.correction_greedy": "greedy: the residual is one-hot on the target's top token",
    "hover.residual_top5": "residual top-5: {alts}",
    "hover.bonus_head": ("BONUS · {token} · round {round}, position {pos}\n"
                         "all {k} drafts were accepted, so the target's distribution at position "
                         "{pos} (already computed in the same forward) gives one more token"),

    # ------------------------------------------------------------ round cards and the round log
    "card.title": "Round {round}",
    "card.counts": "drafted {k} · accepted {accepted} · emitted {emitted}",
    "card.time": "draft {draft} ms · verify {verify} ms",
    "card.token": "draft token",
    "card.q": "q(x) draft",
    "card.p": "p(x) target",
    "card.q_conf": "draft confidence",
    "card.p_conf": "target confidence",
    "card.accept": "a = min(1, p/q), u marked",
    "card.verdict": "verdict",
    "card.not_checked": "not checked",
    "card.correction": ("**correction** at position {pos}, drawn from the residual max(0, p − q) "
                        "(r = {r}). Residual top-5:"),
    "card.bonus": "**bonus** at position {pos}: all drafts accepted, one more token from p (p = {p}). p top-5:",
    "card.bonus_conf": ("**bonus** at position {pos}: all drafts accepted, one more token from p (p = {p}). "
                        "Target confidence top-5:"),
    "card.eos": "end of sequence reached",
    "card.no_draft": "no draft this round (budget left room for one token)",
    "log.empty": "Round cards appear here, newest first.",
    "log.truncated": "Showing the newest {limit} of {n} rounds; the round inspector reaches every round.",

    # ------------------------------------------------------------ metric tiles
    "tile.tps": "tokens / s (speculative)",
    "tile.tps_hint": "emitted tokens / wall time of the decode loop",
    "tile.acceptance": "acceptance rate α̂",
    "tile.acceptance_hint": "accepted draft tokens / drafted tokens",
    "tile.tau": "mean accepted length τ",
    "tile.tau_hint": "tokens emitted per round (accepted drafts + correction or bonus); plain decoding has τ = 1",
    "tile.rounds": "rounds",
    "tile.rounds_hint": "draft/verify rounds so far",
    "tile.tokens": "tokens",
    "tile.tokens_hint": "tokens emitted so far",
    "tile.split": "time drafting / verifying",
    "tile.split_hint": "share of the decode loop spent in the draft model vs the target's verification",
    "tile.speedup": "speedup vs target alone",
    "tile.speedup_hint": "speculative tokens/s over the target decoding alone, same prompt and settings",
    "tile.prefill": "prompt prefill {seconds} s (not counted in tokens/s)",

    # ------------------------------------------------------------ the comparison with the target alone
    "compare.speedup": "{speedup}× speedup",
    "compare.rates": "speculative {spec} tok/s vs target alone {base} tok/s (run after, never at the same time)",
    "compare.identical": ("✓ identical output: greedy speculative decoding produced exactly the target's own "
                          "{n} tokens"),
    "compare.differ": "≠ outputs differ {where} ({why})",
    "compare.at_token": "at token {n}",
    "compare.in_length": "in length",
    "compare.why_low_precision": ("{dtype} rounding near a tie between two top tokens flips the argmax; the "
                                  "algorithm is exact, run in fp32 to see identical output"),
    "compare.why_rounding": ("numerical rounding near a tie between two top tokens; batched and single-token "
                             "forwards round differently"),
    "compare.sampling": ("Sampling mode: outputs are different random draws from the same distribution, so they "
                         "are not expected to match token for token."),
    "replay.summary": "draft **{draft}** → target **{target}** · K = {k} · {sampling}",

    # ------------------------------------------------------------ charts
    "chart.inspector": "Round inspector",
    "chart.inspector_empty": "Run or replay to inspect a round",
    "chart.inspector_nothing": "nothing recorded for this round",
    "chart.confidence": "confidence (untempered softmax)",
    "chart.probability": "probability",
    "chart.q_series": "q(x) draft {what}",
    "chart.p_series": "p(x) target {what}",
    "chart.residual_series": "residual max(0, p − q), normalised",
    "chart.residual_outside": "residual (tokens outside both top-5)",
    "chart.drafted_mark": "◀ drafted",
    "chart.bonus_mark": "◀ bonus",
    "chart.inspector_position": "Round {round}, position {pos}: {verdict}",
    "chart.inspector_sub": "drafted {token}: q = {q}, p = {p}, a = min(1, p/q) = {a}, u = {u} → {verdict}",
    "chart.inspector_sub_correction": "; correction {token}",
    "chart.inspector_bonus": "Round {round}, position {pos}: bonus token",
    "chart.inspector_bonus_sub": "all {k} drafts accepted; bonus {token} drawn from p (p = {p})",
    "chart.inspector_greedy": " · greedy: bars are confidence; acceptance = same top token",
    "chart.inspector_x": "token (top candidates)",
    "chart.acceptance": "Acceptance by draft position",
    "chart.acceptance_sub": "position i is only reached when 1..i−1 were accepted",
    "chart.no_rounds": "no rounds yet",
    "chart.accepted_share": "accepted fraction",
    "chart.acceptance_hover": "position {pos}: {share}",
    "chart.acceptance_hover_counts": "position {pos}: {share} of {n} rounds",
    "chart.acceptance_x": "draft position i",
    "chart.acceptance_y": "accepted",
    "chart.timeline": "Time per round: drafting vs verifying",
    "chart.draft_series": "draft (K small-model steps)",
    "chart.verify_series": "verify (1 target pass)",
    "chart.emitted_series": "tokens emitted",
    "chart.draft_hover": "round {round}: draft {ms} ms",
    "chart.verify_hover": "round {round}: verify {ms} ms",
    "chart.timeline_x": "round",
    "chart.timeline_y2": "tokens",
    "chart.sweep": "Throughput vs K",
    "chart.sweep_empty": "run a sweep to fill this chart",
    "chart.measured_series": "measured tokens/s (speculative)",
    "chart.measured_hover": "K={k}: {tps} tok/s\nacceptance {acceptance}, τ {tau}, speedup {speedup}×",
    "chart.target_alone": "target alone",
    "chart.target_alone_hover": "target alone: {tps} tok/s",
    "chart.theory_series": "theory from measured α and c",
    "chart.theory_hover": "K={k}: theory {tps} tok/s",
    "chart.acceptance_series": "acceptance rate α̂",
    "chart.acceptance_k_hover": "K={k}: acceptance {acceptance}",
    "chart.best_k": "best K = {k}",
    "chart.sweep_sub": "mean measured α = {alpha}, cost ratio c = {c}",
    "chart.sweep_x": "K (draft tokens per round)",
    "chart.sweep_y": "tokens / s",
    "chart.sweep_y2": "acceptance rate",

    # ------------------------------------------------------------ the page
    "app.title": "specviz · speculative decoding, visualised",
    "app.intro": ("# specviz · watch speculative decoding\n"
                  "A small **draft** model guesses the next K tokens; the large **target** model checks all K guesses "
                  "in **one** pass\nand keeps the ones it agrees with. Same output distribution as the target alone, "
                  "usually faster.\nPress **Generate**, then hover any token to see why it was kept or replaced."),
    "example.prompt": "Write a Python function that checks whether a number is prime.",
    "example.label": "Prime check",
    "ui.prompt": "Prompt",
    "ui.raw": "Raw text (skip the chat template)",
    "ui.k": "K: draft tokens per round",
    "ui.adaptive": ("Adaptive K: stop drafting a round once the draft's confidence drops below {threshold} "
                    "(K becomes a maximum)"),
    "ui.max_new": "Max new tokens",
    "ui.sampling": "Sampling",
    "ui.temperature": "Temperature (0 = greedy)",
    "ui.top_p": "top-p (1 = off)",
    "ui.top_k": "top-k (0 = off)",
    "ui.seed": "Seed",
    "ui.models": "Models",
    "ui.pair": "Draft → target pair",
    "ui.draft_id": "Draft model (Hub id)",
    "ui.target_id": "Target model (Hub id)",
    "ui.models_note": "Both models must share a tokenizer. Hub ids need internet access on the server.",
    "ui.compare": "Also run the target alone afterwards (speedup, identical-output check)",
    "ui.generate": "Generate",
    "ui.stop": "Stop",
    "ui.examples": "Examples (click to fill)",
    "ui.insp_round": "Round",
    "ui.insp_pos": "Position (K+1 = bonus)",
    "ui.k_lo": "Smallest K",
    "ui.k_hi": "Largest K",
    "ui.sweep_tokens": "Tokens per run",
    "ui.sweep_run": "Run the sweep",
    "ui.download": "Download trace (JSON)",
    "ui.upload": "Replay a trace (.json)",
    "ui.replay": "Replay again",
    "tab.log": "Round log",
    "tab.inspector": "Round inspector",
    "tab.charts": "Acceptance & timing",
    "tab.sweep": "Throughput vs K",
    "tab.trace": "Trace files",
    "pair.packaged": "Qwen2.5-Coder 0.5B → 1.5B (packaged, runs offline)",
    "pair.hub_preset": "{name} (Hub)",
    "pair.custom": "Custom Hub ids…",

    # ------------------------------------------------------------ status messages of a run
    "status.ready": "Ready. Press Generate.",
    "status.loading": "Loading models (first start can take a minute or two)…",
    "status.prepare_failed": "Could not prepare the run: {error}",
    "status.decoding": "Decoding with K = {k}…",
    "status.decoding_adaptive": "Decoding with K = {k} (adaptive: a maximum)…",
    "status.round": "Round {n} · {tokens} / {total} tokens",
    "status.baseline_start": ("Speculative run done. Now running the target alone for comparison "
                              "(after, never at the same time)…"),
    "status.baseline_progress": "Target alone: {n} / {total} tokens…",
    "status.failed": "The run stopped with an error: {error}",
    "status.stopped": "Stopped.",
    "status.stopped_after": "Stopped after {rounds} rounds ({tokens} tokens).",
    "status.done": ("Done: {tokens} tokens in {rounds} rounds, {tps} tokens/s, acceptance {acceptance}, "
                    "τ = {tau}."),

    # ------------------------------------------------------------ input checks
    "field.k": "K",
    "field.max_new": "max new tokens",
    "field.seed": "seed",
    "field.top_k": "top-k",
    "field.k_lo": "smallest K",
    "field.k_hi": "largest K",
    "field.sweep_tokens": "tokens per run",
    "input.not_a_number": "{name} must be a number between {lo} and {hi}",
    "input.not_whole": "{name} must be a whole number between {lo} and {hi}, got {value}",
    "input.custom_pair": ("Custom pair: give both a draft and a target Hub id, e.g. "
                          "Qwen/Qwen2.5-0.5B-Instruct and Qwen/Qwen2.5-1.5B-Instruct"),
    "input.no_prompt": "Please enter a prompt.",
    "input.prompt_chars": "The prompt is {n} characters long; the limit here is {limit}.",
    "input.no_tokens": "The prompt encodes to no tokens.",
    "input.prompt_tokens": ("The prompt is {n} tokens; with {max_new} new tokens and K = {k} it must stay "
                            "under {limit} tokens (model context {ctx}). Shorten it or lower max new tokens."),
    "input.trace_size": "the file is {mb} MB; the limit is {limit} MB",

    # ------------------------------------------------------------ the sweep tab
    "sweep.intro": ("Runs the target alone once, then the speculative decoder at each K, on the current prompt and "
                    "sampling settings (EOS ignored so every run makes the same number of tokens)."),
    "sweep.loading": "loading models",
    "sweep.failed": "The sweep failed: {error}",
    "sweep.no_result": "No result.",
    "sweep.best": ("Best K = {k}: {tps} tokens/s, {speedup}× the target alone ({base} tokens/s). "
                   "{n} tokens per run, EOS ignored."),

    # ------------------------------------------------------------ trace files and replay
    "trace.intro": ("Download the run as JSON; upload a trace to replay it round by round without loading any "
                    "model (prepare runs on a GPU, replay them anywhere)."),
    "replay.choose": "Choose a trace file (.json) to replay.",
    "replay.unusable": "Not a usable trace: {error}",
    "replay.start": "Replaying a trace: {n} rounds, no model needed.",
    "replay.round": "Replay: round {n} of {total}",
    "replay.done": "Replay finished: {tokens} tokens in {rounds} rounds (timings as recorded).",
    "replay.recorded_on": "recorded on {device} {dtype}",
}
