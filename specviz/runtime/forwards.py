"""How a run's cached forwards run: eagerly, through torch.compile, or as CUDA graphs without it.

`compile` is the user's choice (the CLI's --compile, the app's control, the
bench); `resolve_forwards` turns it into what the decoder does on a device.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .zerogpu import inductor_wanted

COMPILE_CHOICES = ("auto", "on", "off", "graphs")
# Modes that only mean something on CUDA: on a CPU, torch.compile's reduce-overhead compiles for minutes and
# captures nothing (a walk of the page saw a core busy for 2.5 minutes after Stop). The page, the API and the command line
# refuse them there; the decoder itself still accepts them (the CPU tests run the graphs' buffers).
CUDA_ONLY = ("on", "graphs")


def cuda_wanted(device=None) -> bool:
    """Whether a run asked for `device` (None: the machine's best) runs on CUDA here."""
    if device is None:
        return bool(torch.cuda.is_available())
    return torch.device(device).type == "cuda"


@dataclass(frozen=True)
class Forwards:
    """How a run's cached forwards run: `compiled` = replayed on a shared static cache, warmed before timing."""

    static: bool
    compiled: bool
    backend: str     # "eager" | "inductor" (torch.compile) | "graphs" (CUDA graphs, no inductor) | "buffers"


def resolve_forwards(compile: str, device, static_cache: bool | None = None) -> Forwards:
    """The forwards for `compile` = "auto" | "on" | "off" | "graphs" on `device`.

    "auto" replays on CUDA only: there eager forwards are launch-bound (~96 % of
    a one-token forward measured on an H200), on a CPU the weights dominate and
    replaying only costs start-up. On CUDA it picks torch.compile on a dedicated
    GPU and plain CUDA graphs where torch.compile is unavailable or unsupported
    (ZeroGPU: specviz.runtime.zerogpu). "graphs" off CUDA runs the graphs' fixed buffers
    without capture (the CPU tests run that bookkeeping). `static_cache` forces
    the static cache with or without replay (the CPU tests run the static path eagerly).
    """
    if compile not in COMPILE_CHOICES:
        raise ValueError(f"compile must be one of {', '.join(COMPILE_CHOICES)}, got {compile!r}")
    cuda = torch.device(device).type == "cuda"
    if compile == "auto" and cuda:
        compile = "on" if inductor_wanted() else "graphs"
    compiled = compile in ("on", "graphs")
    static = compiled if static_cache is None else bool(static_cache)
    if compiled and not static:
        raise ValueError("compiled forwards need the static cache (static_cache=False contradicts compile)")
    if compile == "on":
        import torch._dynamo as dynamo

        # One graph per shape: draft steps of 1-2 tokens and verifies of up to MAX_K + 1 positions.
        dynamo.config.cache_size_limit = max(dynamo.config.cache_size_limit, 64)
        return Forwards(static, True, "inductor")
    if compile == "graphs":
        return Forwards(static, True, "graphs" if cuda else "buffers")
    return Forwards(static, False, "eager")


def compiled_unbound(module):
    """torch.compile of the module's forward as a function of the module: called `fn(module, ...)`, it traces the
    same frame as the bound method, and the Runtime that keeps it does not keep the module alive (runtime.state)."""
    forward = module.forward
    if getattr(forward, "__self__", None) is module:
        plain = forward.__func__
    else:   # a forward replaced on the instance (a hook): compiled as it is, which then keeps the module alive
        def plain(_module, *args, **kwargs):
            return forward(*args, **kwargs)
    return torch.compile(plain, mode="reduce-overhead", dynamic=False)
