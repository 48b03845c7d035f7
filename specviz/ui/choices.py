"""The page's choices: the model pairs (the packaged one, Hub presets, custom ids), the drafters and the compile
modes, as (label, value) pairs in the page's language. Values are stable ids; `inputs` checks what comes back."""
from __future__ import annotations

from ..engine.drafter_names import TREE  # noqa: F401 - the page's name for the tree drafter, re-exported
from ..engine.drafters import DRAFTERS
from ..models.gguf_file import local_pairs
from ..runtime.forwards import COMPILE_CHOICES
from ..strings import DEFAULT_LANG, t
from ..viz.format import drafter_name

# The model pair dropdown: values are stable ids, labels come from the strings table.
PACKAGED, CUSTOM = "packaged", "custom"
HUB_PRESETS = {
    "qwen2.5-0.5b-7b": ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    "qwen2.5-0.5b-14b": ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-14B-Instruct"),
    "smollm2-135m-1.7b": ("HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-1.7B-Instruct"),
}
_PRESET_NAMES = {"qwen2.5-0.5b-7b": "Qwen2.5 0.5B → 7B Instruct", "qwen2.5-0.5b-14b": "Qwen2.5 0.5B → 14B Instruct",
                 "smollm2-135m-1.7b": "SmolLM2 135M → 1.7B Instruct"}
# Pairs with a gap wide enough for speculation to pay on a GPU with compiled forwards (compiled c: 0.43 for
# 0.5B -> 7B, 0.25 for 0.5B -> 14B on an H200): offered only where CUDA is, never the default on a CPU.
GPU_PRESETS = ("qwen2.5-0.5b-7b", "qwen2.5-0.5b-14b")
# The page's drafters are the decoder's, then "tree": the draft model drafting EAGLE-2's dynamic tree of K nodes
# (`engine.drafter_names.drafting` turns it into the decoder's `Tree("dynamic:K")`).
# TREE (imported above) is that name.
# Literal keys, so tests/test_strings.py finds them.
_COMPILE_KEYS = {"auto": "compile.auto", "on": "compile.on", "off": "compile.off", "graphs": "compile.graphs"}


def pair_choices(lang: str = DEFAULT_LANG, packaged_label: str | None = None,
                 gpu: bool = False) -> list[tuple[str, str]]:
    """(label, value) pairs for the model dropdown: the packaged pair, the Hub presets, custom ids.

    The GPU presets come first among the presets, and only with `gpu` (CUDA or ZeroGPU here)."""
    presets = [(t("pair.gpu_preset", lang, name=_PRESET_NAMES[v]), v) for v in GPU_PRESETS if gpu]
    presets += [(t("pair.hub_preset", lang, name=_PRESET_NAMES[v]), v) for v in HUB_PRESETS if v not in GPU_PRESETS]
    files = [(t("pair.gguf", lang, draft=p.draft.name, target=p.target.name, size=f"{p.gigabytes:.1f}"), p.value)
             for p in local_pairs()]
    return [(packaged_label or t("pair.packaged", lang), PACKAGED), *files, *presets, (t("pair.custom", lang), CUSTOM)]


def gguf_pair_files(choice: str | None) -> tuple[str, str] | None:
    """(draft, target) paths of a pair offered from the server's models folder, or None for any other choice."""
    return next(((str(p.draft), str(p.target)) for p in local_pairs() if p.value == choice), None)


def default_pair(wanted: str | None, gpu: bool) -> str:
    """The dropdown's starting value: `wanted` when it is offered here (a GPU preset only with `gpu`), else the
    packaged pair."""
    offered = {v for _, v in pair_choices(gpu=gpu)} - {CUSTOM}
    return wanted if wanted in offered else PACKAGED


def drafter_choices(lang: str = DEFAULT_LANG) -> list[tuple[str, str]]:
    """(label, value) for every drafter of the page: the decoder's (`specviz.engine.drafters.DRAFTERS`), then the tree."""
    return [(drafter_name(name, lang), name) for name in (*DRAFTERS, TREE)]


def compile_choices(lang: str = DEFAULT_LANG) -> list[tuple[str, str]]:
    return [(t(_COMPILE_KEYS[v], lang) if v in _COMPILE_KEYS else v, v) for v in COMPILE_CHOICES]
