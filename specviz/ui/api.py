"""The API a program sees: `generate`, `replay`, `sweep` and `what_if` (and `race`, in `api_race`), one set for every
language of the app.

Every other event of the page is private (`events.listen`): a program that opens
"Use via API", or `gradio_client.Client(url).view_api()`, meets these five
endpoints only. They take their settings by name, with integers typed as
integers, and return plain JSON (numbers, text, the trace in its file format),
never page fragments. Inputs go through the page's own checks
(`inputs.run_settings`, `inputs.sweep_settings`, `inputs.FIELD_CHECKS`), so the
limits in `specviz.limits` hold here too; a refused input is a `gr.Error` whose
sentence comes from the strings table (in English: the API has no page language).

No `from __future__ import annotations` here: Gradio reads the parameter and
return types of each method to document the endpoint, and needs real types.

`generate` and `sweep` take many settings: each method receives them as one frozen dataclass
(`GenerateRequest`, `SweepRequest`), and `register` hands Gradio `by_fields(method, request)`, whose signature
has one parameter per field, so the endpoint a program sees (names, order, types, defaults) is the dataclass's.
"""
import copy
import dataclasses
import functools
import inspect
import json
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional

import gradio as gr

from ..classroom import whatif
from ..runtime.report import RunReport
from ..trace.compare import compare_runs
from ..stats import finite
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round, Step, Trace
from ..trace.files import TraceFormatError
from ..viz.format import strip_special
from ..viz.html import plain_rounds_text
from . import api_edge, classroom_inputs, inputs, worker
from .gpu_calls import gpu
from .inputs import InputError
from .run import collect, job_of, make_trace
from .session import AppContext
from .worker import DecodeJob

LANG = DEFAULT_LANG          # the API's sentences: English (a program has no page language)
ENDPOINTS = ("generate", "replay", "sweep", "what_if")
USES_MODELS = {"generate", "sweep"}   # these share the page's "decode" slot: no two timed runs overlap
# The parameters whose names differ from the page form's (`inputs.RUN_FORM`, `inputs.SWEEP_FORM`): ZeroGPU's duration
# is computed from the call's own arguments, as the page's is from its form (`gpu_calls.request_of`).
GPU_FIELDS = {"generate": {"max_new_tokens": "max_new", "compare": "compare_switch"},
              "sweep": {"tokens": "sweep_tokens"}}
# Each endpoint's description in the "Use via API" panel, from the strings table (the root page's in English, a
# language page's in its own: `Blocks.get_api_info`).
ABOUT = {"generate": "api.about.generate", "replay": "api.about.replay", "sweep": "api.about.sweep",
         "what_if": "api.about.what_if", "race": "api.about.race"}


class Blocks(gr.Blocks):
    """`gr.Blocks` whose every language page documents the same five endpoints.

    They are registered once, on the root page (so they keep their plain names), and Gradio 6 builds a page's
    "Use via API" panel from that page's own dependencies and `/info?page=`: /es said "No API Routes found",
    telling a Spanish reader there was no API. Each language page (`language_pages`, set by the app) is given the
    root page's public endpoints in both.
    """

    language_pages: tuple[str, ...] = ()

    def get_api_info(self, all_endpoints: bool = False, page: Optional[str] = None):
        if page not in self.language_pages:
            return super().get_api_info(all_endpoints=all_endpoints, page=page)
        info = copy.deepcopy(super().get_api_info(all_endpoints=all_endpoints, page=""))
        for name, endpoint in (info or {}).get("named_endpoints", {}).items():   # the panel's text, in the page's
            if name.lstrip("/") in ABOUT:                                           # language
                endpoint["description"] = t(ABOUT[name.lstrip("/")], page)
        return info

    def validate_inputs(self, block_fn, inputs):
        """A program's call with too few or too many values gets one sentence naming the endpoint's parameters and
        no traceback in the log (`api_edge`); Gradio's own check covers the page's events."""
        refused_call = api_edge.arguments_refused(block_fn, inputs)
        if refused_call is not None:
            raise refused_call
        super().validate_inputs(block_fn, inputs)

    def get_config_file(self):
        config = super().get_config_file()
        pages = config.get("page") or {}
        shared = [fn._id for fn in self.fns.values() if fn.page == "" and fn.api_visibility == "public"]
        for lang in self.language_pages:
            if lang in pages:
                have = pages[lang]["dependencies"]
                have.extend(i for i in shared if i not in have)
        return config


