// The activations of a product as int8, per row and block of 32 (as ggml's Q8 blocks): the portable quantizer and
// its AVX2 twin, which does the same IEEE operations and so gives the same bits.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "q4a8.h"

namespace specviz_q4a8 {
namespace {

// Per row and block of 32: d = amax / 127, q = round-half-even(x * (1 / d)) in -127..127,
// s = sum(q), m = d * s. Each row on its own: a row's values do not depend on the others. The AVX2
// version does the same IEEE operations (the max is exact in any order), so both give the same bits.
inline void block_factors(int32_t sum, float step, int64_t at, float* d, float* m, int32_t* s) {
  d[at] = step;
  s[at] = sum;
  m[at] = step * float(sum);
}

void quantize_block_scalar(const float* xb, int8_t* q, int64_t at, float* d, float* m, int32_t* s) {
  float amax = 0.f;
  for (int64_t i = 0; i < GROUP; ++i) amax = std::max(amax, std::fabs(xb[i]));
  const float step = amax / 127.f;
  const float inv = step != 0.f ? 1.f / step : 0.f;
  int32_t sum = 0;
  for (int64_t i = 0; i < GROUP; ++i) {
    float v = std::nearbyint(xb[i] * inv);
    v = std::min(127.f, std::max(-127.f, v));
    q[i] = int8_t(v);
    sum += int32_t(v);
  }
  block_factors(sum, step, at, d, m, s);
}

__attribute__((target("avx2,fma")))
void quantize_block_avx2(const float* xb, int8_t* q, int64_t at, float* d, float* m, int32_t* s) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_loadu_ps(xb + 8 * j);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[j]));
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  const float step = _mm_cvtss_f32(h) / 127.f;
  const __m256 inv = _mm256_set1_ps(step != 0.f ? 1.f / step : 0.f);
  const __m256 hi = _mm256_set1_ps(127.f), lo = _mm256_set1_ps(-127.f);
  __m256i n[4];
  __m256i total = _mm256_setzero_si256();
  for (int j = 0; j < 4; ++j) {
    __m256 r = _mm256_round_ps(_mm256_mul_ps(v[j], inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    n[j] = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, r)));
    total = _mm256_add_epi32(total, n[j]);
  }
  // int32 -> int8 (packs work within 128-bit lanes; the permute puts the 32 values back in order)
  __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
  b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), b);
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
  block_factors(_mm_cvtsi128_si32(t), step, at, d, m, s);
}

}  // namespace

void quantize_rows(const float* x, int64_t M, int64_t K, int8_t* q, float* d, float* m, int32_t* s, bool avx2) {
  const int64_t G = K / GROUP;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t g = 0; g < G; ++g) {
      const int64_t at = r * K + g * GROUP;
      if (avx2)
        quantize_block_avx2(x + at, q + at, r * G + g, d, m, s);
      else
        quantize_block_scalar(x + at, q + at, r * G + g, d, m, s);
    }
}

}  // namespace specviz_q4a8
