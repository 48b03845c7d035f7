"""Argument parsing shared by every command: one-line errors, exit code 2, and range-checked types.

argparse's own error prints the whole usage before the message; a user who
mistyped one value should see one line saying which value and why.
"""
from __future__ import annotations

import argparse


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, `<error_prefix>: error: <message>`, and exit code 2."""

    def __init__(self, *args, error_prefix: str = "specviz", **kwargs):
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix

    def error(self, message):
        self.exit(2, f"{self.error_prefix}: error: {message}\n")


def bounded(kind, lo, hi, name):
    """An argparse type: `kind` parsed from text and checked to lie in [lo, hi]."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {what}, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be in [{lo}, {hi}], got {text}")
        return value
    return parse


def add_weight_options(p: argparse.ArgumentParser) -> None:
    """--linear, --draft-weights and --target-weights: how the pair's weights are stored and multiplied on a CPU.

    One definition for every command that loads the pair, so their choices and defaults never drift apart.
    """
    from ..models.quant.kernels import DRAFT_WEIGHTS, LINEAR_PATHS
    from ..models.quant.weights import TARGET_WEIGHTS

    p.add_argument("--linear", default="auto", choices=LINEAR_PATHS,
                   help="CPU kernels of an fp32 target's linear layers: oneDNN on packed weights or PyTorch's "
                        "default; auto = oneDNN when it measures faster at load (default: auto)")
    p.add_argument("--draft-weights", default="auto", choices=DRAFT_WEIGHTS,
                   help="how the draft stores its weights: int8/int4 read a quarter/an eighth of fp32's bytes per "
                        "draft step; the output is still exactly the target's (default: auto = q4a8 where the target "
                        "runs on specviz's q4a8 kernels, else int4 on a CPU where PyTorch has the kernel, else int8)")
    p.add_argument("--target-weights", default="auto", choices=TARGET_WEIGHTS,
                   help="how the target stores its weights; the speculative decoder and the target alone always "
                        "run the same one. q4a8: the 4-bit weights through specviz's own CPU kernels with int8 "
                        "activations (built once at first use; PyTorch's int4 where they cannot be built). auto = "
                        "the fastest at 1 and 4 rows (a token, a verify) measured at load on a CPU (default: auto)")


def weight_options(args):
    """load_pair's `weights` (a models.loading.WeightOptions) from the options add_weight_options defined."""
    from ..models.loading import WeightOptions

    return WeightOptions(linear=args.linear, draft_weights=args.draft_weights, target_weights=args.target_weights)


def compile_refusal(compile: str, device: str | None) -> str | None:
    """The one-line refusal of --compile on/graphs where the run would not be on CUDA, else None.

    Checked before any model loads: on a CPU torch.compile's capture runs for minutes and replays nothing."""
    from ..runtime.forwards import CUDA_ONLY, cuda_wanted

    if compile not in CUDA_ONLY:
        return None
    try:
        if cuda_wanted(device):
            return None
    except RuntimeError:   # an unreadable --device: the loader says so in its own words
        return None
    where = f"--device {device}" if device else "this machine has no CUDA GPU"
    return f"--compile {compile} needs a CUDA GPU ({where}): use --compile auto or off"
