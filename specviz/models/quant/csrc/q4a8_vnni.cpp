// specviz's 4-bit and int8 tiles for AVX-512 VNNI: vpdpbusd. The sequence every tile computes, and why it is the
// same whatever the row count: q4a8.cpp's opening comment.
#include "q4a8.h"

namespace specviz_q4a8 {
namespace {

// ---------------------------------------------------------------- AVX-512 VNNI: vpdpbusd
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,fma")

template <int MR, int KIND, bool PF = (MR >= 2)>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
void q4_tile_vnni(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m512 acc[MR];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi8(15);
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = q4_codes<KIND>(w, g);
    if (PF) prefetch_ahead<5>(blk);
    __m512i c[8];
    #pragma GCC unroll 8
    for (int p = 0; p < 4; ++p) {
      __m512i v = _mm512_loadu_si512(blk + p * 64);
      c[2 * p] = _mm512_and_si512(v, low);
      c[2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
    __m512 sc, mn;
    if (KIND == Q4H) {   // fp16 -> fp32 (exact)
      sc = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + Q4_CODES)));
      mn = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + Q4_CODES + 2 * TILE)));
    } else if (KIND == Q4K) {   // bytes -> fp32 (exact), times d and -dmin (exact)
      const float* head = k4_head(w, g);
      auto bytes = [&](int64_t at) {
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + at))));
      };
      sc = _mm512_mul_ps(bytes(Q4_CODES), _mm512_loadu_ps(head));
      mn = _mm512_mul_ps(bytes(Q4_CODES + TILE), _mm512_loadu_ps(head + TILE));
    } else {
      sc = _mm512_loadu_ps(blk + Q4_CODES);
      mn = _mm512_loadu_ps(blk + Q4_CODES + TILE * 4);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int8_t* x = a.q + r * a.K + g * GROUP;
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();   // two chains: latency
      #pragma GCC unroll 8
      for (int p = 0; p < 4; ++p) {
        s0 = _mm512_dpbusd_epi32(s0, c[2 * p], _mm512_set1_epi32(load4(x + 8 * p)));
        s1 = _mm512_dpbusd_epi32(s1, c[2 * p + 1], _mm512_set1_epi32(load4(x + 8 * p + 4)));
      }
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
      const __m512 sd = _mm512_mul_ps(sc, _mm512_set1_ps(a.d[r * a.G + g]));
      acc[r] = _mm512_fmadd_ps(dot, sd, acc[r]);
      acc[r] = _mm512_fmadd_ps(mn, _mm512_set1_ps(a.m[r * a.G + g]), acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}

template <int MR, bool PF = (MR >= 2)>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
void q8_tile_vnni(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m512 acc[MR];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = w + g * Q8_BLOCK;
    if (PF) prefetch_ahead<8>(blk);
    __m512i c[8];
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) c[k] = _mm512_loadu_si512(blk + k * 64);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int8_t* x = a.q + r * a.K + g * GROUP;
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
      #pragma GCC unroll 8
      for (int k = 0; k < 8; k += 2) {
        s0 = _mm512_dpbusd_epi32(s0, c[k], _mm512_set1_epi32(load4(x + 4 * k)));
        s1 = _mm512_dpbusd_epi32(s1, c[k + 1], _mm512_set1_epi32(load4(x + 4 * k + 4)));
      }
      __m512i t = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), _mm512_set1_epi32(128 * a.s[r * a.G + g]));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(a.d[r * a.G + g]), acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}

template <int MR, bool PF = (MR >= 2)>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
void q6k_tile_vnni(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m512 acc[MR];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi8(15), top = _mm512_set1_epi8(0x30);
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = q6_group(w, g);
    const float* head = q6_head(w, g);
    if (PF) prefetch_ahead<7>(blk);
    const __m512i hb[2] = {_mm512_loadu_si512(blk + Q6_HIGH), _mm512_loadu_si512(blk + Q6_HIGH + 64)};
    __m512i c[8];
    #pragma GCC unroll 8
    for (int p = 0; p < 4; ++p) {
      __m512i v = _mm512_loadu_si512(blk + p * 64);
      c[2 * p] = _mm512_and_si512(v, low);
      c[2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
    #pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {   // c | (shifted high bits & 0x30): one ternary-logic op
      const int j = v % 4;
      const __m512i t = j < 2 ? _mm512_slli_epi16(hb[v / 4], 4 - 2 * j) : _mm512_srli_epi16(hb[v / 4], 2 * j - 4);
      c[v] = _mm512_ternarylogic_epi32(c[v], t, top, 0xF8);
    }
    auto scales = [&](int64_t at) {
      return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(blk + at)))), _mm512_loadu_ps(head));
    };
    const __m512 ds0 = scales(Q6_SCALES), ds1 = scales(Q6_SCALES + TILE);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int8_t* x = a.q + r * a.K + g * GROUP;
      const __m512 step = _mm512_set1_ps(a.d[r * a.G + g]);
      __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
      #pragma GCC unroll 8
      for (int v = 0; v < 8; ++v)   // halves: vectors 0-3, 4-7; two chains each (integer sums: any order)
        s[(v / 4) * 2 + v % 2] = _mm512_dpbusd_epi32(s[(v / 4) * 2 + v % 2], c[v], _mm512_set1_epi32(load4(x + 4 * v)));
      const int32_t* s16 = a.s16 + r * 2 * a.G + 2 * g;
      const __m512i t0 = _mm512_sub_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_set1_epi32(32 * s16[0]));
      const __m512i t1 = _mm512_sub_epi32(_mm512_add_epi32(s[2], s[3]), _mm512_set1_epi32(32 * s16[1]));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t0), _mm512_mul_ps(ds0, step), acc[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t1), _mm512_mul_ps(ds1, step), acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}
#pragma GCC pop_options

}  // namespace

SPECVIZ_TILE_TABLES(vnni)

}  // namespace specviz_q4a8
