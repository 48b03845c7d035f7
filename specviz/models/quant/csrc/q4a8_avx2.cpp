// specviz's 4-bit and int8 tiles for AVX2 + FMA: vpmaddubsw, vpmaddwd. The sequence every tile computes, and why it is the
// same whatever the row count: q4a8.cpp's opening comment.
#include "q4a8.h"

namespace specviz_q4a8 {
namespace {

// ---------------------------------------------------------------- AVX2 (+FMA): vpmaddubsw, vpmaddwd
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

template <int MR, int KIND, bool PF = (MR >= 2)>
__attribute__((target("avx2,fma,f16c"))) void q4_tile_avx2(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m256 acc[MR][2];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = q4_codes<KIND>(w, g);
    if (PF) prefetch_ahead<5>(blk);   // the next blocks' 288-384 bytes
    #pragma GCC unroll 8
    for (int h = 0; h < 2; ++h) {   // columns 0-7, then 8-15
      __m256i c[8];
      #pragma GCC unroll 8
      for (int p = 0; p < 4; ++p) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + p * 64 + h * 32));
        c[2 * p] = _mm256_and_si256(v, low);
        c[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      }
      __m256 sc, mn;
      if (KIND == Q4H) {   // fp16 -> fp32 (exact)
        sc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + Q4_CODES + h * 16)));
        mn = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + Q4_CODES + 2 * TILE + h * 16)));
      } else if (KIND == Q4K) {   // bytes -> fp32 (exact), times d and -dmin (exact)
        const float* head = k4_head(w, g);
        auto bytes = [&](int64_t at) {
          return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + at))));
        };
        sc = _mm256_mul_ps(bytes(Q4_CODES + h * 8), _mm256_loadu_ps(head + h * 8));
        mn = _mm256_mul_ps(bytes(Q4_CODES + TILE + h * 8), _mm256_loadu_ps(head + TILE + h * 8));
      } else {
        sc = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + Q4_CODES) + h * 8);
        mn = _mm256_loadu_ps(reinterpret_cast<const float*>(blk + Q4_CODES) + TILE + h * 8);
      }
      const int8_t* xg = a.q + g * GROUP;
      const float *dg = a.d + g, *mg = a.m + g;
      // Fresh pointers per half. Both halves broadcast the same activations and steps; left to itself GCC computes
      // them once for both, and with 16 ymm registers that means storing them to the stack and reading them back:
      // more loads and stores than broadcasting again (the 2-core AVX2 EPYC, interleaved, bit-identical: 8 rows of
      // the target's q4k layers in 0.68-0.78 of the time, 1 row 0.91-0.93; q6k 8 rows 0.80). The empty asm hides
      // that the pointers are the same; it emits no instruction.
      asm volatile("" : "+r"(xg), "+r"(dg), "+r"(mg));
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xg + r * a.K;
        // int16 lanes: each product pair <= 2*15*127, eight of them <= 30480: no saturation.
        __m256i t = _mm256_maddubs_epi16(c[0], _mm256_set1_epi32(load4(x)));
        #pragma GCC unroll 8
        for (int k = 1; k < 8; ++k)
          t = _mm256_add_epi16(t, _mm256_maddubs_epi16(c[k], _mm256_set1_epi32(load4(x + 4 * k))));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(t, ones));
        const __m256 sd = _mm256_mul_ps(sc, _mm256_set1_ps(dg[r * a.G]));
        acc[r][h] = _mm256_fmadd_ps(dot, sd, acc[r][h]);
        acc[r][h] = _mm256_fmadd_ps(mn, _mm256_set1_ps(mg[r * a.G]), acc[r][h]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(y + r * ldy, acc[r][0]);
    _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
  }
}

