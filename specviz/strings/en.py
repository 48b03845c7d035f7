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
                    "kept when a random **u** is below **a = min(1, p(x)/q(x))**. Hover, tap or Tab to any token for its numbers."),
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
                         "all {k:draft was|drafts were} accepted, so the target's distribution at position "
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
    "log.truncated": "Showing the newest {limit} of {n:round|rounds}; the round inspector reaches every round.",

    # ------------------------------------------------------------ metric tiles
    "tile.tps": "tokens / s (speculative)",
    "tile.tps_hint": "emitted tokens / time of the decoding rounds (draft and verify); the prompt's prefill apart",
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
    "compare.counts": ("Both rates count decoding only: the tokens each run emitted over the time of its own "
                       "decoding steps; the prompt's prefill (and any compilation) is left out, as `python -m "
                       "specviz bench` leaves it out. The page was drawn alike during both runs."),
    "compare.weights": ("Both runs used the same target, its weights stored as {weights}: the fastest way this "
                        "app runs it on this machine (measured when the models loaded)."),
    "compare.identical": ("✓ identical output: greedy speculative decoding produced exactly the target's own "
                          "{n:token|tokens}"),
    "compare.differ": "≠ outputs differ {where} ({why})",
    "compare.at_token": "at token {n}",
    "compare.in_length": "in length",
    "compare.why_dense": ("this target multiplies by dense {weights} weights, and those matrix products compute a "
                          "row differently when several rows are multiplied at once, so a near-tie between two "
                          "top tokens can flip; the int4 and int8 weights the app picks on a CPU are computed row "
                          "by row and give identical output"),
    "compare.why_attention": ("this model's attention implementation is not the row-by-row one specviz checks, so "
                              "a verify row can round differently from a one-token step near a tie"),
    "compare.why_gpu": ("on a GPU the matrix products and attention kernels compute a row differently when several "
                        "rows are read at once, so a near-tie can flip; bit-identical output is guaranteed on CPUs"),
    "compare.why_compiled": ("compiled forwards fuse operations differently for one row and for several, so a "
                             "near-tie can flip; bit-identical output is guaranteed on uncompiled CPU forwards"),
    "compare.why_unexpected": ("this configuration computes every verify row exactly as a one-token step, so this "
                               "should not happen: please report it with the downloaded trace"),
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
    "chart.inspector_bonus_sub": "all {k:draft|drafts} accepted; bonus {token} drawn from p (p = {p})",
    "chart.inspector_greedy": " · greedy: bars are confidence; acceptance = same top token",
    "chart.inspector_x": "token (top candidates)",
    "chart.acceptance": "Acceptance by draft position",
    "chart.acceptance_sub": "position i is only reached when 1..i−1 were accepted",
    "chart.no_rounds": "no rounds yet",
    "chart.accepted_share": "accepted fraction",
    "chart.acceptance_hover": "position {pos}: {share}",
    "chart.acceptance_hover_counts": "position {pos}: {share} of {n:round|rounds}",
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
    "law.title": "Drafts accepted per round, against the law",
    "law.none": "no round has drafted anything yet",
    "law.observed_series": "rounds, measured",
    "law.observed_hover": "{j} accepted: {share} of the rounds ({n})",
    "law.chain_series": "independent acceptances at α = {alpha}",
    "law.tree_series": "one rate at every depth, {alpha}",
    "law.measured_series": "measured rate per depth (from these rounds)",
    "law.law_hover": "{j} accepted: rounds the law expects: {n}",
    "law.measured_hover": "{j} accepted: rounds the measured per-depth law expects: {n}",
    "law.x": "drafts accepted in the round",
    "law.y": "rounds",
    "law.convention": "Counted: the drafts accepted (0 to K). Each round then adds one token of the target's (the correction, or the bonus after K of K), so tokens per round = accepted + 1. α = accepted / (accepted + rejected).",
    "law.tree_note": "A tree's measured per-depth law matches the bars by construction; the test is against one rate at every depth.",
    "law.skipped": "{n:round|rounds} that drafted nothing left out.",
    "law.certain": "α = {alpha}: the law puts every round at one length, so there is nothing to test; the bars show whether the rounds agree.",
    "law.too_few": "{rounds:round is|rounds are} too few to test the law (each group of lengths needs about {least} expected rounds, and the test at least three groups); total variation distance {tv}: read the bars as a sketch.",
    "law.fits": "The law fits (χ² p = {p}, total variation distance {tv}): these rounds look like independent acceptances at α = {alpha}.",
    "law.breaks_runs": "The law does not fit (χ² p = {p}, total variation distance {tv}): {ends:round|rounds} accepted none or all of their drafts where independent acceptances give about {expected}. Acceptance comes in runs: a repeated span accepts everything, fresh text is rejected early.",
    "law.breaks_position": "The law does not fit (χ² p = {p}, total variation distance {tv}): {ends:round|rounds} accepted none or all of their drafts where independent acceptances give about {expected}. Acceptance changes with the position in the draft: see acceptance by position.",
    "rtime.title": "Where each round's time goes, against the target alone",
    "rtime.draft_series": "drafting",
    "rtime.verify_series": "the verify (1 target pass)",
    "rtime.rest_series": "the rest (the caches' bookkeeping, recording the round)",
    "rtime.part_hover": "round {round}: {part} {ms} ms",
    "rtime.target_series": "target alone, same tokens",
    "rtime.target_hover": "round {round}: the target alone takes {ms} ms for the round's tokens ({n})",
    "rtime.shares": "Drafting {draft}, the verify {verify}, the rest {rest} of the rounds' time.",
    "rtime.shares_two": "Drafting {draft}, the verify {verify} of the rounds' time (this trace records no round's whole time, so no rest is shown).",
    "rtime.no_reference": "No target-alone time with this run, so no marks: they come from “Also run the target alone afterwards” when that run finishes.",
    "rtime.slower": "{slower} of {rounds:round|rounds} cost more than the target alone would for the same tokens.",
    "rtime.caption": "A bar above its mark is a round slower than the target alone for its tokens; its segments say why.",
    "rtime.newest": "The newest {shown} of {total:round|rounds} are drawn.",
    "rtime.untimed": "No round's time was recorded.",
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
    "chart.none_faster": "none faster than the target alone",
    "chart.sweep_sub": "mean measured α = {alpha}, cost ratio c = {c}",
    "chart.sweep_x": "K (draft tokens per round)",
    "chart.sweep_y": "tokens / s",
    "chart.sweep_y2": "acceptance rate",

    # ------------------------------------------------------------ the page
    "app.title": "specviz · speculative decoding, visualised",
    "app.intro": ("# specviz · watch speculative decoding\n"
                  "A small **draft** model guesses the next K tokens; the large **target** model checks all K guesses "
                  "in **one** pass\nand keeps the ones it agrees with. Same output distribution as the target alone, "
                  "usually faster.\nPress **Generate**, then hover or tap any token to see why it was kept or replaced."),
    "example.prompt": "Write a Python function that checks whether a number is prime.",
    "example.label": "Prime check",
    "ui.prompt": "Prompt",
    "ui.raw": "Raw text (skip the chat template)",
    "ui.prompt_info": "Up to {limit} characters; a longer prompt is refused, never cut.",
    "ui.range": "{lo} to {hi}",
    "ui.top_p_info": "above 0, at most 1",
    "ui.output": "Output (the decoded text, special tokens hidden)",
    "ui.output_placeholder": "The answer appears here as plain text, with a copy button.",
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
    "pair.gguf": "{draft} → {target} ({size} GB, this server's GGUF files)",
    "pair.hub_preset": "{name} (Hub)",
    "pair.custom": "Custom Hub ids…",

    # ------------------------------------------------------------ status messages of a run
    "status.ready": "Ready. Press Generate.",
    "status.loading": "Loading models (first start can take a minute or two)… {seconds} s",
    "status.loading_step": "Loading models: {step} ({percent}) · {seconds} s",
    "status.stopping_load": "Stopping. The models finish loading in the background and are kept for the next run…",
    "status.prefill": "Reading the prompt ({n:token|tokens})… {seconds} s",
    "status.prefill_eta": "Reading the prompt ({n:token|tokens})… {seconds} s of about {total} s",
    "status.stopping": "Stopping after the current round…",
    "status.queued": "{place} in line. Yours starts when the runs ahead of it end; Stop cancels it.",
    "status.prepare_failed": "Could not prepare the run: {error}",
    "status.round": "Round {n} · {tokens} / {total:token|tokens}",
    "status.baseline_start": ("Speculative run done. Now running the target alone for comparison "
                              "(after, never at the same time)…"),
    "status.baseline_progress": "Target alone: {n} / {total:token|tokens}…",
    "status.failed": "The run stopped with an error: {error}",
    "status.stopped": "Stopped before anything was decoded.",
    "status.stopped_after": ("Stopped after {rounds:round|rounds} ({tokens:token|tokens}). What was made is kept: download or "
                             "replay its trace in Trace files."),
    "status.done": ("Done: {tokens:token|tokens} in {rounds:round|rounds}, {tps} tokens/s, acceptance {acceptance}, "
                    "τ = {tau}."),

    # ------------------------------------------------------------ input checks
    "field.k": "K",
    "field.lookup_k": "Lookup K",
    "field.max_new": "Max new tokens",
    "field.seed": "Seed",
    "field.top_k": "Top-k",
    "field.k_lo": "Smallest K",
    "field.k_hi": "Largest K",
    "field.sweep_tokens": "Tokens per run",
    "input.not_a_number": "{name} must be a number between {lo} and {hi}.",
    "input.not_whole": "{name} must be a whole number between {lo} and {hi}.",
    "input.custom_pair": ("Custom pair: give both a draft and a target Hub id, e.g. "
                          "Qwen/Qwen2.5-0.5B-Instruct and Qwen/Qwen2.5-1.5B-Instruct"),
    "input.no_prompt": "Please enter a prompt.",
    "input.prompt_chars": "The prompt is {n:character|characters} long; the limit here is {limit}.",
    "input.no_tokens": "The prompt encodes to no tokens.",
    "input.prompt_tokens": ("The prompt is {n:token|tokens}; with {max_new:new token|new tokens} and K = {k} it must stay "
                            "under {limit:token|tokens} (model context {ctx}). Shorten it or lower max new tokens."),
    "input.trace_size": "the file is {mb} MB; the limit is {limit} MB",
    "field.temperature": "Temperature",
    "field.top_p": "Top-p",
    "field.draft_id": "Draft model",
    "field.target_id": "Target model",
    "input.temperature": "Temperature must be between 0 and {hi} (0 = greedy).",
    "input.top_p": "Top-p must be above 0 and at most 1 (1 = off).",
    "input.hub_url": "{name}: give a Hub id such as Qwen/Qwen2.5-0.5B-Instruct, not a web address",
    "input.hub_id": ("{name}: “{value}” is an invalid model id; a Hub id looks like owner/name, e.g. "
                     "Qwen/Qwen2.5-0.5B-Instruct (letters, digits, - _ . and at most {limit} characters a part)"),
    "input.trace_ext": "“{name}” is not a trace: choose a .json file saved by specviz",

    # ------------------------------------------------------------ the sweep tab
    "sweep.intro": ("Runs the target alone once, then the speculative decoder at each K, on the current prompt and "
                    "sampling settings (EOS ignored so every run makes the same number of tokens)."),
    "sweep.failed": "The sweep failed: {error}",
    "sweep.no_result": "No result.",
    "sweep.stopping": "Stopping the sweep after the current step…",
    "sweep.stopped": "Sweep stopped. A sweep compares every K under the same conditions, so a partial one draws no chart.",
    "sweep.progress": "Sweep step {i} of {n}: {what}… {seconds} s",
    "sweep.step_costs": "timing one forward pass of each model",
    "sweep.step_target": "the target alone",
    "sweep.step_k": "speculative decoding with K = {k}",
    "sweep.step_done": "finishing",
    "sweep.none_faster": ("None faster than the target alone: the fastest, K = {k}, made {tps} tokens/s against the "
                          "target's {base} tokens/s. {n:token|tokens} per run, EOS ignored."),
    "sweep.best": ("Best K = {k}: {tps} tokens/s, {speedup}× the target alone ({base} tokens/s). "
                   "{n:token|tokens} per run, EOS ignored."),

    # ------------------------------------------------------------ trace files and replay
    "trace.intro": ("Download the run as JSON; upload a trace to replay it round by round without loading any "
                    "model (prepare runs on a GPU, replay them anywhere). **Download as HTML** gives one file that "
                    "replays the run or the loaded trace in any browser, offline: no server, no model, no network."),
    "replay.choose": "Choose a trace file (.json) to replay.",
    "replay.unusable": "Not a usable trace: {error}",
    "replay.start": "Replaying a trace: {n:round|rounds}, no model needed.",
    "replay.round": "Replay: round {n} of {total}",
    "replay.done": "Replay finished: {tokens:token|tokens} in {rounds:round|rounds} (timings as recorded).",
    "replay.stopped": "Replay stopped after {n} of {total:round|rounds}.",
    "replay.recorded_on": "recorded on {device} {dtype}",

    # ------------------------------------------------------------ the classroom (step mode, lab, what-if, lessons)
    "tab.classroom": "Classroom",
    "lang.name": "English",
    "lang.unknown": "Language {code!r} is not available; showing English. Available: en, es.",
    "cls.intro": ("Step through real rounds one decision at a time, check the losslessness promise with thousands "
                  "of samples, and play with the theory. Open a prepared lesson (no model needed) or use the run "
                  "shown above. Keys: → next, ← previous, Space play/pause."),
    "cls.lesson": "Prepared lesson",
    "cls.open": "Open lesson",
    "cls.use_run": "Use the shown run",
    "cls.presenter": "Presenter mode (large text)",
    "cls.tab_step": "Step through",
    "cls.tab_lab": "Losslessness lab",
    "cls.tab_whatif": "What-if calculator",
    "cls.prev": "← Previous",
    "cls.next": "Next →",
    "cls.play": "▶ Play",
    "cls.pause": "⏸ Pause",
    "cls.speed": "Seconds per decision",
    "cls.round": "Round",
    "cls.go": "Go",
    "cls.seed": "Seed for re-drawn u",
    "cls.redraw": "Re-draw u",
    "cls.recorded": "Back to the recorded u",
    "cls.predict": "Predict, then reveal",
    "cls.guess_accept": "✓ I predict: accept",
    "cls.guess_reject": "✗ I predict: reject",
    "cls.score": "Your predictions: {right} of {total} right",
    "cls.predict_right": "right",
    "cls.predict_wrong": "wrong",
    "cls.predict_where": "Predictions count at a test, before u is shown: switch on \u201cPredict, then reveal\u201d and step to a test.",
    "cls.empty": "Open a lesson or use the shown run to step through its rounds.",
    "cls.where": "Round {round} of {rounds} · step {stop} of {stops}: {kind}",
    "cls.kind_draft": "drafting",
    "cls.kind_verify": "verification",
    "cls.kind_test": "acceptance test",
    "cls.kind_correction": "correction",
    "cls.kind_bonus": "bonus",
    "cls.state_pending": "not tested yet",
    "cls.state_correction": "correction",
    "cls.state_bonus": "bonus",
    "cls.draft_text": ("The **draft** proposes {k:token|tokens}, one after another, each drawn from its own distribution "
                       "**q** (shown under each token)."),
    "cls.draft_lookup_text": ("**Prompt lookup** proposes {k:token|tokens}: what followed the same last tokens "
                              "earlier in the prompt or the output. Nothing is drawn at random, so **q** = 1 for "
                              "each (shown under each token), and the test keeps a token with probability p."),
    "cls.verify_text": ("The **target** reads the {k:drafted token|drafted tokens} in **one** forward pass and gets its "
                        "probability **p** at each of {n:position|positions} (shown under each token)."),
    "cls.test_text": "Test of draft {pos}, {token}: keep it when a uniform **u** falls below **a = min(1, p/q)**.",
    "cls.formula": "a = min(1, p/q) = min(1, {p}/{q}) = {a}; u = {u} {rel} {a} → {verdict}",
    "cls.formula_hidden": "a = min(1, p/q) = min(1, {p}/{q}) = {a}; u = ? → accepted or rejected?",
    "cls.greedy_note": ("Greedy run: p and q are one-hot, so a is 1 when the draft's token is the target's top "
                        "token and 0 otherwise; no u can change the verdict."),
    "cls.ubar_accept": "✓ accept",
    "cls.ubar_reject": "✗ reject",
    "cls.ubar_label": "unit bar split at a = {a}; u = {u}; {verdict}",
    "cls.ubar_label_hidden": "unit bar split at a = {a}; u not shown yet",
    "cls.correction_text": ("Draft {pos} was rejected, so the round ends with a **correction**: {token}, drawn from "
                            "the residual max(0, p − q) normalised (r = {r})."),
    "cls.correction_greedy": "Greedy: the residual is one-hot on the target's top token.",
    "cls.see_mass": "The picture below shows where that residual comes from.",
    "cls.bonus_text": ("All drafts passed ({k:draft|drafts}), so the target's forward already holds p at position {pos}: the "
                       "**bonus** token {token} is drawn from it (p = {p}). This round emits {k} + 1 tokens."),
    "cls.sum_accepted": "{n} of {k:draft|drafts} accepted",
    "cls.sum_no_draft": "no drafts this round",
    "cls.sum_rejected": "{token} rejected: p = {p}, q = {q}",
    "cls.sum_correction": "correction {token} from the residual",
    "cls.sum_bonus": "bonus {token} from p",
    "cls.sum_hidden": "The round's summary appears once its tests are done.",
    "cls.redrawn": "u re-drawn (draw {draw}, seed {seed}); p and q are the recorded ones.",
    "cls.redraw_same": "The rejection point is unchanged.",
    "cls.redraw_changed": "The new u moves the rejection point.",
    "cls.redraw_approx": ("The correction would be drawn from the residual max(0, p − q) at the new point; only "
                          "the recorded top-5 lists are known, so the correction shown is approximate."),
    "cls.redraw_bonus_unknown": ("Every draft now passes: the bonus would be drawn from p at position K+1, which "
                                 "the recorded run never needed, so it is unknown here."),
    "cls.redraw_greedy": "Greedy: a is 0 or 1, so a new u never changes a verdict.",
    "cls.speed_clamped": "Speed {value} is outside {lo}…{hi} seconds; using the nearest allowed value.",
    "cls.mass_title": "Round {round}, draft {pos}: where the correction comes from",
    "cls.mass_empty": "Step to a rejection to see p, q and the residual",
    "cls.mass_top": "p split into min(p, q) and max(0, p − q); q marked",
    "cls.mass_bottom": "the residual normalised: the correction's distribution r",
    "cls.mass_overlap": "min(p, q): leaves as accepted drafts",
    "cls.mass_residual": "max(0, p − q): the residual",
    "cls.mass_q": "q (draft)",
    "cls.mass_p": "p (target)",
    "cls.mass_r": "r = residual / Σ",
    "cls.mass_drawn": "↻ drawn",
    "cls.mass_why": ("**Why p comes back exactly:** a token y leaves this position either as the accepted draft, "
                     "with probability min(p, q)(y) (shaded), or as the correction: the rejection chance "
                     "1 − Σ min(p, q) ≈ {reject} times r(y). Together: min(p, q) + max(0, p − q) = p."),
    "cls.mass_example": ("For {token}: min(p, q) = {overlap}, plus {reject} × r = {reject} × {r} = {resid}; "
                         "together p = {p}."),
    "cls.mass_exact": "r is the decoder's own residual (top-5); p and q over the recorded top-5 lists.",
    "cls.mass_approx": ("Approximate: built from the recorded top-5 lists only; tokens outside them are missing, "
                        "so the residual shown is not the full one."),
    "cls.lesson_choose": "Choose a lesson first.",
    "cls.lesson_opened": "{title}: {description}",
    "cls.lesson_unknown": "There is no lesson called {name!r}.",
    "cls.lesson_missing": "The lesson file {name} is missing or unreadable.",
    "cls.lesson_too_big": "The lesson file {name} is too large.",
    "cls.lesson_index_bad": "The lesson index is malformed ({error}).",
    "cls.lesson_bad": "The lesson {name!r} is not a usable trace: {error}",
    "cls.no_run": "No run yet: press Generate (or replay a trace) first, or open a lesson.",
    "cls.run_opened": "Stepping through the shown run: {n:round|rounds}.",

    "cls.tab_race": "Drafter race",
    "cls.tab_run": "The whole run: accepted lengths and time",
    "cls.run_intro": "After the last round, the run as a whole: how many drafts each round accepted against what independent acceptances predict, and where each round's time went.",
    "race.intro": ("**The same prompt, four drafters.** The target alone runs first; then the draft model, prompt "
                   "lookup, hybrid and a draft tree each decode the same prompt with the same K, greedily (T = 0), each "
                   "run as Generate runs it, and the target alone is Generate's own comparison, so the speedups are "
                   "the ones Generate shows. Greedy speculative decoding must write exactly the target's own "
                   "tokens, so the race is also a losslessness check. Each token is coloured by who proposed it."),
    "race.prompt": "Prompt",
    "race.default_prompt": ("Rename the variable total to running_sum in this function and return the whole "
                            "function.\n\n```python\ndef mean(values):\n    total = 0\n    count = 0\n"
                            "    for v in values:\n        total += v\n        count += 1\n    if count == 0:\n"
                            "        return 0.0\n    return total / count\n```"),
    "race.tokens": "Tokens per drafter",
    "race.k": "K (draft tokens per round; the tree's nodes)",
    "race.run": "Start the race",
    "race.stop": "Stop the race",
    "race.target": "target alone",
    "race.running": "Racing {lane} ({i} of {n}), {seconds} s…",
    "race.loading": "Loading the model pair for the race…",
    "race.stopping": "Stopping the race after the current round…",
    "race.stopped": "Race stopped: the drafters that finished are shown; the rest did not run.",
    "race.failed": "The race stopped with an error: {error}",
    "race.done_same": "Done: every drafter wrote exactly the target alone's {n:token|tokens}.",
    "race.done_differs": ("Done, but {lanes} did not write the target alone's tokens. Greedy speculative decoding "
                          "is exact only up to the forwards' floating-point rounding: a near tie can tip."),
    "race.col_drafter": "drafter",
    "race.col_tau": "τ (tokens per round)",
    "race.col_accept": "acceptance",
    "race.col_tps": "tokens/s",
    "race.col_speedup": "vs target alone",
    "race.col_lookup": "from prompt lookup",
    "race.col_same": "same text as the target alone",
    "race.same": "yes",
    "race.differs": "no: differs from token {n}",
    "race.reference": "(the reference)",
    "race.legend": "Who proposed each token:",
    "race.src_model": "the draft model (accepted)",
    "race.src_ngram": "prompt lookup (accepted)",
    "race.src_target": "the target itself (correction or bonus, or the target alone)",
    "race.tip": "token {i}: {source}",
    "race.figures_note": ("τ counts tokens per target forward; acceptance is accepted / drafted; tokens/s is "
                          "decoding only (reading the prompt is the same for every lane and not counted). "
                          "Measured once, on this machine, while others may share it."),
    "race.lesson_note": ("The prepared lesson “A code edit: prompt lookup copies long runs” steps through a "
                         "recorded run of this prompt, round by round."),

    "lab.intro": ("**One position, many samples.** p and q come from one forward of each model over the prefix; "
                  "then N first tokens are drawn through the real rule (K = 1) or through a known real-world "
                  "bug. A lossless rule's histogram matches p up to sampling noise; a broken one drifts away."),
    "lab.models": "Models",
    "lab.tiny": "Tiny demo models (instant, no download)",
    "lab.pair": "The model pair chosen on the left",
    "lab.variant": "Rule",
    "lab.v_real": "the real rule (specviz.engine.rule.verify)",
    "lab.v_always_accept": "bug: always accept",
    "lab.v_correction_from_p": "bug: correction drawn from p, not the residual",
    "lab.v_untempered_q": "bug: q from untempered logits, draft samples tempered (transformers #47932 kind)",
    "lab.v_greedy_softmax_q": "bug: greedy drafts with a softmax q (#32867)",
    "lab.prompt": "Prefix",
    "lab.default_prompt": "The cat sat on the",
    "lab.temperature": "Temperature",
    "lab.n": "Samples N",
    "lab.run": "Draw samples",
    "lab.stop": "Stop",
    "lab.preparing": "Computing p and q (one forward of each model)…",
    "lab.progress": "{n} of {total:sample|samples}…",
    "lab.done": "{n} of {total:sample|samples}: done.",
    "lab.stopped": "Stopped after {n} of {total:sample|samples}.",
    "lab.stopped_none": "Stopped before any sample was drawn.",
    "lab.stats": "total variation {tv} · chi-square p-value {pvalue} · sampling noise alone gives TV ≈ {noise}",
    "lab.consistent": "consistent with p: the histogram is the target's distribution",
    "lab.biased": "biased: the histogram is not p (p-value below 0.001)",
    "lab.why_real": ("Accepted drafts contribute min(p, q); rejections add max(0, p − q) through the residual; "
                     "the sum is p."),
    "lab.why_broken": "This variant breaks min(p, q) + max(0, p − q) = p, so the output drifts from p.",
    "lab.t1_note": "At T = 1 the tempered and untempered q are the same: this bug only shows at other temperatures.",
    "lab.bad_choice": "Unknown model or rule choice.",
    "lab.failed": "The lab stopped with an error: {error}",
    "lab.empty": "Press Draw samples",
    "lab.title": "First token, {n:sample|samples}: {variant}",
    "lab.series_samples": "emitted tokens ({n:sample|samples})",
    "lab.series_p": "target p",
    "lab.y": "share",
    "lab.cmp_title": "Why not just compare tokens?",
    "lab.cmp_intro": ("The same {n:draft|drafts} from q, checked two ways against this position's p: by the rule, "
                      "and by exact matching (the target draws its own token from p and keeps the draft only if "
                      "the two are the same)."),
    "lab.cmp_rule": ("The rule (accept x when u < min(1, p(x)/q(x))): measured {measured} ± {se}; "
                     "formula Σ min(p, q) = {formula}"),
    "lab.cmp_exact": ("Exact matching (accept when the target's sample equals x): measured {measured} ± {se}; "
                      "formula Σ p·q = {formula}"),
    "lab.cmp_why": ("Exact matching keeps a draft only when the target's own, independent draw is the same token "
                    "(chance Σ p·q); the rule keeps the whole overlap min(p, q). Here that is {exact} against "
                    "{rule}: exact matching would throw away {lost} of the drafts the rule keeps. Σ p·q is never "
                    "above Σ min(p, q), and falls far below it when p and q spread over many tokens; the rule's "
                    "output is still exactly p."),

    "whatif.intro": ("**What-if.** With independent acceptances of probability α, a round emits "
                     "(1 − α^(K+1)) / (1 − α) tokens on average and costs K draft forwards (c each, in target "
                     "forwards) plus one verify forward."),
    "whatif.alpha": "α: acceptance probability per draft token",
    "whatif.k": "K: draft tokens per round",
    "whatif.c": "c: one draft forward / one target forward",
    "whatif.alpha_name": "α",
    "whatif.k_name": "K",
    "whatif.c_name": "c",
    "whatif.preset": "Worked example: 70B target, 8B draft, K = 5, α = 0.78",
    "whatif.tokens": "expected tokens per round",
    "whatif.speedup": "expected speedup",
    "whatif.best": "best K = {k}",
    "whatif.measured": "the shown run (τ measured)",
    "whatif.k_axis": "K (draft tokens per round)",
    "whatif.now": ("α = {alpha}, K = {k}, c = {c}: {tokens} tokens per round, speedup {speedup}× "
                   "(verify cost 1); best K = {best}."),
    "whatif.measured_line": "Shown run: α̂ = {alpha}, K = {k}, τ = {tau} tokens per round, c = {c} (timed).",
    "whatif.measured_estimated": ("Shown run: α̂ = {alpha}, K = {k}, τ = {tau} tokens per round, c ≈ {c} "
                                  "(estimated from the run's own draft and verify times)."),
    "whatif.no_run": "No run or lesson open: only the theory is shown.",
    "whatif.worked": ("Worked example: α = {alpha}, K = {k}, c ≈ 8/70 = {c} gives {tokens} tokens per round and "
                      "a speedup of {speedup}× by this formula. Published measurements: Chen et al. 2023 (DeepMind, "
                      "“Accelerating Large Language Model Decoding with Speculative Sampling”, arXiv 2302.01318) "
                      "report 2–2.5× with Chinchilla 70B in a distributed setup, and Leviathan et al. 2023 (ICML, "
                      "“Fast Inference from Transformers via Speculative Decoding”, arXiv 2211.17192) 2–3× on "
                      "T5-XXL. This formula "
                      "reaches {claimed}× here only with c ≈ {c_claim}."),
    "why.intro": ("**Why it is fast, measured.** Speculative decoding assumes one target forward over K+1 "
                  "positions costs about as much as over one (memory-bound). Time it on this machine."),
    "why.k": "K (positions 1…K+1)",
    "why.k_name": "K",
    "why.run": "Time the forwards",
    "why.title": "Target forward time against the number of positions",
    "why.x": "positions in one target forward",
    "why.y": "milliseconds",
    "why.target_series": "target forward",
    "why.draft_series": "draft, one token",
    "why.holds": ("The premise holds on {device}: {n:position|positions} cost {ratio}× one position ({target} ms); "
                  "a draft token costs {draft} ms."),
    "why.fails": ("The premise fails on {device}: {n:position|positions} cost {ratio}× one position ({target} ms), so "
                  "verifying is not nearly free here and the speedup shrinks; a draft token costs {draft} ms."),
    "why.failed": "Could not time the forwards: {error}",
    # ------------------------------------------------------------ trace files: what is wrong, and where
    "tracefile.not_json": "the file is not valid JSON: it goes wrong at line {line}, column {column}",
    "tracefile.too_deep": "the JSON is nested more than {limit} levels deep; a trace never is",
    "tracefile.not_trace": "not a specviz trace (missing \"format\": \"{format}\")",
    "tracefile.version": "unsupported trace version {version} (this specviz reads {supported})",
    "tracefile.rounds": "\"rounds\" must be a list of at most {limit} rounds",
    "tracefile.object": "{where} must be an object, not {got}",
    "tracefile.list": "{where} must be a list, not {got}",
    "tracefile.unknown": "{where}: unknown field(s) {names}",
    "tracefile.missing": "{where}: missing",
    "tracefile.null": "{where} must not be null",
    "tracefile.type": "{where} must be {expected}, not {got}",
    "tracefile.expect_int": "a whole number",
    "tracefile.expect_float": "a number (NaN and infinity are not allowed)",
    "tracefile.expect_str": "text",
    "tracefile.expect_bool": "true or false",
    "tracefile.expect_dict": "an object",
    "tracefile.expect_ints": "a list of whole numbers",
    "tracefile.range": "{where} must be between {lo} and {hi}, not {value}",
    "tracefile.probability": "{where} is a probability and must be between 0 and 1, not {value}",
    "tracefile.index": "{where}.index must be {expected} (rounds are numbered from 0, in order), not {value}",
    "tracefile.too_many_drafts": "{where} drafted {n:token|tokens}, more than K = {k}",
    "tracefile.accepted_prefix": "{where}: the accepted drafts must come first, before any draft that was not accepted",
    "tracefile.rejected_at": "{where}.rejected_at is {value}, but the round drafted only {n:token|tokens}",
    "tracefile.rejected_not_first": ("{where}.rejected_at must be the first draft that was not accepted "
                                     "(position {expected}, counted from 0), not {value}"),
    "tracefile.no_rejection": "{where}: {n:draft|drafts} but only the first {m} accepted, and no rejected_at",
    "tracefile.verdict": "{where}: the verdict contradicts the numbers (u = {u}, a = {a}; accepted iff u < a)",
    "tracefile.correction": "{where} has a correction without a rejected draft (or with a bonus as well)",
    "tracefile.bonus": "{where} has a bonus although a draft was rejected",
    "tracefile.emitted": ("{where}.emitted must be the accepted drafts followed by the correction or bonus, "
                          "{expected}, not {value}"),
    "tracefile.budget": "the rounds emit {n:token|tokens}, more than max_new_tokens = {limit}",

    # ------------------------------------------------------------ drafters, compiled forwards, whether it pays
    "ui.drafter": "Drafter: who proposes the K tokens",
    "ui.drafter_info": ("Prompt lookup (n-gram) copies what followed the same tokens earlier in the prompt or output, "
                        "with no draft model; hybrid uses it when the last 3+ tokens recur, else the draft model."),
    "drafter.model": "draft model",
    "drafter.ngram": "prompt lookup (n-gram)",
    "drafter.hybrid": "hybrid (prompt lookup, else the draft model)",
    "drafter.trimmed": "draft model with a trimmed vocabulary",
    "drafter.hybrid_trimmed": "hybrid with the trimmed draft (prompt lookup, else the trimmed draft model)",
    "drafter.other": "{name}",
    "hover.source_model": "proposed by the draft model",
    "hover.source_ngram": ("proposed by prompt lookup (n-gram): copied from what followed the same tokens earlier, "
                           "not by the draft model (q is one-hot)"),
    "hover.source_other": "proposed by: {name}",
    "legend.ngram": "n: proposed by prompt lookup (n-gram), not by the draft model",
    "card.drafter": "drafter: {name}",
    "card.drafter_round": "drafter: {name} · this round: {source}",
    "ui.advanced": "Advanced",
    "ui.lookup_k": "Lookup K (the hybrid drafters)",
    "ui.lookup_k_info": ("The most tokens a prompt-lookup round proposes, 0 to {hi}; 0 = K. A looked-up token costs no "
                         "draft step, only a row of the verify."),
    "ui.compile": "Compiled forwards (torch.compile with CUDA graphs)",
    "ui.compile_info": ("auto = on with a CUDA GPU (CUDA graphs without torch.compile on ZeroGPU), off on a CPU. "
                        "The first run per K compiles and captures the forwards (tens of seconds, shown in the "
                        "status); later runs reuse them."),
    "compile.auto": "auto",
    "compile.on": "on",
    "compile.off": "off",
    "input.drafter": "Unknown drafter “{value}”: choose one of the drafters listed.",
    "input.compile": "Compiled forwards must be auto, on, off or graphs, not “{value}”.",
    "input.lookup_k_drafter": "Lookup K applies to the hybrid drafters only: set it to 0 for this drafter.",
    "input.ngram_adaptive": ("Adaptive K stops on the draft model's confidence, and the prompt-lookup (n-gram) "
                             "drafter has no draft model: switch adaptive K off or choose another drafter."),
    "status.costs": ("Timing one forward pass of each model for c and the verify cost (once per pair, device "
                     "and K)… {seconds} s"),
    "status.warmup": ("Compiling the forwards and capturing CUDA graphs for K = {k} (once per process and "
                      "shape)… {seconds} s"),
    "tile.warmup": "compile and graph capture {seconds} s (before the run; not counted in tokens/s)",
    "pair.gpu_preset": "{name} (Hub, GPU)",
    "pays.cannot": ("On this machine speculation cannot pay for this pair: a draft step costs c = {c} of a target "
                    "step and verifying K = {k:token|tokens} costs {verify}× one token, so at α = {alpha} the theory "
                    "gives {theory}×."),
    "pays.measured": "This run measured {speedup}× against the target alone.",
    "pays.did_not": ("Speculation did not pay in this run: it measured {speedup}× against the target alone, "
                     "although with c = {c}, verifying K = {k:token|tokens} at {verify}× one token and α = {alpha} the "
                     "theory gives {theory}× (the rest is the decoder's own overhead)."),
    "pays.weights": ("Both sides ran the same target with its weights stored as {weights}, the fastest target "
                     "alone this app measured here."),
    "pays.hint_cpu": "A pair with a larger gap pays, e.g. Qwen2.5-0.5B → Qwen2.5-7B on a GPU.",
    "pays.hint_gpu": "A pair with a larger gap pays, e.g. Qwen2.5-0.5B → Qwen2.5-14B with compiled forwards.",
    # --- the API a program sees
    "api.about.generate": ("Run speculative decoding (the draft q proposes, the target p verifies) on a prompt; "
                           "returns the text, the metrics and the trace."),
    "api.about.replay": "Read a trace without any model; returns its metrics and its text.",
    "api.about.sweep": ("Measure throughput against K: the target alone once, then speculative decoding at each K "
                        "from k_lo to k_hi."),
    "api.about.what_if": ("The theory's expectation for a per-token acceptance alpha, K draft tokens and a "
                          "draft/target cost ratio c."),
    "api.about.race": ("A drafter race on one prompt: the target alone, then the draft model, prompt lookup, the "
                       "hybrid and a tree."),
    "api.flag": "“{name}” takes true or false, not {value}.",
    "api.text": "“{name}” takes text.",
    "api.arguments": ("“{endpoint}” takes {n:value|values} in “data”, in this order: {names} (this call gave "
                      "{got})."),
    "api.body_for": ("The body must be a JSON object whose “data” is the list of “{endpoint}”'s "
                     "{n:value|values}, in this order: {names}."),
    "api.body": ("The body must be a JSON object whose “data” is a list of the endpoint's values, in order "
                 "(GET /gradio_api/info lists them)."),
    "api.unknown_endpoint": "There is no endpoint “{endpoint}” here; the endpoints are: {names}.",
    "api.no_trace": "Give a trace: the object generate returned, or the text of a trace file (.json).",
    "api.not_a_trace": "it is not a trace object",
    # --- draft trees
    "tracefile.tree_status": "{where} must be \"accepted\", \"rejected\" or \"untried\", got {value}",
    "tracefile.tree_path": ("{where}: the accepted nodes must form one path from the root, each the child of the "
                            "one before, spelling the round's accepted drafts"),
    "tree.caption": ("Draft tree: {n} nodes checked in one target pass, {accepted} accepted. Bold: the accepted "
                     "path; struck: rejected (each child is tested against what its rejected elder siblings left "
                     "of p); faded: never tested."),
    "tree.root": "the text so far",
    "tree.numbers": "q {q} · p {p} · u {u} {rel} a {a}",
    "tree.untried": "not tested",
    "tree.tip": "q = {q}, p = {p}, a = min(1, r/q) = {a} against the residual r, u = {u}: {status}",
    "tree.status_accepted": "accepted",
    "tree.status_rejected": "rejected",
    "tree.status_untried": "never tested",
    "tree.correction": "correction from the residual after every child here was rejected ({prob})",
    "tree.bonus": "bonus from p after the last accepted node ({prob})",
    "tree.tip_untried": "q = {q}, p = {p}: never tested (an earlier branch won, or its parent was rejected)",
    "drafter.tree": "draft tree",
    # --- ZeroGPU and CUDA graphs without torch.compile
    "compile.graphs": "graphs",
    "status.graphs_fallback": ("Capturing the CUDA graphs failed ({reason}), so this run decoded with eager "
                               "forwards: slower, and speculation may not pay."),
    "zerogpu.long": ("This request may need about {seconds} s of GPU time and one ZeroGPU call is given at most "
                     "{limit} s: it may be cut short. Fewer tokens, a smaller K or a narrower sweep fit."),
    "zerogpu.quota_sweep": ("On ZeroGPU this sweep asks for up to {time} of GPU time from your daily quota ({anon} "
                            "without an account, {free} with a free one): you need that much left for it to start. "
                            "Fewer Ks or tokens ask for less; replays use none."),
    "zerogpu.quota_race": ("On ZeroGPU this race asks for up to {time} of GPU time from your daily quota ({anon} "
                           "without an account, {free} with a free one): you need that much left for it to start. "
                           "Fewer tokens or a smaller K ask for less; replays use none."),
    "zerogpu.minutes": "{m} min {s} s",
    "zerogpu.whole_minutes": "{m} min",
    "zerogpu.seconds": "{s} s",
    "memory.refused": ("{name} needs about {need} GB ({weights} GB of weights in {dtype} and {cache} GB of KV "
                       "cache) and {device} has {free} GB free: choose a smaller pair."),

    # --- errors in the user's language
    "error.unexpected": "Something went wrong on the server; the details are in its log.",
    "error.model_load": "The models could not be loaded; the details are in the server's log.",
    "error.file_unreadable": "the file could not be read",
    "vocab.not_found": "the vocabulary table {path} was not found",
    "vocab.unreadable": "the vocabulary table {path} could not be read ({reason})",
    "vocab.not_table": "{path} is not a vocabulary table ({format})",
    "vocab.bad_ids": "the vocabulary table {path} is damaged: its ids must be distinct and below its model's vocabulary",
    "vocab.model_size": ("the vocabulary table {name} is for a {table_vocab}-token model vocabulary and this pair has "
                         "{vocab}: the trimmed drafters need a table made for this pair (scripts/make_vocab.py); "
                         "another drafter runs without one"),
    "vocab.other_tokenizer": ("the vocabulary table {name} was made for another tokenizer ({table_size:token|tokens}, "
                              "fingerprint {table_fp}; this pair's has {size:token|tokens}, fingerprint {fp}): the trimmed "
                              "drafters need a table made for this pair (scripts/make_vocab.py); another drafter runs "
                              "without one"),
    "tracefile.not_text": "the file is not text: a trace is JSON written in UTF-8",
    "tracefile.empty": "the file is empty",
    "tracefile.truncated": "the file ends before its JSON does: it was probably cut short",
    "load.role.draft": "draft",
    "load.role.target": "target",
    "load.ready": "models ready",
    "load.checking_ids": "checking model ids",
    "load.tokenizer": "loading tokenizer",
    "load.tokenizers": "loading tokenizers",
    "load.draft_named": "loading draft model {name}",
    "load.target_named": "loading target model {name}",
    "load.timing_kernels": "timing the linear kernels",
    "load.preparing_kernels": "preparing {path} kernels",
    "load.storing_draft": "storing the draft's weights as {weights}",
    "load.timing_weights": "timing the target's weight formats",
    "load.timing_read_ahead": "timing the target's products with and without read-ahead",
    "load.storing_target": "storing the target's weights as {weights}",
    "load.building_kernels": "building specviz's 4-bit CPU kernels (once; under a minute)",
    "load.waiting_kernels": "waiting for another process's kernel build ({seconds} s)",
    "load.kernels_unavailable": "specviz's 4-bit kernels are unavailable here ({reason}); PyTorch's kernels run instead",
    "weights.q4a8": "4-bit with int8 activations (q4a8)",
    "load.locating": "locating packaged parts of {name}",
    "load.assembling_parts": "assembling and verifying {name} ({n:part|parts})",
    "load.assembling": "assembling and verifying {name}",
    "load.gpu_memory": "{role} model {ref} does not fit in GPU memory",
    "load.cannot_load": "cannot load {role} model {ref} (the server's log says why)",
    "load.cannot_load_tokenizer": "cannot load the tokenizer of {role} model {ref} (the server's log says why)",
    "load.vocab": ("draft {draft} and target {target} do not share a vocabulary ({draft_n} vs {target_n:token|tokens}, "
                   "{diff} differ); pick models from the same family"),
    "load.placing": "placing {name}'s weights for the kernels ({done} of {total} layers)",
    "load.reading_metadata": "reading the configuration and tokenizer of {name} (once)",
    "load.vocab_first": ("draft {draft} and target {target} do not share a vocabulary (first difference at {first}); "
                         "pick models from the same family"),
    "gguf.both": "give both the draft and the target as GGUF files, or neither as one",
    "gguf.missing": "{role} model file {path} does not exist",
    "gguf.unreadable": "{role} model {name} is not a complete GGUF file (cut short or not GGUF)",
    "gguf.architecture": ("{role} model {name} is a {arch} model; specviz runs GGUF files of these architectures: "
                          "{supported}"),
    "gguf.type": ("{role} model {name} stores {tensor} as {type}; specviz reads these GGUF types: {supported}"),
    "gguf.metadata": "cannot read the configuration or tokenizer of {role} model {name}: {reason}",
    "gguf.tensor_missing": "GGUF file {name} has no tensor for {tensor}",
    "gguf.outside": "{role} model {name} is not one of the GGUF files this server offers",
    "load.empty": "{role} model is empty; give a Hub id like Qwen/Qwen2.5-0.5B-Instruct",
    "load.no_folders": "{role} model {spec}: local folders are not allowed here; use a Hub id",
    "load.offline": "{role} model {repo} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set",
    "load.gated": "{role} model {repo} is gated: accept its licence on huggingface.co and set HF_TOKEN",
    "load.not_found": ("{role} model {repo} was not found on the Hugging Face Hub (check the spelling; private repos "
                       "need HF_TOKEN)"),
    "load.http": "the Hugging Face Hub answered HTTP {status} for {role} model {repo}",
    "load.unreachable": ("cannot reach the Hugging Face Hub ({endpoint}) to fetch {role} model {repo}, and it is not "
                         "in the local cache"),
    "status.queued_eta": ("{place} in line, about {seconds} s. Yours starts when the runs ahead of it end; Stop "
                          "cancels it."),
    "ordinal.one": "{n}st",
    "ordinal.two": "{n}nd",
    "ordinal.few": "{n}rd",
    "ordinal.other": "{n}th",
    "input.pair": "Unknown model pair “{value}”: choose one from the list.",

    # --- classroom: deep links, "why it is fast" with its spread, Gradio's own words, presenter mode
    "cls.step_name": "Step",
    "cls.correction_chance": ("Before u was drawn, a test at this position fails with chance 1 − Σ min(p, q) ≈ "
                              "{reject}, over every token the draft could have proposed; this draft's own test "
                              "failed with chance 1 − a = {miss}."),
    "why.stop": "Stop timing",
    "why.noisy": ("Too noisy to tell on {device}: {n:position|positions} cost from {lo}× to {hi}× one position "
                  "over {reps:repetition|repetitions}. A spread that reaches both sides of {bound}×, or below {floor}× (more positions "
                  "cannot cost less than one), is the timer's noise, not the model's: run it again on an idle "
                  "machine."),
    "why.spread": "Median of {reps:repetition|repetitions}; from {lo}× to {hi}×.",
    "why.progress": ("Timing repetition {done} of {total}: so far {n:position|positions} cost {ratio}× one position "
                     "(from {lo}× to {hi}×)…"),
    "why.stopped": "Stopped after {done} of {total:repetition|repetitions}.",
    "why.budget": "Ended after {done} of {total:repetition|repetitions}: the time limit was reached.",
    "gradio.copy": "Copy",
    "gradio.more_tabs": "More tabs",
    "gradio.footer_nav": "Gradio footer navigation",
    "gradio.upload_drop": "Click to upload or drop files",
    "gradio.file_upload": "File upload",
    "gradio.reset_default": "Reset to default value",
    "gradio.settings": "Settings",
    # Gradio's settings and "Use via API" panels: the English Gradio writes there (spaces collapsed), then the
    # page's own (specviz.ui.locale_panels).
    "gradio.panel.theme_light": "☀︎ Light",
    "gradio.panel.theme_dark": "⏾ Dark",
    "gradio.panel.theme_system": "🖥︎ System",
    "gradio.panel.language": "Language",
    "gradio.panel.pwa_off": "Progressive Web App is not enabled for this app. To enable it, start your Gradio app with",
    "gradio.panel.screen_studio": "Screen Studio",
    "gradio.panel.screen_studio_about": "Screen Studio allows you to record your screen and generates a video of your app with automatically adding zoom in and zoom out effects as well as trimming the video to remove the prediction time.",
    "gradio.panel.start_by": "Start recording by clicking the",
    "gradio.panel.start_recording": "Start Recording",
    "gradio.panel.start_then": "button below and then sharing the current browser tab of your Gradio demo. Use your app as you would normally to generate a prediction.",
    "gradio.panel.stop_by": "Stop recording by clicking the",
    "gradio.panel.stop_then": "button in the footer of the demo.",
    "gradio.panel.auto_zoom": "Include automatic zoom in/out",
    "gradio.panel.auto_trim": "Include automatic video trimming",
    "gradio.panel.history_about": "Choose where new runs are saved and revisit earlier results.",
    "gradio.panel.view_history": "View run history",
    "gradio.panel.history_storage": "History storage",
    "gradio.panel.this_browser": "This browser",
    "gradio.panel.private_device": "Private to this device",
    "gradio.panel.documentation": "documentation",
    "gradio.panel.api_documentation": "API documentation",
    "gradio.panel.api_recorder": "API Recorder",
    "gradio.panel.api_endpoint": "API endpoint",
    "gradio.panel.api_endpoints": "API endpoints",
    "gradio.panel.choose_way": "Choose one of the following ways to interact with the API.",
    "gradio.panel.copy_page": "Copy Page",
    "gradio.panel.install_the": "1. Install the",
    "gradio.panel.client_open": "client (",
    "gradio.panel.docs": "docs",
    "gradio.panel.if_not_installed": ") if you don't already have it installed.",
    "gradio.panel.latest_gradio": "1. Make sure you are using the latest version of Gradio:",
    "gradio.panel.skill_install": "2. Install the usage of this Space as a Skill for your coding agent by running this in your terminal:",
    "gradio.panel.instead_of": "Instead of",
    "gradio.panel.you_can_use": ", you can use",
    "gradio.panel.or_comma": ", or",
    "gradio.panel.combine_flags": ". Combine flags to install for multiple agents. Use",
    "gradio.panel.user_level": "to install user-level instead of per-project.",
    "gradio.panel.skill_added": "3. This will add a skill to your coding agent that describes how to use this Space via Python, JavaScript, and cURL API. The skill will look like this:",
    "gradio.panel.mcp_server": "This Gradio app can also serve as an MCP server, with an MCP tool corresponding to each API endpoint. To enable this, launch this Gradio app with",
    "gradio.panel.or_set_the": "or set the",
    "gradio.panel.env_variable_to": "env variable to",
    "gradio.panel.find_endpoint": "2. Find the API endpoint below corresponding to your desired function in the app. Copy the code snippet, replacing the placeholder values with your own input data.",
    "gradio.panel.or_use_the": "Or use the",
    "gradio.panel.auto_requests": "to automatically generate your API requests.",
    "gradio.panel.api_name": "API name:",
    "gradio.panel.required": "Required",
    "gradio.panel.default": "Default:",
    "gradio.panel.returns": "Returns",
    "gradio.panel.no_routes": "No API Routes found for",
    "gradio.panel.run_history": "Run history ({n})",
    "gradio.panel.accepts": "Accepts {n} parameter",
    "gradio.panel.accepts_many": "Accepts {n} parameters",
    "gradio.panel.elements": "{n} element",
    "gradio.panel.elements_many": "{n} elements",
    "gradio.panel.input_value": 'The input value that is provided in the "{nth}" Api component.',
    "gradio.panel.output_value": 'The output value that appears in the "{nth}" Api component.',
    "gradio.panel.usage": "{n} requests ({pct}% successful, p50: {time})",
    "plotly.autoscale": "Autoscale",
    "plotly.box_select": "Box Select",
    "plotly.lasso_select": "Lasso Select",
    "plotly.pan": "Pan",
    "plotly.reset_axes": "Reset axes",
    "plotly.zoom": "Zoom",
    "plotly.zoom_in": "Zoom in",
    "plotly.zoom_out": "Zoom out",
    "plotly.download": "Download plot as a PNG",
    "plotly.spikes": "Toggle Spike Lines",
    "plotly.download_plot": "Download plot",
    "plotly.taking_snapshot": "Taking snapshot - this may take a few seconds",
    "plotly.snapshot_ok": "Snapshot succeeded",
    "plotly.snapshot_failed": "Sorry, there was a problem downloading your snapshot!",
    "plotly.double_click_zoom": "Double-click to zoom back out",
    "plotly.double_click_legend": "Double-click on legend to isolate one trace",
    "plotly.closest": "Show closest data on hover",
    "plotly.compare": "Compare data on hover",
    # the Spanish page: words Gradio and Plotly write in English as the start of a longer attribute
    # ("number input for <label>", "Produced with Plotly.js (v3.3.1)"), and one more exact one (the footer's
    # recording button); locale.py replaces the start and keeps the rest.
    "gradio.number_input_for": "number input for",
    "gradio.range_slider_for": "range slider for",
    "gradio.stop_recording": "Stop Recording",
    # Spaces: an operator's setting, said at start-up
    "zerogpu.bad_size": "{name} is \"{value}\"; ZeroGPU sizes are {choices}.",
    "plotly.produced_with": "Produced with Plotly.js",

    # --- a page that never freezes, Stop, the first answer
    "status.costs_after": ("The answer is complete. Now timing one forward pass of each model for the sentence "
                           "under the tiles (once per pair, device and K; Stop skips it)… {seconds} s"),
    "live.earlier": "Earlier rounds not shown here: {n} (the output box and the trace download hold them all).",
    "replay.reading": "Reading the trace file… {seconds} s",
    "replay.stopping": "Stopping the replay…",
    "status.loading_left": "Loading models: {step} ({percent}) · {seconds} s, about {left} s left at this pace",

    # --- draft trees in the app: the Generate form and the round log
    "ui.drafter_tree_info": ("Draft tree: a dynamic tree of K nodes per target pass (EAGLE-2's rule), verified in "
                             "one forward; K is then the node budget (at most {limit}). With sampling, a fixed tree "
                             "of K nodes."),
    "input.tree_adaptive": ("Adaptive K does not apply to the draft tree: it already places its K nodes where the "
                            "draft is most confident. Switch adaptive K off or choose another drafter."),
    "input.tree_nodes": "A draft tree has at most {limit} nodes per round: set K to {limit} or less.",
    "input.tree_compile": ("The draft tree runs without compiled forwards (its attention mask changes every "
                           "round): under Compiled forwards, choose auto or off."),
    # --- classroom: a draft tree step by step
    "ctree.kind_tree": "the drafted tree",
    "ctree.kind_residual": "what is left after a rejection",
    "ctree.root": "the text so far",
    "ctree.label": "The draft tree of this round, with the walk so far",
    "ctree.tree_text": ("The **draft** grew a tree of {n:node|nodes}, up to {depth} deep: where it was unsure it "
                        "kept a second candidate for the same position. The **target** read the whole tree in "
                        "**one** forward pass, each node seeing only its own branch, so it now knows p after every "
                        "node. The walk starts at the root and tries the candidates in order."),
    "ctree.node_text": ("Depth {depth}, candidate {rank} of {n}: {token}. It is tested against {against}: keep it "
                        "when a uniform **u** falls below **a = min(1, r/q)**."),
    "ctree.against_p": "r = p, the target's distribution here (it is the first candidate)",
    "ctree.against_r": "r, what is left of p after {n:candidate|candidates} rejected before it (the residual)",
    "ctree.formula": "a = min(1, r/q) = min(1, {r}/{q}) = {a}; u = {u} {rel} {a} → {verdict}",
    "ctree.formula_hidden": "a = min(1, r/q) = min(1, {r}/{q}) = {a}; u = ? → accepted or rejected?",
    "ctree.then_down": "Accepted: the walk moves down to its children ({n:node|nodes}).",
    "ctree.then_leaf": "Accepted, and it has no children: the bonus comes next.",
    "ctree.then_accepted": "Accepted.",
    "ctree.then_sibling": "Rejected: the next candidate, {token}, is tested against what is left.",
    "ctree.then_correction": "Rejected, and no candidate is left here: the correction is drawn from the residual.",
    "ctree.greedy_note": ("Greedy run: r is one-hot on the target's top token, so a is 1 when the candidate is that "
                          "token and 0 otherwise."),
    "ctree.residual_text": ("{token} was rejected. The next candidate, {next}, is not tested against r again: in that test "
                            "every token the draft could have proposed here already had its chance to be accepted, "
                            "with probability min(r, q), so that much of r is used up. {next} is tested against what "
                            "is left, normalised: **r′ = norm(max(0, r − q))**, the residual. That is what keeps the "
                            "output distributed exactly as the target's p."),
    "ctree.changed": "The probabilities this rejection changed (r before → r′ after):",
    "ctree.change": "{token}: {before} → {after}",
    "ctree.not_recorded": "not among the recorded top tokens",
    "ctree.reject_chance": ("Before a candidate was drawn, a test here fails with chance Σ max(0, r − q) = {reject}, over "
                            "every token the draft could have proposed; this candidate's own test failed with chance "
                            "1 − a = {miss}."),
    "ctree.residual_greedy": "Greedy: removing a wrong candidate leaves the target's top token where it was.",
    "ctree.see_mass": "The picture below shows r and q before the rejection and the residual r′ after it.",
    "ctree.correction_text": ("Every candidate at depth {depth} was rejected, so the round ends with a "
                              "**correction**: {token}, drawn from the last residual (r′ = {r})."),
    "ctree.bonus_text": ("The walk accepted {n:node|nodes} and reached a leaf: the target's forward already holds p "
                         "after it, so the round ends with a **bonus** token {token}, drawn from p (p = {p})."),
    "ctree.sum_path": "accepted path of {n:token|tokens}: {tokens}; {tried} of {total:node|nodes} tried",
    "ctree.sum_wins": "a later candidate won {n:time|times}",
    "ctree.mass_title": "Round {round}, depth {depth}: what is left after rejecting {token}",
    "ctree.mass_top": "r split into min(r, q) and max(0, r − q); q marked",
    "ctree.mass_bottom": "the residual normalised: r′, what the next candidate is tested against",
    "ctree.mass_note": "Here the p bars are r: what the node was tested against (p itself for a first candidate).",
    "ctree.redraw": "A tree round is shown with its recorded u only: a new u would walk a different branch.",
    # --- nothing runs away on a CPU, refused not clamped, the classroom's small lies
    "input.compile_cpu": ("This machine has no CUDA GPU, and compiled forwards (“on”) and CUDA graphs (“graphs”) "
                          "need one: choose “auto” or “off”."),
    "input.temperature_low": "Temperature must be 0 (greedy) or between {lo} and {hi}.",
    "input.k_order": ("The smallest K ({lo}) is larger than the largest K ({hi}): give the smaller one as the "
                      "smallest."),
    "status.withdrawn": "Withdrawn: your request left the queue before it started, and nothing ran.",
    "tracefile.tree_parent": ("round {round}: node {node} of its draft tree names node {parent} as its parent, but a "
                              "parent must come before its children, so this tree would loop back on itself"),
    "tracefile.tree_root": ("round {round}: node {node} of its draft tree names a parent that does not exist "
                            "({parent}); the root's children name -1"),
    "why.too_few": ("Stopped after {done} of {total:repetition|repetitions}: too few to judge the premise on {device}. "
                    "So far {n:position|positions} cost {ratio}× one position ({target} ms)."),
    "why.too_few_budget": ("The time limit ended the timing after {done} of {total:repetition|repetitions}: too few "
                           "to judge the premise on {device}. So far {n:position|positions} cost {ratio}× one "
                           "position ({target} ms)."),
    "pays.tree_cannot": ("On this machine a draft tree cannot pay for this pair: drafting a round runs the draft "
                         "model {reads} times at c = {c} of a target step each, and verifying {k:node|nodes} costs "
                         "{verify}× one token, so each round costs {cost} target steps while it emits τ = {tau} "
                         "(tokens per round): {theory}× at best."),
    "pays.tree_did_not": ("The draft tree did not pay in this run: it measured {speedup}× against the target alone, "
                          "although τ = {tau} (tokens per round) with the draft model run {reads} times a round at "
                          "c = {c} and a verify of {k:node|nodes} at {verify}× one token would allow {theory}× (the "
                          "rest is the decoder's own overhead)."),
    # ---------------------------------------------------------------- a run as one HTML file (viz/export.py)
    "ui.download_html": "Download as HTML (offline replay)",
    "export.title": "specviz · a recorded speculative decoding run",
    "export.intro": ("This page replays a recorded run round by round. It needs no server, no model and no network: "
                     "everything is inside this one file. Hover, tap or focus a token for its q, p, a = min(1, p/q), "
                     "u and verdict."),
    "export.nav": "Step through the rounds",
    "export.first": "|◀ First",
    "export.prev": "◀ Previous",
    "export.next": "Next ▶",
    "export.last": "Last ▶|",
    "export.play": "Play",
    "export.pause": "Pause",
    "export.slider": "Round shown",
    "export.round_of": "Round {n} of {total}",
    "export.start": "The prompt alone, before round 1 of {total}",
    "export.keys": "Keys: ← and → step one round, Home and End jump, the space bar plays and pauses.",
    "export.live": "The text, round by round",
    "export.charts": "Acceptance and timing, up to the round shown",
    "export.timing_sub": "the newest {n:round|rounds} up to the one shown; the round shown is outlined",
    "export.timing_bar": "round {round}: draft {draft} ms, verify {verify} ms, {tokens:token|tokens} emitted",
    "export.noscript": "Without JavaScript every round is shown at once; with it, the buttons step through them.",
    "export.made": "Exported by specviz from a trace of {rounds:round|rounds} ({tokens:token|tokens}).",
    "export.too_many_rounds": ("the trace has {n:round|rounds}; an exported page holds at most {limit} (the file would be too "
                               "large for a browser to open quickly)"),
    "export.log_window": "The newest {n} cards up to the round shown; the slider reaches every round.",
}
