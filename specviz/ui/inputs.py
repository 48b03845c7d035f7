"""Checks on what the page sends: every number bounded, every message ready to show as is.

Sliders and number boxes can be edited (or posted to the API) with anything, so
each value is parsed and bounded here (limits in `specviz.limits`), and a bad
one raises `InputError` with a message in the page's language.
"""
from __future__ import annotations

import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..runtime.decoding import COMPILE_CHOICES
from ..models.devices import gpu_available
from ..engine.drafters import DRAFTERS
from ..engine.options import HYBRID_DRAFTERS
from ..errors import KeyedError, ModelLoadError
from ..runtime.forwards import CUDA_ONLY
from ..limits import ADAPTIVE_THRESHOLD, APP_MAX_HUB_ID_CHARS, APP_MAX_K, APP_MAX_NEW_TOKENS, APP_MAX_PROMPT_CHARS, \
    APP_MAX_PROMPT_TOKENS, APP_MAX_SWEEP_TOKENS, APP_MAX_TEMPERATURE, APP_MAX_TREE_NODES, \
    APP_MIN_TEMPERATURE, MAX_SEED, MAX_TOP_K
from ..engine.sampling import SamplingConfig
from ..strings import DEFAULT_LANG, t
from ..trace.records import Trace
from ..trace.files import TraceFormatError, check_size as check_trace_size  # noqa: F401 - the API's check too
from .choices import (  # noqa: F401 - the page's choices, re-exported: every form check names them as inputs.*
    CUSTOM, GPU_PRESETS, HUB_PRESETS, PACKAGED, TREE, compile_choices, default_pair, drafter_choices, gguf_pair_files,
    pair_choices)
from .numbers import (  # noqa: F401 - the number checks, re-exported: the tabs call them as inputs.*
    InputError, exact, finite_number, number_between, shown, whole_number)

log = logging.getLogger(__name__)


def drafter(value, lang: str = DEFAULT_LANG) -> str:
    if value not in (*DRAFTERS, TREE):
        raise InputError(t("input.drafter", lang, value=str(value)[:40]))
    return str(value)


def compile_mode(value, lang: str = DEFAULT_LANG) -> str:
    """A compile mode of the page; "on" and "graphs" are refused where no GPU is (`forwards.CUDA_ONLY`)."""
    if value not in COMPILE_CHOICES:
        raise InputError(t("input.compile", lang, value=str(value)[:40]))
    if value in CUDA_ONLY and not gpu_here():
        raise InputError(t("input.compile_cpu", lang))
    return str(value)


def gpu_here() -> bool:   # a CUDA GPU here or a ZeroGPU Space; a function of its own, so the tests can say either
    return gpu_available()


def adaptive_threshold(value, drafter: str, lang: str = DEFAULT_LANG) -> float | None:
    """The adaptive stop's threshold, or None; refused with the n-gram drafter (no draft model to be unsure) and
    with the tree (its node budget is the tree's size, chosen by the draft's confidence already)."""
    if not value:
        return None
    if drafter in ("ngram", TREE):
        raise InputError(t("input.ngram_adaptive" if drafter == "ngram" else "input.tree_adaptive", lang))
    return ADAPTIVE_THRESHOLD


