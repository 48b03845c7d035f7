// What `linear` does after the product, per output element, exactly as the ATen ops it replaces do it: keep the
// first n columns, [times the per-output scale (fp32 arithmetic: a bf16 scale promotes exactly),] to the output's
// dtype (bf16: round to nearest even, c10::BFloat16's and ATen's conversion), [plus the bias in that dtype (bf16:
// the sum of the two values as floats, rounded once, as ATen's bf16 add)]. Fused into the tile loop: no ATen call,
// no fp32 copy of the whole output (as five ops they cost a small layer 6-15 us a call on the 2-core Zen 4).
// bf16 values are their 16 bits here (bf16.h), so this file and q4a8_epilogue.cpp need none of PyTorch's headers.
#pragma once

#include <cstdint>

namespace specviz_q4a8 {

struct Epilogue {
  int64_t n = 0;
  const float* scales_f = nullptr;
  const uint16_t* scales_b = nullptr;       // bf16
  const float* bias_f = nullptr;            // bias already in the output's dtype
  const uint16_t* bias_b = nullptr;
  float* out_f = nullptr;                   // exactly one of the two outputs
  uint16_t* out_b = nullptr;
  void (*fn)(const Epilogue&, const float*, int64_t, int64_t, int64_t, int64_t) = nullptr;

  void apply(const float* y, int64_t ldy, int64_t r0, int64_t mr, int64_t c0) const {
    fn(*this, y, ldy, r0, mr, c0);
  }
};

// Sets e.fn to the variant for e's scales, output dtype and bias (set those first), built for AVX2 where `avx2`.
void pick_epilogue(Epilogue& e, bool avx2);

}  // namespace specviz_q4a8