template <int MR, bool PF = (MR >= 2)>
__attribute__((target("avx2,fma"))) void q8_tile_avx2(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m256 acc[MR][2];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i bias = _mm256_set1_epi8(char(0x80));
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = w + g * Q8_BLOCK;
    if (PF) prefetch_ahead<8>(blk);
    #pragma GCC unroll 8
    for (int h = 0; h < 2; ++h) {
      __m256i c[8];
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) c[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + k * 64 + h * 32));
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) c[k] = _mm256_xor_si256(c[k], bias);   // back to signed -127..127
      __m256i mag[8];
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) mag[k] = _mm256_abs_epi8(c[k]);
      const int8_t* xg = a.q + g * GROUP;
      const float* dg = a.d + g;
      asm volatile("" : "+r"(xg), "+r"(dg));   // fresh pointers per half: see q4_tile_avx2's comment
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xg + r * a.K;
        // ggml's sign trick: |w| * (x with w's sign); a pair of products <= 2*127*127 fits int16.
        __m256i t = _mm256_madd_epi16(
            _mm256_maddubs_epi16(mag[0], _mm256_sign_epi8(_mm256_set1_epi32(load4(x)), c[0])), ones);
        #pragma GCC unroll 8
        for (int k = 1; k < 8; ++k)
          t = _mm256_add_epi32(t, _mm256_madd_epi16(
              _mm256_maddubs_epi16(mag[k], _mm256_sign_epi8(_mm256_set1_epi32(load4(x + 4 * k)), c[k])), ones));
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(dg[r * a.G]), acc[r][h]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(y + r * ldy, acc[r][0]);
    _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
  }
}

template <int MR, bool PF = (MR >= 2)>
__attribute__((target("avx2,fma"))) void q6k_tile_avx2(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  __m256 acc[MR][2];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(15), top = _mm256_set1_epi8(0x30);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < a.G; ++g) {
    const uint8_t* blk = q6_group(w, g);
    const float* head = q6_head(w, g);
    if (PF) prefetch_ahead<7>(blk);
    #pragma GCC unroll 8
    for (int h = 0; h < 2; ++h) {   // columns 0-7, then 8-15
      __m256i c[8];
      const __m256i hb[2] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + Q6_HIGH + h * 32)),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + Q6_HIGH + 64 + h * 32))};
      #pragma GCC unroll 8
      for (int p = 0; p < 4; ++p) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + p * 64 + h * 32));
        c[2 * p] = _mm256_and_si256(v, low);
        c[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      }
      #pragma GCC unroll 8
      for (int v = 0; v < 8; ++v) {   // the high 2 bits into bits 4-5 (16-bit shifts: the mask keeps each byte's own)
        const int j = v % 4;
        const __m256i t = j < 2 ? _mm256_slli_epi16(hb[v / 4], 4 - 2 * j) : _mm256_srli_epi16(hb[v / 4], 2 * j - 4);
        c[v] = _mm256_or_si256(c[v], _mm256_and_si256(t, top));
      }
      auto scales = [&](int64_t at) {
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i*>(blk + at)))), _mm256_loadu_ps(head + h * 8));
      };
      const __m256 ds[2] = {scales(Q6_SCALES + h * 8), scales(Q6_SCALES + TILE + h * 8)};
      const int8_t* xg = a.q + g * GROUP;
      const float* dg = a.d + g;
      asm volatile("" : "+r"(xg), "+r"(dg));   // fresh pointers per half: see q4_tile_avx2's comment
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xg + r * a.K;
        const __m256 step = _mm256_set1_ps(dg[r * a.G]);
        #pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
          // int16 lanes: a product pair <= 2*63*127, two pairs <= 32004: no saturation; then int32.
          auto pair = [&](int v) {
            return _mm256_add_epi16(_mm256_maddubs_epi16(c[v], _mm256_set1_epi32(load4(x + 4 * v))),
                                    _mm256_maddubs_epi16(c[v + 1], _mm256_set1_epi32(load4(x + 4 * v + 4))));
          };
          __m256i t = _mm256_add_epi32(_mm256_madd_epi16(pair(4 * half), ones), _mm256_madd_epi16(pair(4 * half + 2), ones));
          t = _mm256_sub_epi32(t, _mm256_set1_epi32(32 * a.s16[r * 2 * a.G + 2 * g + half]));
          acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_mul_ps(ds[half], step), acc[r][h]);
        }
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(y + r * ldy, acc[r][0]);
    _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
  }
}
#pragma GCC pop_options

}  // namespace

SPECVIZ_TILE_TABLES(avx2)

}  // namespace specviz_q4a8
