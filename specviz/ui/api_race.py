"""The API's `race` endpoint: the classroom's drafter race (`specviz.classroom.race`) for a program, as plain JSON.

Its own module beside the other four endpoints' (`specviz.ui.api`, whose loading it shares); the app registers
it right after them (`app.build_app`), on the root page, so it keeps its plain name and every language page lists
it, and in the page's decode slot (a race never overlaps a run or a sweep, so its times stay
honest), with ZeroGPU's duration read from the call's own tokens and K (`gpu_calls.request_of`), as the page's
race is sized from its boxes. Inputs go through the page's race checks (`classroom_inputs.race_settings`): the
limits in `specviz.limits` hold, and a value out of range is refused with the page's sentence, never clamped.
The sentences are English, as the other endpoints': a program has no page language.

No `from __future__ import annotations` here: Gradio reads the parameter and return types to document the
endpoint, and needs real types.
"""
from typing import Any, Mapping

import gradio as gr

from ..classroom import race as cr
from ..stats import finite
from ..strings import t
from . import classroom_inputs, inputs
from .api import LANG, Endpoints, refused, text_parameter
from .gpu_calls import gpu
from .inputs import InputError
from .session import AppContext
from .tabs.classroom_race import DEFAULT_K, DEFAULT_TOKENS

NAME = "race"
# The endpoint's parameters by the page form's names (`classroom_inputs.RACE_FORM`), for the checks and ZeroGPU.
FORM_NAMES = {"prompt": "race_prompt", "max_new_tokens": "race_tokens", "k": "race_k"}
TEXT_PARAMETERS = ("prompt", "pair", "draft_id", "target_id")


def register(ctx: AppContext, concurrency_limit: int = 1) -> None:
    """Add `race` to the Blocks being built, in the decode slot, sized for ZeroGPU by its own arguments."""
    endpoint = RaceEndpoint(ctx)
    gr.api(gpu(endpoint.race, api_fields=FORM_NAMES), api_name=NAME, api_description=t("api.about.race", LANG),
           concurrency_limit=concurrency_limit, concurrency_id="decode")


def race_form(arguments: Mapping[str, Any]) -> dict:
    """The call's arguments as the page's race form; a text parameter given a number or a list is refused."""
    for name in TEXT_PARAMETERS:
        text_parameter(arguments[name], name)   # the other endpoints' check; None stays None for the form
    return {FORM_NAMES.get(name, name): value for name, value in arguments.items()}


class RaceEndpoint(Endpoints):
    """The race over one app's context; its model cache and the load's sentences are the other endpoints'."""

    def race(self, prompt: str, max_new_tokens: int = DEFAULT_TOKENS, k: int = DEFAULT_K, pair: str = "packaged",
             draft_id: str = "", target_id: str = "") -> dict:
        """A drafter race on one prompt: the target alone, then the draft model, prompt lookup, hybrid and a tree.

        Parameters:
            prompt: the text to continue (in the model's chat template), at most 2000 characters
            max_new_tokens: tokens per drafter, 1 to 128 (the target alone and four drafters each write this many)
            k: draft tokens per round for the chains and the tree's nodes, 1 to 16
            pair: "packaged" (the app's own pair), a Hub preset of the page's pair list, or "custom"
            draft_id: the draft's Hub id, when pair is "custom"
            target_id: the target's Hub id, when pair is "custom"
        Returns:
            {"k", "max_new_tokens", "prompt_tokens", "identical": every drafter wrote the target alone's tokens,
            "lanes": per lane ("target" first, then "model", "ngram", "hybrid", "tree"): "tau", "acceptance_rate",
            "tokens_per_s", "speedup" (against the target alone), "identical", "first_difference", "lookup_share",
            "tokens" ([{"id", "text", "source"}], source "model", "ngram" or "target"), ...}; a number that
            cannot be measured is null
        """
        try:
            form = race_form(dict(prompt=prompt, max_new_tokens=max_new_tokens, k=k, pair=pair, draft_id=draft_id,
                                  target_id=target_id))
            text, tokens, kk, pair_ids = classroom_inputs.race_settings(form, LANG)
        except InputError as e:
            raise refused(e) from None
        loaded = self._load(pair_ids)
        try:
            ids = inputs.encode_prompt(loaded, text, False, tokens, kk, LANG)
        except InputError as e:
            raise refused(e) from None
        try:
            lanes = cr.run_race(loaded, ids, kk, tokens)
        except Exception as e:  # noqa: BLE001 - said as a sentence, the server keeps serving
            raise gr.Error(t("race.failed", LANG, error=inputs.error_message(e, LANG)), print_exception=False) from e
        return race_json(lanes, loaded.decode, kk, tokens, len(ids))


def lane_json(reference: cr.Lane, lane: cr.Lane, text_of) -> dict:
    """One lane's figures as numbers (NaN where nothing was measured: `finite` makes it null)."""
    is_reference = lane.entrant == cr.TARGET
    v = cr.verdict(reference, lane)
    base = reference.tokens_per_s
    return {"drafter": lane.entrant, "tokens_out": lane.tokens, "rounds": lane.rounds, "drafted": lane.drafted,
            "accepted": lane.accepted, "tau": lane.tau, "acceptance_rate": lane.acceptance,
            "tokens_per_s": lane.tokens_per_s, "seconds": lane.seconds,
            "speedup": float("nan") if is_reference or not base > 0 else lane.tokens_per_s / base,
            "identical": v.same, "first_difference": v.first_diff,
            "lookup_share": float("nan") if is_reference else lane.share("ngram"),
            "longest_lookup_run": lane.longest,
            "tokens": [{"id": p.token_id, "text": text_of([p.token_id]), "source": p.source} for p in lane.pieces]}


def race_json(lanes: list, decode, k: int, max_new_tokens: int, prompt_tokens: int) -> dict:
    """The race as plain JSON: the settings, whether every drafter was lossless, and each lane."""
    reference = lanes[0]
    shown = [lane_json(reference, lane, decode) for lane in lanes]
    return finite({"k": k, "max_new_tokens": max_new_tokens, "prompt_tokens": prompt_tokens,
                   "identical": all(lane["identical"] for lane in shown), "lanes": shown})
