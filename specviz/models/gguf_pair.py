"""A draft/target pair from GGUF files: the packaged pair, or a user's own two files.

Each file is checked in one sentence (models.gguf_file), its tensors placed for their kernels (models.gguf_loader),
the target's storage chosen as for any model (models.storing: "auto" times its largest layer), the two tokenizers
compared token by token, the memory check made on the files' real bytes. Where the app's visitors load models
(`allow_local=False`) only the files inside the server owner's SPECVIZ_MODELS_DIR can be named.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import ModelLoadError, role as role_word, step
from . import gguf_loader, memory, storing   # memory.check_files read at call time: tests stand in for it
from .gguf_file import GGUFModelFile, first_vocab_difference, is_gguf_path, models_dir
from .prepare import prepare_models
from .packaged import PACKAGED_DRAFT, PACKAGED_PAIR_NAME, PACKAGED_TARGET, packaged_gguf
from .quant import huge_pages, q4a8, read_ahead
from .quant.kernels import ENV_VAR as LINEAR_ENV_VAR, use_linear_path
from .quant.weights import candidate_weights, probe_layer, q4a8_fallback

log = logging.getLogger(__name__)


@dataclass
class GGUFLoaded:
    """What loading.ModelPair is made of (its fields by name), load_seconds aside."""

    fields: dict


def tokenizer_of(file: GGUFModelFile):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(file.tokenizer_folder()))
    except (OSError, ValueError, KeyError) as e:
        log.warning("cannot load the tokenizer of %s: %s", file.label, str(e).strip()[:200])
        raise ModelLoadError(key="load.cannot_load_tokenizer", role=role_word(file.role), ref=file.label) from None


def gguf_file(spec: str, role: str, allow_local: bool) -> GGUFModelFile:
    """A GGUF file named by a user, checked. Where folders are not allowed (the app's visitors), only the files inside
    the server's SPECVIZ_MODELS_DIR are: a visitor never reads another server path by naming it."""
    path = Path(str(spec).strip()).expanduser()
    if not allow_local:
        root = models_dir()
        inside = root is not None and root in path.resolve().parents and path.resolve().is_file()
        if not inside:
            raise ModelLoadError(key="gguf.outside", role=role_word(role), name=path.name[:80])
    return GGUFModelFile(path, role)


def load_gguf_pair(draft, target, dev, dt, weights: storing.WeightOptions, resolved: tuple[str, str, str],
                   allow_local: bool, report) -> GGUFLoaded:
    """The packaged pair (both None) or two GGUF files, each tensor placed for its kernel (specviz.models.gguf_loader);
    `resolved`: the linear path, draft and target weights as load_pair resolved them."""
    path, draft_weights, target_weights = resolved
    if torch.device(dev).type == "cpu":
        q4a8.start_build()   # beside the assembly and the metadata below, not after them
    dfile, tfile, name = _files(draft, target, allow_local, report)
    for file, at in ((tfile, 0.42), (dfile, 0.46)):
        report(at, step("load.reading_metadata", name=file.label))
        file.meta_folder()
    report(0.5, step("load.tokenizer"))
    tokenizer = tokenizer_of(tfile)
    if draft is not None:   # the packaged pair shares one tokenizer (checked when it was packaged)
        first = first_vocab_difference(tokenizer_of(dfile), tokenizer)
        if first is not None:
            raise ModelLoadError(key="load.vocab_first", draft=dfile.label, target=tfile.label, first=first)
        refused = memory.check_files(dfile, tfile, dev, dt)
        if refused:
            raise ModelLoadError(refused)
    target_weights, probe = _target_storage(tfile, target_weights, dev, dt, report)
    report(0.6, step("load.target_named", name=tfile.label))
    # A path named (not timed at load) is taken layer by layer as the target is placed: no whole dense copy beside it.
    named = target_weights == "as-loaded" and (weights.linear != "auto" or os.environ.get(LINEAR_ENV_VAR))
    target_model, layers = gguf_loader.load_gguf_model(tfile, target_weights, dt, True, report, 0.6, 0.85,
                                                       linear_path=path if named else "default")
    kind = storing.draft_kind(weights.draft_weights, draft_weights, target_weights)
    if kind == "q4a8":
        storing.ready_q4a8(report)
        kind = q4a8_fallback(kind)
    report(0.86, step("load.draft_named", name=dfile.label))
    draft_stored = kind if kind in gguf_loader.KINDS else "as-loaded"
    with huge_pages.ordinary():   # the target's products gain from 2 MB pages; a draft's too little for their cost
        draft_model, _ = gguf_loader.load_gguf_model(dfile, draft_stored, dt, False, report, 0.86, 0.95)
    target_model, draft_model = placed(target_model, dev), placed(draft_model, dev)
    path, linear_probe = storing.target_kernels(target_model, path, weights.linear, target_weights, report)
    if draft_stored == "as-loaded":
        use_linear_path(draft_model, path)
    ahead = None
    if target_weights == "q4a8":   # one row's read-ahead, timed on these very products (the draft's follow it)
        report(0.96, step("load.timing_read_ahead"))
        ahead = read_ahead.choose(target_model)
    prepare_models(target_model)   # the runtime configured and each model set up (its lean stack), before any run
    with huge_pages.ordinary():    # the draft's joined projections, where copied, in ordinary pages like its layers
        prepare_models(draft_model)
    report(1.0, step("load.ready"))
    return GGUFLoaded(dict(target=target_model, draft=draft_model, tokenizer=tokenizer, name=name, device=dev,
                           dtype=dt, draft_name=dfile.label if draft else PACKAGED_DRAFT.label,
                           target_name=tfile.label if draft else PACKAGED_TARGET.label, linear_path=path,
                           linear_probe=linear_probe, draft_weights=kind, draft_source=dfile,
                           target_weights=target_weights, target_probe=probe,
                           target_layers=layers if target_weights != "as-loaded" else None, read_ahead=ahead,
                           target_source=tfile))


def _files(draft, target, allow_local: bool, report) -> tuple[GGUFModelFile, GGUFModelFile, str]:
    """(draft file, target file, the pair's name): the packaged pair's (assembled once) or the user's, checked."""
    if draft is None:
        return (GGUFModelFile(packaged_gguf("draft", report, 0.0, 0.15), "draft"),
                GGUFModelFile(packaged_gguf("target", report, 0.15, 0.4), "target"), PACKAGED_PAIR_NAME)
    if not (is_gguf_path(draft) and is_gguf_path(target)):
        raise ModelLoadError(key="gguf.both")
    dfile, tfile = gguf_file(draft, "draft", allow_local), gguf_file(target, "target", allow_local)
    return dfile, tfile, f"{dfile.label} → {tfile.label}"


def _target_storage(tfile: GGUFModelFile, target_weights: str, dev, dt, report) -> tuple[str, dict | None]:
    """The target's storage ("auto": timed on its largest layer, as for any model) and the timings behind it."""
    probe = None
    if target_weights in ("auto", "q4a8") and dev.type == "cpu":
        storing.ready_q4a8(report, 0.52)
    if target_weights == "auto" and dev.type == "cpu":
        report(0.55, step("load.timing_weights"))
        probe = _probe_gguf(tfile)
        target_weights = probe["choice"]
    target_weights = q4a8_fallback(target_weights)
    if target_weights == "bf16" and dt == torch.bfloat16:
        target_weights = "as-loaded"
    return target_weights, probe


def _probe_gguf(file: GGUFModelFile) -> dict:
    """The load's weight probe (weights.probe_layer) on the file's largest linear layer, each kind in the form a
    target's load places it (q4a8 from the blocks: Q4KA8Linear / Q6KA8Linear), dequantized alone for the others."""
    _, t = gguf_loader.largest_linear(file)
    layer = torch.nn.Linear(t.cols, t.rows, bias=False, device="meta")
    layer.weight = torch.nn.Parameter(gguf_loader.dequantized(t), requires_grad=False)
    kinds = candidate_weights("cpu", torch.float32)
    made = {"q4a8": gguf_loader.placed_linear(t, None, "q4a8", True)[0]} if "q4a8" in kinds else {}
    result = probe_layer(layer, kinds, strict_grid=True, made=made)
    result["layer"] = f"{t.cols}x{t.rows} {t.type_name}"
    return result


def placed(model, device):
    """A model built on the CPU, on `device`; elsewhere than a CPU its embedding table dense (the lookup dequantizes
    with numpy)."""
    if torch.device(device).type == "cpu":
        return model
    emb = model.get_input_embeddings()
    if isinstance(emb, gguf_loader.GGUFEmbedding):
        dense = torch.nn.Embedding(emb.num_embeddings, emb.embedding_dim, device="meta")
        dense.weight = torch.nn.Parameter(emb.dense(), requires_grad=False)
        model.set_input_embeddings(dense)
    return model.to(device)
