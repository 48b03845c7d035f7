// The products' epilogue (q4a8_epilogue.h says what it computes), one variant per (scales, output dtype, bias).
#include "q4a8_epilogue.h"

#include <algorithm>
#include <cstdint>

#include "bf16.h"
#include "q4a8.h"

namespace specviz_q4a8 {
namespace {

using specviz::bf16_bits;
using specviz::bf16_value;

// One variant per (scales, output dtype, bias): no branch in the loops, chosen once a call; compiled a second time
// for AVX2 (the vectorizer's wider registers; integer and single fp32 operations: the same bits).
template <int SCALES, bool BF16, bool BIAS>   // SCALES: 0 none, 1 fp32, 2 bf16
inline __attribute__((always_inline))
void epilogue_body(const Epilogue& e, const float* y, int64_t ldy, int64_t r0, int64_t mr, int64_t c0) {
  const int64_t width = std::min(e.n, c0 + TILE) - c0;
  for (int64_t r = 0; r < mr; ++r) {
    float v[TILE];
    for (int64_t c = 0; c < width; ++c) {
      v[c] = y[r * ldy + c];
      if (SCALES == 1) v[c] = v[c] * e.scales_f[c0 + c];
      if (SCALES == 2) v[c] = v[c] * bf16_value(e.scales_b[c0 + c]);
    }
    const int64_t at = (r0 + r) * e.n + c0;
    if (BF16) {
      uint16_t* out = e.out_b + at;
      const uint16_t* bias = e.bias_b + c0;
      for (int64_t c = 0; c < width; ++c) {
        const uint16_t b = bf16_bits(v[c]);
        out[c] = BIAS ? bf16_bits(bf16_value(b) + bf16_value(bias[c])) : b;   // ATen's bf16 add: one rounding
      }
    } else {
      for (int64_t c = 0; c < width; ++c) e.out_f[at + c] = BIAS ? v[c] + e.bias_f[c0 + c] : v[c];
    }
  }
}

template <int SCALES, bool BF16, bool BIAS>
void epilogue(const Epilogue& e, const float* y, int64_t ldy, int64_t r0, int64_t mr, int64_t c0) {
  epilogue_body<SCALES, BF16, BIAS>(e, y, ldy, r0, mr, c0);
}

template <int SCALES, bool BF16, bool BIAS>
__attribute__((target("avx2,fma")))
void epilogue_avx2(const Epilogue& e, const float* y, int64_t ldy, int64_t r0, int64_t mr, int64_t c0) {
  epilogue_body<SCALES, BF16, BIAS>(e, y, ldy, r0, mr, c0);
}

template <int SCALES>
void pick_variant(Epilogue& e, bool avx2) {
  const bool bf16 = e.out_b != nullptr, bias = e.bias_f != nullptr || e.bias_b != nullptr;
  if (avx2)
    e.fn = bf16 ? (bias ? epilogue_avx2<SCALES, true, true> : epilogue_avx2<SCALES, true, false>)
                : (bias ? epilogue_avx2<SCALES, false, true> : epilogue_avx2<SCALES, false, false>);
  else
    e.fn = bf16 ? (bias ? epilogue<SCALES, true, true> : epilogue<SCALES, true, false>)
                : (bias ? epilogue<SCALES, false, true> : epilogue<SCALES, false, false>);
}

}  // namespace

void pick_epilogue(Epilogue& e, bool avx2) {
  if (e.scales_f) pick_variant<1>(e, avx2); else if (e.scales_b) pick_variant<2>(e, avx2); else pick_variant<0>(e, avx2);
}

}  // namespace specviz_q4a8
