"""GGUF K-quant blocks for the tests: random Q4_K and Q6_K tensors as a GGUF holds them, gguf's own dequantizer, a
small GGUF file, a q6k layer (shared by the quant test modules)."""
from __future__ import annotations

import numpy as np
import torch

from specviz.models.quant import q4a8, q4k


def q4k_blocks(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """Raw Q4_K blocks [rows, cols/256 * 144] as a GGUF holds them: random codes and 6-bit scales, small d, dmin."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (rows * cols // 256, 144), dtype=np.uint8)
    halves = np.stack([rng.uniform(1e-4, 3e-3, len(blocks)), rng.uniform(1e-4, 2e-2, len(blocks))], 1)
    blocks[:, :4] = halves.astype(np.float16).view(np.uint8)
    return blocks.reshape(rows, -1)


def q4k_dequantized(blocks: np.ndarray) -> torch.Tensor:
    """What transformers loads from those blocks: gguf's own Q4_K dequantizer, fp32."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    return torch.from_numpy(dequantize(blocks, GGMLQuantizationType.Q4_K).astype(np.float32))


def write_gguf(path, tensors: dict[str, tuple[np.ndarray, object]], arch: str = "qwen2") -> None:
    """A small GGUF of raw tensors {name: (bytes, GGML type)}."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    for name, (data, kind) in tensors.items():
        writer.add_tensor(name, data, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def q6k_blocks(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """Raw Q6_K blocks [rows, cols/256 * 210] as a GGUF holds them: random codes and int8 sub-scales, small d."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (rows * cols // 256, 210), dtype=np.uint8)
    blocks[:, 208:210] = rng.uniform(1e-5, 1e-3, (len(blocks), 1)).astype(np.float16).view(np.uint8)
    return blocks.reshape(rows, -1)


def q6k_dequantized(blocks: np.ndarray) -> torch.Tensor:
    """What transformers loads from those blocks: gguf's own Q6_K dequantizer, fp32."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    return torch.from_numpy(dequantize(blocks, GGMLQuantizationType.Q6_K).astype(np.float32))


def q6k_layer(rows: int = 40, cols: int = 512, seed: int = 0, bias: bool = True):
    blocks = q6k_blocks(rows, cols, seed)
    weight = q6k_dequantized(blocks)
    s = q4k.q6k_block_scales(blocks, rows)
    scales = (s["q6k_d"], s["q6k_sc"])
    codes = q4k.exact_q6k_codes(weight, scales)
    assert codes is not None
    b = torch.randn(rows, generator=torch.Generator().manual_seed(seed)) if bias else None
    return q4a8.Q6KA8Linear(weight, b, (codes, *scales)), weight, (codes, *scales)
