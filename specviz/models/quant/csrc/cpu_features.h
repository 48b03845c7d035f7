// The CPU's instruction sets, read once per process and in one place, and the one instruction set the process runs
// (as ggml's CPU backend does): every choice of a vectorized path in this extension (the products' tiles, the
// quantizer, the epilogue, the attention, the elementwise tails) asks isa(), so no two files can disagree on what
// this CPU runs or on what the process chose, and no caller passes an instruction set around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specviz {

// The instruction sets the products have tiles for, worst first (the names: isa_name).
enum Isa : int64_t { SCALAR = 0, AVX2 = 1, AVX512VNNI = 2 };

struct CpuFeatures {
  bool avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni;

  // Whether the products run an Isa here; AVX2 also wants f16c (the q4h layout's fp16 scales: every AVX2 CPU has it).
  bool runs(int64_t isa) const {
    if (isa == AVX512VNNI) return avx512f && avx512bw && avx512vl && avx512vnni && fma;
    if (isa == AVX2) return avx2 && fma && f16c;
    return isa == SCALAR;
  }
};

// This CPU's features, read on the first call (a function-local static: once per process, thread-safe).
const CpuFeatures& cpu_features();

// The process's instruction set: on the first call the best this CPU runs, or the one SPECVIZ_Q4_ISA names (the
// variable read that once; a name this CPU does not run is refused, std::invalid_argument with one sentence, on
// every call); after that what set_isa last chose. Each call is one atomic load: a product reads it once at its
// start, so a change never splits one product.
Isa isa();
// Whether code that has an AVX2 + FMA build and a portable one (the attention, the elementwise tails, the
// quantizer, the epilogue: none has an AVX-512 build) runs the AVX2 one under `chosen`: every choice but scalar
// (a choice is always one this CPU runs, so AVX2, FMA and F16C are there).
inline bool avx2_build(Isa chosen) { return chosen != SCALAR; }

// "scalar", "avx2", "avx512vnni".
const char* isa_name(Isa chosen);
// The process's name for isa() (the binding's `isa`).
std::string chosen_isa_name();
// Change the process's choice (tests: every instruction set in one process); refused as the variable's value is.
void set_isa(const std::string& name);
// The instruction sets this CPU runs, best last.
std::vector<std::string> supported_isas();

}  // namespace specviz