def register(ctx: AppContext, concurrency_limit: int = 1) -> None:
    """Add these four endpoints (`api_race` adds the fifth) to the Blocks being built (call it once, inside the
    app's `with gr.Blocks()`)."""
    api = Endpoints(ctx)
    for name in ENDPOINTS:
        fn = by_fields(getattr(api, name), REQUESTS[name]) if name in REQUESTS else getattr(api, name)
        if name in USES_MODELS:
            gr.api(gpu(fn, api_fields=GPU_FIELDS[name]), api_name=name, api_description=t(ABOUT[name], LANG),
                   concurrency_limit=concurrency_limit, concurrency_id="decode")
        else:   # no model: a replay or a what-if never waits behind a decode
            gr.api(fn, api_name=name, api_description=t(ABOUT[name], LANG), concurrency_limit=None)


def refused(e: BaseException) -> gr.Error:
    """A refused value as the page says it, without a traceback in the server's log."""
    return gr.Error(inputs.error_message(e, LANG), print_exception=False)


def _flag(value: Any, name: str) -> bool:
    """A true/false parameter; anything else (a string "false" would read as true) is refused."""
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    # Written as JSON, the caller's own notation (Python's repr said 'false' for the text "false").
    raise InputError(t("api.flag", LANG, name=name, value=json.dumps(value, ensure_ascii=False, default=str)[:40]))


def text_parameter(value: Any, name: str) -> str:
    """A text parameter (None reads as empty); a number or a list is refused."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(t("api.text", LANG, name=name))
    return value


@dataclass(frozen=True)
class GenerateRequest:
    """The settings of a `generate` call, as a program names them (the page's form names some differently:
    GPU_FIELDS)."""

    prompt: str
    k: int = 3
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    drafter: str = "model"
    adaptive: bool = False
    raw: bool = False
    pair: str = "packaged"
    draft_id: str = ""
    target_id: str = ""
    compile: str = "auto"
    compare: bool = False
    lookup_k: int = 0


@dataclass(frozen=True)
class SweepRequest:
    """The settings of a `sweep` call, as a program names them."""

    prompt: str
    k_lo: int = 1
    k_hi: int = 8
    tokens: int = 32
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    raw: bool = False
    pair: str = "packaged"
    draft_id: str = ""
    target_id: str = ""


REQUESTS = {"generate": GenerateRequest, "sweep": SweepRequest}   # the endpoints whose settings come as one object


def by_fields(method: Callable, request: type) -> Callable:
    """`method(r: request)` as Gradio and programs call an endpoint: one argument per field of the dataclass
    `request`, by position or by name, the fields' defaults applying (an unknown name is a TypeError, as with any
    function). Gradio builds the endpoint's parameters from the signature shown here (`inspect.signature` and
    `typing.get_type_hints`: gradio.utils.get_function_params), and `gpu_calls` reads a call's tokens and K from it."""
    fields = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=f.type,
                                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(request)]
    returns = inspect.signature(method).return_annotation

    @functools.wraps(method)
    def endpoint(*args, **kwargs):
        return method(request(*args, **kwargs))

    endpoint.__signature__ = inspect.Signature(fields, return_annotation=returns)
    # A new dict: functools.wraps gave the endpoint the method's own (the method keeps its `r` annotation).
    endpoint.__annotations__ = {**{f.name: f.annotation for f in fields}, "return": returns}
    return endpoint


