"""The classroom's forms (what-if, "why it is fast", the losslessness lab, the step view's round and seed), checked
in one place as `inputs` checks the main form's: each field parsed, refused (never clamped) with a sentence in the
page's language."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from ..classroom.lab import MAX_SAMPLES as LAB_MAX_SAMPLES
from ..classroom.lab import VARIANTS as LAB_VARIANTS
from ..classroom.whatif import C_MAX as WHATIF_C_MAX
from ..classroom.whatif import K_MAX as WHATIF_K_MAX
from ..classroom.race import MAX_RACE_K
from ..limits import APP_MAX_LAB_PROMPT_CHARS, APP_MAX_RACE_PROMPT_CHARS, APP_MAX_RACE_TOKENS, APP_WHY_MAX_K, MAX_SEED
from ..strings import DEFAULT_LANG, t
from .inputs import InputError, check_prompt, number_between, pair_ids, sampling_config, whole_number


def _whole(field_key: str, lo: int, hi: int) -> Callable:
    return lambda v, lang: whole_number(v, field_key, lo, hi, lang)


# The classroom's boxes are plain numbers, as the main form's are: a slider's own box clamped 1.5 to 1 and a
# `gr.Number(minimum=…, precision=0)` rounded 2.5 to 2 or raised Gradio's bare "Error"; here each is refused with
# a sentence in the page's language, and nothing runs.
LAB_MIN_TEMPERATURE = 0.05      # the lab's temperature box, its slider's range before: the lab samples, so no 0
LAB_MAX_TEMPERATURE = 2.0


def _lab_choice(models, variant, lang: str) -> tuple[str, str]:
    if models not in ("tiny", "pair") or variant not in LAB_VARIANTS:
        raise InputError(t("lab.bad_choice", lang))
    return models, variant


def _lab_prompt(value, lang: str) -> str:
    return check_prompt(value, lang, APP_MAX_LAB_PROMPT_CHARS)


CLASSROOM_CHECKS: dict[str, Callable] = {
    "wi_alpha": lambda v, lang: number_between(v, "whatif.alpha_name", 0.0, 1.0, lang),
    "wi_k": _whole("whatif.k_name", 1, WHATIF_K_MAX),
    "wi_c": lambda v, lang: number_between(v, "whatif.c_name", 0.0, WHATIF_C_MAX, lang),
    "why_k": _whole("why.k_name", 1, APP_WHY_MAX_K),
    "lab_temp": lambda v, lang: number_between(v, "lab.temperature", LAB_MIN_TEMPERATURE, LAB_MAX_TEMPERATURE, lang),
    "lab_n": _whole("lab.n", 100, LAB_MAX_SAMPLES),
    "lab_seed": _whole("field.seed", 0, MAX_SEED),
    "lab_prompt": _lab_prompt,
    "cls_seed": _whole("cls.seed", 0, MAX_SEED),
    "race_prompt": lambda v, lang: check_prompt(v, lang, APP_MAX_RACE_PROMPT_CHARS),
    "race_tokens": _whole("race.tokens", 1, APP_MAX_RACE_TOKENS),
    "race_k": _whole("field.k", 1, MAX_RACE_K),
}
WHATIF_FORM = ("wi_alpha", "wi_k", "wi_c")
LAB_FORM = ("lab_temp", "lab_n", "lab_seed", "lab_prompt")
# The race's own fields, then the page's model pair (the race runs on the pair chosen on the left).
RACE_FIELDS = ("race_prompt", "race_tokens", "race_k")
RACE_FORM = (*RACE_FIELDS, "pair", "draft_id", "target_id")


def classroom_checked(form: Mapping[str, Any], names: tuple[str, ...], lang: str = DEFAULT_LANG) -> dict[str, Any]:
    """{name: parsed value} of the classroom fields `names`; InputError on the first bad one."""
    return {name: CLASSROOM_CHECKS[name](form[name], lang) for name in names}


def whatif_settings(alpha, k, c, lang: str = DEFAULT_LANG) -> tuple[float, int, float]:
    """(α, K, c) of the what-if calculator (page and API), each refused outside its range, never clamped."""
    v = classroom_checked(dict(zip(WHATIF_FORM, (alpha, k, c))), WHATIF_FORM, lang)
    return v["wi_alpha"], v["wi_k"], v["wi_c"]


def lab_settings(models, variant, temperature_, n, seed, lang: str = DEFAULT_LANG, prompt=None):
    """(models, variant, SamplingConfig, n, seed[, prompt]) of the losslessness lab; the prompt (when given) is
    refused beyond APP_MAX_LAB_PROMPT_CHARS rather than cut."""
    models, variant = _lab_choice(models, variant, lang)
    form = dict(lab_temp=temperature_, lab_n=n, lab_seed=seed, lab_prompt=prompt)
    v = classroom_checked(form, LAB_FORM if prompt is not None else LAB_FORM[:3], lang)
    settings = (models, variant, sampling_config(v["lab_temp"], 0, 1.0, lang), v["lab_n"], v["lab_seed"])
    return settings if prompt is None else (*settings, v["lab_prompt"])


def classroom_round(value, n_rounds: int, lang: str = DEFAULT_LANG) -> int:
    """The classroom's round box: a whole number from 1 to the trace's rounds."""
    return whole_number(value, "cls.round", 1, max(1, n_rounds), lang)


def race_settings(form: Mapping[str, Any], lang: str = DEFAULT_LANG) -> tuple[str, int, int, tuple]:
    """(prompt, tokens, K, pair ids) of the drafter race (`RACE_FORM`); each refused out of range, never clamped."""
    v = classroom_checked(form, RACE_FIELDS, lang)
    return (v["race_prompt"], v["race_tokens"], v["race_k"],
            pair_ids(form.get("pair"), form.get("draft_id"), form.get("target_id"), lang))
