"""How a loaded pair stores its weights and which kernels multiply them: the choices `WeightOptions` names, made
once the models are in memory (loading.load_pair for Hub ids and folders, gguf_pair for GGUF files)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from ..errors import step
from .quant import q4a8, read_ahead
from .quant.kernels import (DRAFT_ENV_VAR, DRAFT_WEIGHTS, ENV_VAR as LINEAR_ENV_VAR, checked_choice,
                            probe_linear_paths, use_linear_path)
from .quant.weights import candidate_weights, probe_target_weights, q4a8_fallback
from .quant.weights_cache import convert_cached


@dataclass(frozen=True)
class WeightOptions:
    """How a loaded pair stores its weights and which kernels multiply them; "auto" everywhere by default.

    ``linear`` picks the linear layers' kernels (auto | default | onednn, see specviz.models.quant.kernels);
    ``draft_weights`` how the draft stores its weights (auto | as-loaded | int8: auto is int8 on a CPU);
    ``target_weights`` how the target stores them (auto | as-loaded | bf16 | int8 | int4: auto is the fastest
    one-token layer measured at load on a CPU, as loaded elsewhere; see specviz.models.quant.weights).
    """

    linear: str = "auto"
    draft_weights: str = "auto"
    target_weights: str = "auto"


def target_kernels(model, path: str, linear: str, target_weights: str, report) -> tuple[str, dict | None]:
    """The linear kernels of a target kept as loaded (oneDNN where it measures faster); a stored one has its own."""
    if target_weights != "as-loaded":
        return ("default" if path == "onednn" else path), None
    probe = None
    if path == "onednn" and linear == "auto" and not os.environ.get(LINEAR_ENV_VAR):
        report(0.9, step("load.timing_kernels"))
        probe = probe_linear_paths(model)
        path = probe["choice"]
    if path != "default":
        report(0.95, step("load.preparing_kernels", path=path))
        use_linear_path(model, path)
    return path, probe


def draft_kind(asked: str, resolved: str, target_weights: str) -> str:
    """An auto draft follows the target onto specviz's q4a8 kernels where the load's probe measured them fastest:
    the probe times one row, which is all a draft step runs (the packaged draft's c 0.50 -> 0.46, Ice Lake Xeon)."""
    auto = checked_choice(asked, DRAFT_WEIGHTS, "draft weights", DRAFT_ENV_VAR) == "auto"
    return "q4a8" if auto and resolved == "int4" and target_weights == "q4a8" else resolved


def store_draft(model, draft_weights: str, path: str, report) -> str:
    """The draft's weights as chosen: int8/int4/q4a8 (cheaper drafting, the same exact output) or on the
    target's path; returns the kind stored."""
    if draft_weights == "q4a8":   # PyTorch's int4 where specviz's kernels cannot be built (said at load)
        ready_q4a8(report)
        draft_weights = q4a8_fallback(draft_weights)
    if draft_weights in ("int8", "int4", "q4a8"):
        report(0.97, step("load.storing_draft", weights=draft_weights))
    if draft_weights in ("int4", "q4a8"):
        convert_cached(model, draft_weights, strict_grid=False)
    else:
        use_linear_path(model, "int8" if draft_weights == "int8" else path)
    return draft_weights


def load_dtype(target_weights: str, dtype: torch.dtype) -> torch.dtype:
    """fp32 for a target requantized on a CPU: a bf16 copy would knock a Q4_K tensor off its 4-bit grid."""
    return torch.float32 if target_weights in ("auto", "bf16", "int8", "int4", "q4a8") else dtype


def ready_q4a8(report, at: float = 0.86) -> None:
    """specviz's 4-bit kernels built (once, cached) or, where they cannot be, one line saying why:
    PyTorch's kernels run instead (a q4a8 choice becomes int4, auto leaves q4a8 out). `at`: the load's progress
    fraction when this happens (a load's fractions only go forward)."""
    if not q4a8.built():
        report(at, step("load.building_kernels"))
    with q4a8.reporting_build_waits(lambda seconds: report(at, step("load.waiting_kernels", seconds=seconds))):
        why = q4a8.unavailable()
    if why is not None:
        report(at + 0.01, step("load.kernels_unavailable", reason=why))


def store_target(model, choice: str, device, dtype, report) -> tuple[str, dict | None, dict | None, dict | None]:
    """The target's weights as `choice` ("auto": measured here), the rest of the model in `dtype`; returns the kind
    stored, the timings behind an auto choice, the layer counts and (q4a8) the read-ahead measured on its products.

    The model arrives in fp32 when it is to be requantized (see _load_dtype); bf16 weights in a bf16
    pair are simply the pair's dtype, so they count as loaded."""
    probe = None
    if choice in ("auto", "q4a8") and torch.device(device).type == "cpu":
        ready_q4a8(report)
    if choice == "auto":
        report(0.88, step("load.timing_weights"))
        probe = probe_target_weights(model, candidate_weights(device, torch.float32))
        choice = probe["choice"]
    choice = q4a8_fallback(choice)
    if choice == "bf16" and dtype == torch.bfloat16:
        choice = "as-loaded"
    layers = None
    if choice != "as-loaded":
        report(0.9, step("load.storing_target", weights=choice))
        layers = convert_cached(model, choice)
    if next(model.parameters()).dtype != dtype:
        model.to(dtype)
    ahead = None
    if choice == "q4a8":   # one row's read-ahead, timed on these very products (the draft's follow it)
        report(0.93, step("load.timing_read_ahead"))
        ahead = read_ahead.choose(model)
    return choice, probe, layers, ahead


