// Every function the extension exports (bound in bindings.cpp, the one file with pybind11 and PyTorch's Python
// casters) and the ones its files call across each other. Only ATen's tensor type here: each file that defines these
// includes the few ATen headers it uses, never torch/types.h or pybind11 (~10-15 s of the compiler's time a file).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace specviz {

// Every one runs on the process's instruction set (cpu_features.h: isa()); none takes one.

// q4a8.cpp: the products, y[M, tiles*16] = x[M, K] times packed weights (their layouts: q4a8.h), int8 activations.
at::Tensor q4_matmul(at::Tensor x, at::Tensor packed);
at::Tensor q4k_matmul(at::Tensor x, at::Tensor packed);
at::Tensor q4h_matmul(at::Tensor x, at::Tensor packed);
at::Tensor q8_matmul(at::Tensor x, at::Tensor packed);
at::Tensor q4_linear(at::Tensor x, at::Tensor packed, int64_t n, c10::optional<at::Tensor> scales,
                     c10::optional<at::Tensor> bias, int64_t kind);
std::vector<at::Tensor> quantize(at::Tensor x);
int64_t threads();
void set_prefetch_rows(int64_t rows);
int64_t get_prefetch_rows();

// attention.cpp
at::Tensor one_query_attention(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor keys, at::Tensor offsets,
                               double scale);

// lean_ops.cpp: the lean stack's elementwise tails, each rounding as the ATen ops it stands for.
at::Tensor lean_rotary(at::Tensor x, at::Tensor cos, at::Tensor sin);
at::Tensor lean_norm(at::Tensor x, at::Tensor weight, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lean_attention_inputs(
    std::vector<at::Tensor> srcs, std::vector<int64_t> cols, int64_t heads, at::Tensor cos, at::Tensor sin,
    at::Tensor keys, at::Tensor values);
at::Tensor lean_add_(at::Tensor a, at::Tensor b);
at::Tensor lean_mul_(at::Tensor a, at::Tensor b);
at::Tensor lean_narrow(at::Tensor x, at::ScalarType dtype);

// gguf_repack.cpp: a GGUF's Q4_K and Q6_K blocks into the q4k and q6k tiles.
at::Tensor repack_q4k(at::Tensor raw, c10::optional<at::Tensor> out);
at::Tensor repack_q6k(at::Tensor raw, c10::optional<at::Tensor> out);

}  // namespace specviz
