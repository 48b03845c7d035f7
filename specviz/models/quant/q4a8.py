"""4-bit weights, int8 activations on a CPU ("q4a8"): a verify of up to 8 rows for about the cost of one.

Why this exists: speculation pays when scoring K+1 positions costs about one. PyTorch's
4-bit CPU product blocks rows by 4 and dequantizes every weight tile to fp32 per block, so 5-8 rows
cost two passes over the weights and one row is bound by arithmetic, not memory. The kernel in
csrc/q4a8.cpp unpacks each weight tile once for all rows (up to 8 a pass) and multiplies the
GGUF's own 4-bit codes, as int8, by the activations quantized to int8 per row and block of 32
(like ggml's Q4_K x Q8_K): AVX2 vpmaddubsw or AVX-512 VNNI vpdpbusd, chosen at run time.

Row-invariant by construction: work is split over output columns only and each output is one fixed
sequence of operations, so a row of a verify is bit-identical to the same row computed alone, for
any row or thread count (tests/test_models_quant_q4a8.py). The weights are w = min + code * scale with fp32
scale and min (the GGUF's own, or the grid weights.int4_grid finds), so a dequantized Q4_K tensor is reproduced;
the int8 activations are the precision this kind adds (its fidelity: scripts/fidelity.py).

Two 4-bit layouts. The products run near the memory roofline, so bytes are time, and in the
first layout ("q4", 0.75 B a weight) a third of the bytes are fp32 scales. A GGUF Q4_K tensor's scales are
smaller in their own form: per 32 weights a 6-bit sub-scale sc and sub-minimum m, per 256 an fp16 d and dmin,
w = d*sc*q - dmin*m. The second layout ("q4k", Q4KA8Linear, 0.59 B a weight) keeps sc and m as bytes and d and
-dmin as fp32 per super-block; the kernel forms scale = sc * d and min = m * (-dmin), both exact in fp32, so
it runs the very fixed sequence of fp32 operations of "q4" holding those values. The values are the GGUF's
own (read at conversion, specviz.models.quant.q4k); layers without them keep "q4".

A third layout ("q4h", Q4HA8Linear, 0.625 B a weight) keeps the scale and minimum per 32 as fp16: for a grid that
is ours to choose (a draft requantized to 4 bits, strict_grid=False), including widths that are no multiple of a
super-block (the 0.5B draft's 896). fp16 -> fp32 is exact: again the fixed sequence of "q4" holding those values.

A target's GGUF Q6_K tensors (its output layer, ffn_down and attn_v in half its layers) keep their own values too
("q6k", Q6KA8Linear, 0.83 B a weight against int8's 1 B, which had requantized them): 6-bit codes, an int8
sub-scale per 16 inputs, an fp16 d per 256; per half-group idot = sum(code * x) - 32 * sum(x), then
acc = fma(float(idot), (sc * d) * step, acc), its own fixed sequence (q4a8_layout.q6k_reference).

The extension is built by PyTorch's own tooling at first use and cached beside the model cache,
keyed by its source and torch's version (one .so for every x86-64 CPU: no -march flags); one process builds at a
time, and a build killed midway leaves nothing that blocks the next (specviz.models.quant.q4a8_build). Where no
compiler is present or the build fails, `unavailable()` says why in one line and the caller runs
PyTorch's kernels instead (weights.resolve_target_weights).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import sys
import threading
from pathlib import Path

import torch

from ..packaged import cache_dir
from .q4a8_layout import (GROUP, ROWS, TILE, fp16_grid, pack_q4, pack_q4h, pack_q4k,  # noqa: F401 - re-exported
                          pack_q6k, pack_q8, q4_reference, q6k_reference, q8_reference, quantize_reference, unpack_q4,
                          unpack_q4h, unpack_q4k, unpack_q6k, unpack_q8)
from .q4a8_build import build_turn, reporting_build_waits, staged_sources  # noqa: F401 - re-exported
from .q4k import q4k_grid

# One extension: the products (their tiles per instruction set, the activations' quantizer and the epilogue in files
# of their own, which the builder compiles in parallel), the one-query attention, the lean stack's elementwise tails
# and its loop, a GGUF's 4- and 6-bit blocks repacked into the products' tiles; one file binds them all (bindings.cpp,
# the only one that includes pybind11), one reads the CPU's features (cpu_features.cpp).
SOURCES = [Path(__file__).parent / "csrc" / name for name in
           ("bindings.cpp", "q4a8.cpp", "q4a8_scalar.cpp", "q4a8_quantize.cpp", "q4a8_epilogue.cpp", "q4a8_avx2.cpp",
            "q4a8_vnni.cpp", "attention.cpp", "lean_ops.cpp", "lean_stack.cpp", "gguf_repack.cpp", "cpu_features.cpp")]
HEADERS = [Path(__file__).parent / "csrc" / name for name in   # no source of their own: in the build's key only
           ("q4a8.h", "q4a8_epilogue.h", "ops.h", "aten.h", "lean_stack.h", "cpu_features.h", "bf16.h")]
# The instruction set is the extension's to choose, once per process (csrc/cpu_features.h): the best this CPU runs,
# or the one this variable names (read once, at the first call; refused where the CPU lacks it). No call passes one.
ISA_ENV_VAR = "SPECVIZ_Q4_ISA"   # force: avx512vnni | avx2 | scalar (the best this CPU runs when unset)
ISAS = ("scalar", "avx2", "avx512vnni")   # the extension's names, worst first
KINDS = {"q4": 0, "q8": 1, "q4k": 2, "q4h": 3, "q6k": 4}   # csrc/q4a8.h's Kind
LAYOUT = 4          # the packed layouts' version (weights_cache keys converted copies by it); 2: q4k, 3: q4h, 4: q6k
CFLAGS = ["-O3", "-ffp-contract=off", "-fopenmp"]   # contract=off: the fp32 steps are the kernel's own


def _key() -> str:
    # sys.prefix: PyTorch's headers live in the environment, so another venv would rewrite the build file and
    # rebuild (~30 s) on every switch between the two; one build per environment instead. The key holds the
    # sources' bytes, never their path, and the build compiles copies inside its folder (`staged_sources`): two
    # checkouts of one source sharing one environment (one sys.prefix) share one build.
    text = (b"".join(path.read_bytes() for path in SOURCES + HEADERS) + " ".join(CFLAGS).encode() + torch.__version__.encode()
            + sys.prefix.encode())
    return hashlib.sha256(text).hexdigest()[:16]


def build_dir() -> Path:
    """Where the compiled extension lives: beside the model cache, one folder per source and torch."""
    return cache_dir() / "kernels" / f"q4a8-{_key()}-torch{re.sub(r'[^0-9A-Za-z.]', '_', torch.__version__)}"


def built() -> bool:
    """Whether a compiled copy is already in the cache (loading it then takes well under a second)."""
    return any(build_dir().glob("*.so"))


_FAILURE: list[str] = []   # why the extension is unavailable (empty while it is, or before a try)


_LOADING = threading.Lock()   # one thread builds and imports the extension; the others wait for its answer


def extension():
    """The compiled kernels (built once per source and torch version), or None where they cannot be built."""
    with _LOADING:
        return _extension()


def start_build() -> None:
    """Build the kernels on a thread of their own when they are not built yet, so that a first load's other work
    (assembling and reading the GGUF files) runs beside the compiler instead of before it; a later extension() call
    waits for that build."""
    if not built() and not _LOADING.locked():
        threading.Thread(target=extension, name="specviz-kernels-build", daemon=True).start()


@functools.lru_cache(maxsize=1)
def _extension():
    if sys.platform != "linux" or os.uname().machine not in ("x86_64", "AMD64"):
        _FAILURE.append("the q4a8 kernels are written for x86-64 Linux")
        return None
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        _FAILURE.append(f"no C++ compiler ({compiler}) found")
        return None
    if not _ninja_on_path():
        _FAILURE.append("no ninja build tool found (pip install ninja, pinned in requirements.txt)")
        return None
    try:
        from torch.utils.cpp_extension import load

        folder = build_dir()
        with build_turn(folder):
            sources = [str(path) for path in staged_sources(folder, SOURCES, HEADERS)]
            return load(name=f"specviz_q4a8_{_key()}", sources=sources,
                        build_directory=str(folder), extra_cflags=CFLAGS, extra_ldflags=["-fopenmp"], verbose=False)
    except Exception as e:   # noqa: BLE001 - no compiler, a failed build, an unwritable cache: all fall back
        first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
        _FAILURE.append(f"{type(e).__name__}: {first[:200]}")
        return None


extension.cache_clear = _extension.cache_clear   # forget the answer (a test that rebuilds, a changed environment)


def _ninja_on_path() -> bool:
    """PyTorch's extension builder runs `ninja` from PATH. The pinned PyPI wheel puts it beside this Python, which
    is not on PATH when the app runs as `.venv/bin/python app.py`: add that folder where no other ninja is found."""
    if shutil.which("ninja") is not None:
        return True
    try:
        import ninja   # optional at import: only the build needs it
    except ImportError:
        return False
    os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
    return shutil.which("ninja") is not None


def unavailable() -> str | None:
    """None where the kernels run here, else one line saying why (building them first if need be)."""
    if extension() is not None:
        return None
    return _FAILURE[-1] if _FAILURE else "the q4a8 kernels could not be loaded"


def attention_kernel():
    """The extension for the runtime's one-query attention (models.prepare hands it to runtime.setup): only where it
    is already built (a build takes a minute or more on 2 cores; configuring the runtime must not wait for one)."""
    if not built() or unavailable() is not None:
        return None
    ext = extension()
    return ext if hasattr(ext, "one_query_attention") else None


def supported_isas() -> list[str]:
    """The instruction sets this CPU runs the kernels with, best last (none where the kernels are unavailable)."""
    ext = extension()
    return [] if ext is None else list(ext.supported_isas())


def chosen_isa() -> str:
    """The instruction set every kernel call of this process runs: the extension's choice (csrc/cpu_features.h), the
    best here or SPECVIZ_Q4_ISA's, read once; a ValueError says in one sentence why a value is refused."""
    return extension().isa()


