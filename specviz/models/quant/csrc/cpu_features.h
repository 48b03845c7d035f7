// The CPU's instruction sets, read once per process and in one place (as ggml's CPU backend does): every choice of a
// vectorized path in this extension (the products' tiles, the quantizer, the epilogue, the attention, the elementwise
// tails) asks cpu_features(), so no two files can disagree on what this CPU runs.
#pragma once

#include <cstdint>

namespace specviz {

// The products' instruction sets as Python names them (q4a8.ISAS): 0 portable, 1 AVX2, 2 AVX-512 VNNI.
enum Isa : int64_t { SCALAR = 0, AVX2 = 1, AVX512VNNI = 2 };

struct CpuFeatures {
  bool avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni;

  // What the code built with target("avx2,fma") needs (the attention, the elementwise tails, the epilogue).
  bool avx2_fma() const { return avx2 && fma; }
  // Whether the products run an Isa here; AVX2 also wants f16c (the q4h layout's fp16 scales: every AVX2 CPU has it).
  bool runs(int64_t isa) const {
    if (isa == AVX512VNNI) return avx512f && avx512bw && avx512vl && avx512vnni && fma;
    if (isa == AVX2) return avx2 && fma && f16c;
    return isa == SCALAR;
  }
};

// This CPU's features, read on the first call (a function-local static: once per process, thread-safe).
const CpuFeatures& cpu_features();

}  // namespace specviz