def lookup_k(value, drafter: str, lang: str = DEFAULT_LANG) -> int | None:
    """The hybrid drafters' lookup rounds' most tokens (0 or empty: as K, None), refused past `APP_MAX_K` and, when
    set, with a drafter that has no lookup rounds."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    n = whole_number(value, "field.lookup_k", 0, APP_MAX_K, lang)
    if n and drafter not in HYBRID_DRAFTERS:
        raise InputError(t("input.lookup_k_drafter", lang))
    return n or None


def tree_conflicts(form: Mapping[str, Any], lang: str = DEFAULT_LANG) -> dict[str, str]:
    """{field name: sentence} for what the tree drafter cannot run with ({} for other drafters): more nodes than
    `APP_MAX_TREE_NODES`, or compiled forwards (trees run on the dynamic cache). Adaptive K: `adaptive_threshold`."""
    if form.get("drafter") != TREE:
        return {}
    errors = {}
    k = exact(form.get("k"))
    if k is not None and k > APP_MAX_TREE_NODES:
        errors["k"] = t("input.tree_nodes", lang, limit=APP_MAX_TREE_NODES)
    if form.get("compile") in ("on", "graphs"):
        errors["compile"] = t("input.tree_compile", lang)
    return errors


def temperature(value, lang: str = DEFAULT_LANG) -> float:
    """0 (greedy) or a temperature in [APP_MIN_TEMPERATURE, APP_MAX_TEMPERATURE]; a positive value below the least
    (1e-400 included, which a float reads as 0) is refused rather than run as greedy or as an overflow."""
    f = finite_number(value, "field.temperature", 0, APP_MAX_TEMPERATURE, lang)
    if not 0 <= f <= APP_MAX_TEMPERATURE:
        raise InputError(t("input.temperature", lang, hi=shown(APP_MAX_TEMPERATURE)))
    if exact(value) != 0 and f < APP_MIN_TEMPERATURE:
        raise InputError(t("input.temperature_low", lang, lo=APP_MIN_TEMPERATURE, hi=shown(APP_MAX_TEMPERATURE)))
    return f


def top_p(value, lang: str = DEFAULT_LANG) -> float:
    f = finite_number(value, "field.top_p", 0, 1, lang)
    if not 0 < f <= 1:
        raise InputError(t("input.top_p", lang))
    return f


def top_k(value, lang: str = DEFAULT_LANG) -> int:
    return whole_number(value, "field.top_k", 0, MAX_TOP_K, lang)


def sampling_config(temperature_, top_k_, top_p_, lang: str = DEFAULT_LANG) -> SamplingConfig:
    """The sampling settings, each refused (never clamped) outside the app's range, in the page's language."""
    return SamplingConfig(temperature=temperature(temperature_, lang), top_k=top_k(top_k_, lang),
                          top_p=top_p(top_p_, lang))


_HUB_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)


def hub_id(value, field_key: str, lang: str = DEFAULT_LANG) -> str:
    """A Hub id `owner/name` (or `name`), checked before anything touches the disk or the network."""
    s = str(value or "").strip()
    name = t(field_key, lang)
    if not s:
        raise InputError(t("input.custom_pair", lang))
    if "://" in s or s.lower().startswith("www."):
        raise InputError(t("input.hub_url", lang, name=name))
    parts = s.split("/")
    if (not _HUB_ID.fullmatch(s) or ".." in s or "--" in s
            or any(len(part) > APP_MAX_HUB_ID_CHARS for part in parts)):
        shown = s if len(s) <= 40 else s[:39] + "…"
        raise InputError(t("input.hub_id", lang, name=name, value=shown, limit=APP_MAX_HUB_ID_CHARS))
    return s


def pair_ids(choice: str | None, draft_id: str | None, target_id: str | None,
             lang: str = DEFAULT_LANG) -> tuple[str | None, str | None]:
    """(draft, target) Hub ids for the loader; (None, None) is the packaged pair."""
    if choice in (None, "", PACKAGED):
        return None, None
    if choice in HUB_PRESETS:
        return HUB_PRESETS[choice]
    files = gguf_pair_files(choice) if str(choice).startswith("gguf:") else None
    if files is not None:   # two files of the server's models folder (the loader checks they lie inside it)
        return files
    if choice != CUSTOM:
        raise InputError(t("input.pair", lang, value=str(choice)[:40]))
    if not str(draft_id or "").strip() or not str(target_id or "").strip():
        raise InputError(t("input.custom_pair", lang))
    return hub_id(draft_id, "field.draft_id", lang), hub_id(target_id, "field.target_id", lang)


# Characters that show nothing although they are not whitespace to str.strip: the Hangul and braille blanks.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str) -> bool:
    """Whether `text` shows anything: a prompt of whitespace, format characters (zero-width spaces, the BOM,
    direction marks), controls and blank letters is refused like an empty one."""
    return any(not (ch.isspace() or ch in _BLANK_LETTERS or unicodedata.category(ch) in ("Cf", "Cc"))
               for ch in text)


def check_prompt(prompt, lang: str = DEFAULT_LANG, limit: int = APP_MAX_PROMPT_CHARS) -> str:
    """The prompt as is; refused (never cut) beyond `limit` characters, and when it shows nothing."""
    if prompt is None or not visible(str(prompt)):
        raise InputError(t("input.no_prompt", lang))
    if len(prompt) > limit:
        raise InputError(t("input.prompt_chars", lang, n=len(prompt), limit=limit))
    return str(prompt)


def encode_prompt(pair, prompt: str, raw: bool, max_new: int, k: int, lang: str = DEFAULT_LANG) -> list[int]:
    """Token ids of the prompt (chat template unless raw), checked against the model's context."""
    ids = pair.encode(prompt) if raw else pair.encode_chat(prompt)
    if not ids:
        raise InputError(t("input.no_tokens", lang))
    cfg = pair.target.config.get_text_config() if hasattr(pair.target.config, "get_text_config") else pair.target.config
    ctx = getattr(cfg, "max_position_embeddings", None) or 1 << 30
    limit = min(APP_MAX_PROMPT_TOKENS, ctx - max_new - k - 1)
    if len(ids) > limit:
        raise InputError(t("input.prompt_tokens", lang, n=len(ids), max_new=max_new, k=k, limit=max(limit, 0), ctx=ctx))
    return ids