@contextlib.contextmanager
def isa_forced(name: str):
    """Inside, every kernel call of the process runs on `name` (tests: each instruction set in one process); the
    choice before is restored after. The choice is the process's, so nothing else may run kernels meanwhile."""
    ext = extension()
    before = ext.isa()
    ext.set_isa(name)
    try:
        yield
    finally:
        ext.set_isa(before)


def usable(linear_in: int) -> bool:
    """The kernels take layers whose input width is a multiple of the 32-wide block."""
    return linear_in % GROUP == 0


# ------------------------------------------------------------------ the layers

def q4_matmul(x2d: torch.Tensor, packed: torch.Tensor, n: int) -> torch.Tensor:
    y = extension().q4_matmul(x2d.float(), packed)
    return y if y.shape[1] == n else y[:, :n]


def q4k_matmul(x2d: torch.Tensor, packed: torch.Tensor, n: int) -> torch.Tensor:
    y = extension().q4k_matmul(x2d.float(), packed)
    return y if y.shape[1] == n else y[:, :n]


def q4h_matmul(x2d: torch.Tensor, packed: torch.Tensor, n: int) -> torch.Tensor:
    y = extension().q4h_matmul(x2d.float(), packed)
    return y if y.shape[1] == n else y[:, :n]


def q8_matmul(x2d: torch.Tensor, packed: torch.Tensor, n: int) -> torch.Tensor:
    y = extension().q8_matmul(x2d.float(), packed)
    return y if y.shape[1] == n else y[:, :n]