class Endpoints:
    """The endpoints as methods over one app's context (its model cache and its sweep).

    `generate` and `sweep` take their request object; their docstrings document its fields, which are the
    endpoint's parameters (`by_fields`)."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    def generate(self, r: GenerateRequest) -> dict:
        """Run speculative decoding (draft q proposes, target p verifies) on a prompt; return the text, metrics, trace.

        Parameters:
            prompt: the text to continue (wrapped in the model's chat template unless raw is true)
            k: draft tokens per round, 1 to 16 (with adaptive, the most per round)
            max_new_tokens: tokens to generate, 1 to 512
            temperature: 0 (greedy) to 2
            top_k: keep the k most likely tokens; 0 is off
            top_p: nucleus sampling, in (0, 1]
            seed: 0 to 2^31 - 1; the same seed and settings give the same output
            drafter: "model" (the draft model), "ngram" (prompt lookup), "hybrid", "trimmed", "hybrid_trimmed" or
                "tree" (a dynamic tree of k nodes, at most 16, verified in one target pass; not with adaptive or compile "on")
            adaptive: stop a round's drafting once the draft is unsure (K becomes a maximum)
            raw: send the prompt as is, without the chat template
            pair: "packaged" (the app's own pair), a Hub preset of the page's pair list, or "custom"
            draft_id: the draft's Hub id, when pair is "custom"
            target_id: the target's Hub id, when pair is "custom"
            compile: "auto", "on", "off" or "graphs" (compiled forwards; "auto" compiles on a GPU only; "on" and
                "graphs" are refused where no CUDA GPU is)
            compare: also run the target alone afterwards (same seed and settings) for the speedup
            lookup_k: with a hybrid drafter, the most tokens a prompt-lookup round proposes, 1 to 16; 0 is k
        Returns:
            {"text": the decoded output, "metrics": acceptance rate, tau, tokens/s... of the run,
            "trace": the whole run in the trace file format (give it to replay, or save it as .json),
            "comparison": with compare, the target alone's tokens/s, the speedup and (greedy) whether the outputs
            are identical; else null}
        """
        try:
            s = inputs.run_settings({
                "prompt": text_parameter(r.prompt, "prompt"), "k": r.k, "max_new": r.max_new_tokens, "temperature": r.temperature,
                "top_k": r.top_k, "top_p": r.top_p, "seed": r.seed, "drafter": text_parameter(r.drafter, "drafter"),
                "compile": text_parameter(r.compile, "compile"), "pair": text_parameter(r.pair, "pair"),
                "draft_id": text_parameter(r.draft_id, "draft_id"), "target_id": text_parameter(r.target_id, "target_id"),
                "adaptive": _flag(r.adaptive, "adaptive"), "raw": _flag(r.raw, "raw"),
                "compare_switch": _flag(r.compare, "compare"), "lookup_k": r.lookup_k}, LANG)
        except InputError as e:
            raise refused(e) from None
        loaded = self._load(s.pair_ids)
        try:
            ids = inputs.encode_prompt(loaded, s.prompt, s.raw, s.max_new_tokens, s.k, LANG)
        except InputError as e:
            raise refused(e) from None
        rounds, report, steps = decode(job_of(loaded, s, ids))
        trace = make_trace(loaded, s, ids, rounds, report)
        m = trace.metrics()
        return {"text": trace.output_text, "metrics": finite(m), "trace": json.loads(trace.to_json()),
                "comparison": comparison(trace, m, steps)}

    def replay(self, trace: str | dict) -> dict:
        """Read a trace without any model and return its metrics and its text.

        Parameters:
            trace: a trace as generate returns it, or the text of a trace file (.json) the page saved
        Returns:
            {"text": the output the trace recorded, "metrics": acceptance rate, tau, tokens/s... as recorded,
            "rounds": the number of rounds}
        """
        parsed = read_trace(trace)
        return {"text": replayed_text(parsed), "metrics": finite(parsed.metrics()), "rounds": len(parsed.rounds)}

    def sweep(self, r: SweepRequest) -> dict:
        """Measure throughput against K: the target alone once, then speculative decoding at each K in k_lo..k_hi.

        Parameters:
            prompt: the text to continue (chat template unless raw)
            k_lo: the smallest K, 1 to 16
            k_hi: the largest K, 1 to 16, at least k_lo (a range given the wrong way round is refused)
            tokens: tokens per run, 4 to 256
            temperature: 0 (greedy) to 2
            top_k: keep the k most likely tokens; 0 is off
            top_p: nucleus sampling, in (0, 1]
            seed: 0 to 2^31 - 1
            raw: send the prompt as is, without the chat template
            pair: "packaged", a Hub preset of the page's pair list, or "custom"
            draft_id: the draft's Hub id, when pair is "custom"
            target_id: the target's Hub id, when pair is "custom"
        Returns:
            {"target_tokens_per_s", "best_k", "rows": [{"k", "tokens_per_s", "speedup", "acceptance_rate", "alpha",
            "tau", "c", "verify_cost", "theory_speedup", ...} per K], ...}; a number that could not be measured is null
        """
        try:
            s = inputs.sweep_settings({
                "prompt": text_parameter(r.prompt, "prompt"), "k_lo": r.k_lo, "k_hi": r.k_hi, "sweep_tokens": r.tokens,
                "temperature": r.temperature, "top_k": r.top_k, "top_p": r.top_p, "seed": r.seed,
                "pair": text_parameter(r.pair, "pair"), "draft_id": text_parameter(r.draft_id, "draft_id"),
                "target_id": text_parameter(r.target_id, "target_id"), "raw": _flag(r.raw, "raw")}, LANG)
        except InputError as e:
            raise refused(e) from None
        loaded = self._load(s.pair_ids)
        try:
            ids = inputs.encode_prompt(loaded, s.prompt, s.raw, s.n_tokens, s.ks[-1], LANG)
            result = worker.torch_thread.run(lambda: self.ctx.sweep()(
                loaded.target, loaded.draft, ids, s.ks, s.sampling, s.n_tokens, seed=s.seed, tokenizer=loaded.tokenizer))
        except InputError as e:
            raise refused(e) from None
        except Exception as e:  # noqa: BLE001 - said as a sentence, the server keeps serving
            raise gr.Error(t("sweep.failed", LANG, error=inputs.error_message(e, LANG)), print_exception=False) from e
        return finite(result.to_dict())

    def what_if(self, alpha: float, k: int = 5, c: float = 0.114) -> dict:
        """The theory's expectation for a per-token acceptance alpha, K draft tokens and a draft/target cost ratio c.

        Parameters:
            alpha: the chance that the target accepts a draft token, 0 to 1
            k: draft tokens per round, 1 to 16
            c: one draft forward's cost over one target forward's, 0 to 2
        Returns:
            {"expected_tokens" and "speedup" at k, "best_k", and per K = 1..16 the curves "ks",
            "tokens_per_round", "speedups"; "worked_example": alpha 0.78, K 5, c 8/70, and "claimed" 2.5,
            the top of the 2-2.5x Chen et al. 2023 measured with Chinchilla 70B}
        """
        try:
            a, kk, cc = classroom_inputs.whatif_settings(alpha, k, c, LANG)
        except InputError as e:
            raise refused(e) from None
        curves = whatif.curves(a, cc)
        at = curves.ks.index(kk)
        return finite({"alpha": a, "k": kk, "c": cc, "expected_tokens": curves.tokens[at],
                       "speedup": curves.speedup[at], "best_k": curves.best_k, "ks": curves.ks,
                       "tokens_per_round": curves.tokens, "speedups": curves.speedup,
                       "worked_example": asdict(whatif.worked_example())})

    def _load(self, pair_ids):
        """The pair from the app's cache; a refused id or a failed load is a sentence, as on the page."""
        try:
            return worker.torch_thread.run(self.ctx.load, pair_ids, lambda fraction, message: None)
        except Exception as e:  # noqa: BLE001 - worded as waiting.load words it
            known = isinstance(e, InputError) or type(e).__name__ == "ModelLoadError"
            message = inputs.error_message(e, LANG)
            raise gr.Error(message if known else t("status.prepare_failed", LANG, error=message),
                           print_exception=False) from e


def decode(job: DecodeJob) -> tuple[list[Round], RunReport, list[Step]]:
    """The run through the page's own run path (`ui.run`: same job, worker, decoder call and events): its rounds, its
    report and the target alone's steps (with `job.compare`; else none). A failure is a sentence."""
    outcome = collect(job)
    if outcome.error is not None:
        raise gr.Error(t("status.failed", LANG, error=inputs.error_message(outcome.error, LANG)),
                       print_exception=False)
    return outcome.rounds, outcome.spec_report, outcome.steps or []


def comparison(trace: Trace, m: dict, steps: list[Step]) -> dict | None:
    """The speculative run against the target alone (`specviz.trace.compare`), as JSON; None without the target's run."""
    c = compare_runs(trace.output_ids, m["tokens_per_s"], steps, trace.greedy)
    if c is None:
        return None
    return finite({"target_tokens_per_s": c.base_tokens_per_s, "tokens_per_s": c.spec_tokens_per_s,
                   "speedup": c.speedup, "greedy": c.greedy, "identical": c.identical,
                   "first_difference": c.first_diff, "target_tokens": c.n_base})


def read_trace(value: Any) -> Trace:
    """A trace given as JSON text or as the object itself: size-checked, then read with every field checked."""
    try:
        if isinstance(value, dict):
            value = json.dumps(value, ensure_ascii=False)
        if not isinstance(value, (str, bytes)) or not value.strip():
            raise InputError(t("api.no_trace", LANG))
        inputs.check_trace_size(len(value.encode("utf-8") if isinstance(value, str) else value))
        return Trace.from_json(value)
    except InputError as e:
        raise refused(e) from None
    except (TraceFormatError, ValueError, RecursionError) as e:
        raise gr.Error(t("replay.unusable", LANG, error=_trace_error(e)), print_exception=False) from None


def _trace_error(e: BaseException) -> str:
    if isinstance(e, TraceFormatError):
        return inputs.error_message(e, LANG)
    return t("api.not_a_trace", LANG)   # json.dumps of a hostile object: its own text is Python's, not a sentence


def replayed_text(trace: Trace) -> str:
    """The text a replay shows: the recorded output, or the rounds' token texts when the trace has none."""
    return strip_special(trace.output_text) if trace.output_text else strip_special(plain_rounds_text(trace.rounds))