def read_trace(path: str) -> Trace:
    """An uploaded trace file: a .json name, size-checked before it is read; TraceFormatError or OSError if unusable.

    The errors carry a strings key, so `error_message` words them in the page's language."""
    if not str(path).lower().endswith(".json"):
        raise TraceFormatError("input.trace_ext", name=os.path.basename(str(path))[-60:])
    check_trace_size(os.path.getsize(path))
    with open(path, "rb") as fh:
        return Trace.from_json(fh.read())


def error_message(e: BaseException, lang: str = DEFAULT_LANG) -> str:
    """An exception as one short sentence in the page's language, never Python's own words.

    Our errors carry their sentence (an input's, a trace file's, a keyed loading error's); anything else is logged
    with its traceback for whoever runs the server, and the page gets a general sentence."""
    if isinstance(e, (InputError, TraceFormatError)):
        text = str(e) if isinstance(e, InputError) else e.text(lang)
    elif isinstance(e, (ModelLoadError, KeyedError)):   # sentences in lower case, for the command line's "error: ..."
        text = e.text(lang) or t("error.model_load", lang)
        text = text[:1].upper() + text[1:]
    elif isinstance(e, OSError):
        log.warning("unreadable file: %r", e)
        text = t("error.file_unreadable", lang)
    else:
        log.error("unexpected error shown to a page as a general sentence", exc_info=e)
        text = t("error.unexpected", lang)
    return (text.strip() or t("error.unexpected", lang))[:500]


# ---------------------------------------------------------------- one table of checks
def _whole(field_key: str, lo: int, hi: int) -> Callable:
    return lambda v, lang: whole_number(v, field_key, lo, hi, lang)


# Every checked field of the page's forms, by its name in the page; each check returns the value parsed or raises
# InputError. The forms' settings below are built from this table, and the page checks each field with it.
FIELD_CHECKS: dict[str, Callable] = {
    "prompt": check_prompt,
    "k": _whole("field.k", 1, APP_MAX_K),
    "max_new": _whole("field.max_new", 1, APP_MAX_NEW_TOKENS),
    "temperature": temperature,
    "top_k": top_k,
    "top_p": top_p,
    "seed": _whole("field.seed", 0, MAX_SEED),
    "k_lo": _whole("field.k_lo", 1, APP_MAX_K),
    "k_hi": _whole("field.k_hi", 1, APP_MAX_K),
    "sweep_tokens": _whole("field.sweep_tokens", 4, APP_MAX_SWEEP_TOKENS),
    "drafter": drafter,
    "compile": compile_mode,
}


def checked(form: Mapping[str, Any], names: tuple[str, ...], lang: str = DEFAULT_LANG) -> dict[str, Any]:
    """{name: parsed value} of `names` in `form`, checked in that order; InputError on the first bad one."""
    return {name: FIELD_CHECKS[name](form[name], lang) for name in names}


def field_errors(values: dict, lang: str = DEFAULT_LANG) -> dict[str, str]:
    """{input name: message} for every bad field among `values` (names as in the page); {} when all are fine.

    The model ids are reported on the field that is wrong (the draft's or the target's box).
    """
    errors = {}
    for name, value in values.items():
        check = FIELD_CHECKS.get(name)
        if check is None:
            continue
        try:
            check(value, lang)
        except InputError as e:
            errors[name] = str(e)
    try:
        adaptive_threshold(values.get("adaptive"), values.get("drafter"), lang)
    except InputError as e:
        errors["adaptive"] = str(e)
    try:
        lookup_k(values.get("lookup_k"), values.get("drafter"), lang)
    except InputError as e:
        errors["lookup_k"] = str(e)
    # A tree's own conflicts win over the general ones (a tree cannot compile even where a GPU is).
    errors.update({name: e for name, e in tree_conflicts(values, lang).items()
                   if name not in errors or name == "compile"})
    errors.update({} if {"k_lo", "k_hi"} & set(errors) else k_range_conflict(values, lang))
    if values.get("pair") not in (None, "", PACKAGED, CUSTOM, *HUB_PRESETS) and gguf_pair_files(values["pair"]) is None:
        errors["pair"] = t("input.pair", lang, value=str(values["pair"])[:40])
    if values.get("pair") == CUSTOM:
        for name, key in (("draft_id", "field.draft_id"), ("target_id", "field.target_id")):
            try:
                hub_id(values.get(name), key, lang)
            except InputError as e:
                errors[name] = str(e)
    return errors


