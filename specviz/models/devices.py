"""Which device and dtype a pair runs on (automatic by what the machine has, or as asked), and how much memory
the device has free for it."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from ..errors import ModelLoadError

# Device and dtype
# --------------------------------------------------------------------------- #


def gpu_available() -> bool:
    """A CUDA GPU here, or a ZeroGPU Space (which attaches one to each `spaces.GPU` call)."""
    if os.environ.get("SPACES_ZERO_GPU"):
        return True
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no usable torch build: no GPU
        return False


def _cpu_supports_bf16() -> bool:
    """True when the CPU has native bf16 arithmetic (else bf16 is emulated and slow)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip().lower()
        if key in ("flags", "features") and ":" in line:
            flags.update(line.split(":", 1)[1].split())
    if flags & {"avx512_bf16", "amx_bf16"}:
        return True
    if platform.machine().lower() in ("aarch64", "arm64") and "bf16" in flags:
        return True  # Armv8.6 BF16 extension (e.g. Graviton3, Neoverse V1)
    return False


def default_device_and_dtype() -> tuple[torch.device, torch.dtype]:
    """Pick the fastest device and a dtype it computes natively."""
    if torch.cuda.is_available():
        return torch.device("cuda"), (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps"), torch.float16
    return torch.device("cpu"), (torch.bfloat16 if _cpu_supports_bf16() else torch.float32)


_DTYPES = {
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp16": torch.float16, "float16": torch.float16, "half": torch.float16,
    "fp32": torch.float32, "float32": torch.float32, "float": torch.float32,
}


def parse_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """'bf16' / 'float16' / torch.float32 / None ('auto') -> torch.dtype or None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    if key == "auto":
        return None
    if key not in _DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use one of bf16, fp16, fp32")
    return _DTYPES[key]


def resolve_device_dtype(device, dtype) -> tuple[torch.device, torch.dtype]:
    dtype = parse_dtype(dtype)
    default_dev, default_dt = default_device_and_dtype()
    if device is None:
        dev = default_dev
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise ModelLoadError(f"unknown device {device!r}; use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device 'cuda' requested but no CUDA GPU is available")
    if dtype is None:
        if dev.type == default_dev.type:
            dtype = default_dt
        elif dev.type == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        elif dev.type == "mps":
            dtype = torch.float16
        else:
            dtype = torch.bfloat16 if (dev.type == "cpu" and _cpu_supports_bf16()) else torch.float32
    return dev, dtype


# Memory
# --------------------------------------------------------------------------- #


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors on `device`: CUDA's free memory, or the host's available memory; None if unknown."""
    if device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:
            return None
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024   # the file says kB, meaning KiB
    except (OSError, ValueError, IndexError):
        pass
    return None