class Q4A8Linear(torch.nn.Module):
    """`nn.Linear` with 4-bit group-affine weights (fp32 scale and minimum per 32) and int8 activations."""

    row_invariant = True   # by construction (csrc/q4a8.cpp); checked by tests/test_models_quant_q4a8.py and the harness

    kind = KINDS["q4"]   # the kernel for this layout, as csrc/q4a8.cpp's `linear` names it (each subclass: its own)
    pack = staticmethod(pack_q4)   # grid -> the layout's packed bytes (each subclass: its own layout)

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, grid):
        """`grid`: what the layout's `pack` takes, e.g. (codes, scale, lo) here; `weight` gives only the shape."""
        super().__init__()
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.register_buffer("packed", self.pack(*grid))
        self.register_buffer("bias", bias)

    @classmethod
    def from_packed(cls, out_features: int, in_features: int, bias: torch.Tensor | None, packed: torch.Tensor):
        """A layer over bytes already in this layout (a GGUF's blocks repacked by the extension: gguf_loader)."""
        layer = cls.__new__(cls)
        torch.nn.Module.__init__(layer)
        layer.in_features, layer.out_features = in_features, out_features
        layer.register_buffer("packed", packed)
        layer.register_buffer("bias", bias)
        return layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # One call does product(x) -> to(x.dtype) -> + bias, op for op (csrc/q4a8.cpp's `linear`).
        y = extension().linear(x.reshape(-1, self.in_features), self.packed, self.out_features, None, self.bias,
                               self.kind)
        return y.reshape(*x.shape[:-1], self.out_features)

    def _dense(self, packed: torch.Tensor, n: int) -> torch.Tensor:
        """The [n, K] fp32 weights held in `packed` (this layout's tiles, 16 outputs each)."""
        codes, scale, lo = unpack_q4(packed, n)
        g = self.in_features // GROUP
        w = codes.reshape(-1, g, GROUP).float() * scale[..., None] + lo[..., None]
        return w.reshape(n, self.in_features)

    def dense_weight(self) -> torch.Tensor:
        return self._dense(self.packed, self.out_features)

    def dense_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """dense_weight()[rows], the same values, from only the tiles that hold them: a trimmed draft head takes 32k
        of the packaged draft's 152k output rows, which lie in 2,397 of its 9,496 tiles."""
        rows = torch.as_tensor(rows, dtype=torch.long, device=self.packed.device)
        tiles = torch.unique(rows // TILE)   # sorted
        w = self._dense(self.packed.index_select(0, tiles), len(tiles) * TILE)
        return w.index_select(0, torch.searchsorted(tiles, rows // TILE) * TILE + rows % TILE)

    @property
    def weight(self) -> torch.Tensor:
        return self.dense_weight()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, weights=4-bit, activations=int8"


class Q4KA8Linear(Q4A8Linear):
    """Q4A8Linear holding a Q4_K tensor's own scales (6-bit sc and m per 32, d and dmin per 256): 0.59 B a weight."""

    kind = KINDS["q4k"]
    pack = staticmethod(pack_q4k)   # grid: (codes, d, sc, dmin, m)

    def _dense(self, packed: torch.Tensor, n: int) -> torch.Tensor:
        codes, d, sc, dmin, m = unpack_q4k(packed, n)
        scale, lo = q4k_grid(d, sc, dmin, m)
        w = codes.reshape(-1, scale.shape[1], GROUP).float() * scale[..., None] + lo[..., None]
        return w.reshape(n, self.in_features)

    def extra_repr(self) -> str:
        return super().extra_repr() + ", scales=Q4_K (6-bit)"


class Q4HA8Linear(Q4A8Linear):
    """Q4A8Linear with its scale and minimum per 32 in fp16 (0.625 B a weight): a requantized draft's layers."""

    kind = KINDS["q4h"]
    pack = staticmethod(pack_q4h)   # grid: (codes, scale, lo), scale and lo in fp16

    def _dense(self, packed: torch.Tensor, n: int) -> torch.Tensor:
        codes, scale, lo = unpack_q4h(packed, n)
        g = self.in_features // GROUP
        w = codes.reshape(-1, g, GROUP).float() * scale.float()[..., None] + lo.float()[..., None]
        return w.reshape(n, self.in_features)

    def extra_repr(self) -> str:
        return super().extra_repr() + ", scales=fp16"


class Q6KA8Linear(Q4A8Linear):
    """A Q6_K tensor's own values: 6-bit codes, an int8 sub-scale per 16 inputs and an fp16 d per 256 (0.83 B a
    weight against int8's 1 B), w = (d * sc) * (q - 32) as gguf dequantizes it, bit for bit."""

    kind = KINDS["q6k"]
    pack = staticmethod(pack_q6k)   # grid: (codes, d, sc)

    def _dense(self, packed: torch.Tensor, n: int) -> torch.Tensor:
        codes, d, sc = unpack_q6k(packed, n)
        step = sc.float() * d.repeat_interleave(16, 1)
        w = step[..., None] * (codes - 32).float().reshape(n, -1, 16)
        return w.reshape(n, self.in_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, weights=Q6_K (6-bit), "
                "activations=int8")


class Q8A8Linear(torch.nn.Module):
    """`nn.Linear` with int8 weights (an fp32 scale per output) and int8 activations: the GGUF's 6-bit layers."""

    row_invariant = True   # as Q4A8Linear

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        scales = weight.abs().amax(1).clamp_min(1e-12) / 127
        wq = torch.round(weight / scales[:, None]).clamp(-127, 127).to(torch.int8)
        self.register_buffer("packed", pack_q8(wq))
        self.register_buffer("scales", scales.float().contiguous())
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # product(x) * scales -> to(x.dtype) -> + bias in one call, op for op (csrc/q4a8.cpp's `linear`).
        y = extension().linear(x.reshape(-1, self.in_features), self.packed, self.out_features, self.scales,
                               self.bias, KINDS["q8"])
        return y.reshape(*x.shape[:-1], self.out_features)

    def dense_weight(self) -> torch.Tensor:
        return unpack_q8(self.packed, self.out_features).float() * self.scales[:, None]

    @property
    def weight(self) -> torch.Tensor:
        return self.dense_weight()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, weights=int8, activations=int8"