def _sampling(form: Mapping[str, Any], lang: str) -> SamplingConfig:
    return sampling_config(form["temperature"], form["top_k"], form["top_p"], lang)


def _pair_ids(form: Mapping[str, Any], lang: str) -> tuple[str | None, str | None]:
    return pair_ids(form["pair"], form["draft_id"], form["target_id"], lang)


# ---------------------------------------------------------------- whole forms, by the names of their fields
RUN_FORM = ("prompt", "raw", "k", "adaptive", "temperature", "top_k", "top_p", "max_new", "seed", "pair",
            "draft_id", "target_id", "compare_switch", "drafter", "compile", "lookup_k")
SWEEP_FORM = ("prompt", "raw", "temperature", "top_k", "top_p", "seed", "pair", "draft_id", "target_id",
              "k_lo", "k_hi", "sweep_tokens")


@dataclass(frozen=True)
class RunSettings:
    prompt: str
    raw: bool
    k: int
    adaptive_threshold: float | None     # None: K fixed; else K is a maximum (adaptive draft length)
    sampling: SamplingConfig
    max_new_tokens: int
    seed: int
    pair_ids: tuple[str | None, str | None]
    compare: bool
    drafter: str = "model"               # a name in specviz.engine.drafters.DRAFTERS, or TREE
    compile: str = "auto"                # auto | on | off (specviz.runtime.decoding.COMPILE_CHOICES)
    lookup_k: int | None = None          # the hybrid drafters' lookup rounds' most tokens; None: K


def run_settings(form: Mapping[str, Any], lang: str = DEFAULT_LANG) -> RunSettings:
    """The Generate form ({field name: value}, names in RUN_FORM; the drafter, compile and lookup_k fields may be
    left out), checked; raises InputError on the first bad field."""
    form = {"drafter": "model", "compile": "auto", "lookup_k": None, **form}
    drafter = checked(form, ("drafter",), lang)["drafter"]
    v = checked(form, ("prompt", "k"), lang)
    adaptive = adaptive_threshold(form["adaptive"], drafter, lang)
    lookup = lookup_k(form["lookup_k"], drafter, lang)
    conflicts = tree_conflicts(form, lang)
    if conflicts:
        raise InputError(next(iter(conflicts.values())))
    v.update(checked(form, ("max_new", "seed"), lang))
    return RunSettings(
        prompt=v["prompt"], raw=bool(form["raw"]), k=v["k"], adaptive_threshold=adaptive,
        max_new_tokens=v["max_new"], seed=v["seed"], sampling=_sampling(form, lang),
        pair_ids=_pair_ids(form, lang), compare=bool(form["compare_switch"]),
        drafter=drafter, compile=checked(form, ("compile",), lang)["compile"], lookup_k=lookup)


@dataclass(frozen=True)
class SweepSettings:
    prompt: str
    raw: bool
    sampling: SamplingConfig
    seed: int
    pair_ids: tuple[str | None, str | None]
    ks: list[int]
    n_tokens: int


def k_range_conflict(form: Mapping[str, Any], lang: str = DEFAULT_LANG) -> dict[str, str]:
    """{"k_lo": sentence} when the sweep's smallest K is above its largest (each valid on its own), else {}.

    Refused, not swapped: a sweep of 6…2 that ran 2…6 did something the user did not ask for."""
    lo, hi = exact(form.get("k_lo")), exact(form.get("k_hi"))
    if lo is None or hi is None or lo <= hi:
        return {}
    return {"k_lo": t("input.k_order", lang, lo=shown(lo), hi=shown(hi))}


def sweep_settings(form: Mapping[str, Any], lang: str = DEFAULT_LANG) -> SweepSettings:
    """The sweep form ({field name: value}, names in SWEEP_FORM), checked; a K range given the wrong way round is
    refused."""
    v = checked(form, ("prompt", "k_lo", "k_hi", "sweep_tokens", "seed"), lang)
    conflict = k_range_conflict(v, lang)
    if conflict:
        raise InputError(conflict["k_lo"])
    k_lo, k_hi = v["k_lo"], v["k_hi"]
    return SweepSettings(
        prompt=v["prompt"], raw=bool(form["raw"]), n_tokens=v["sweep_tokens"], seed=v["seed"],
        sampling=_sampling(form, lang), pair_ids=_pair_ids(form, lang), ks=list(range(k_lo, k_hi + 1)))
