// specviz's portable 4-bit and int8 tiles (any x86-64): the reference the AVX2 and AVX-512 VNNI tiles agree with bit
// for bit. The sequence every tile computes, and why it is the same whatever the row count: q4a8.cpp's opening comment.
// c10's Half only (a header of plain C++): the q4h layout's fp16 -> fp32, as the tiles always converted it.
#include <c10/util/Half.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "q4a8.h"

namespace specviz_q4a8 {
namespace {

// MR rows a call (the tables index by it, as the other files' tiles); PF, the read-ahead, is the vectorized tiles'
// own: these take its variant and ignore it.
template <int MR, int KIND, bool PF = false>
void q4_tile_scalar(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  for (int64_t r = 0; r < MR; ++r) {
    float acc[TILE] = {0};
    for (int64_t g = 0; g < a.G; ++g) {
      const uint8_t* blk = q4_codes<KIND>(w, g);
      float sc[TILE], mn[TILE];
      for (int64_t c = 0; c < TILE; ++c) {
        if (KIND == Q4K) {   // exact products: the same values a q4 block would hold
          sc[c] = float(blk[Q4_CODES + c]) * k4_head(w, g)[c];
          mn[c] = float(blk[Q4_CODES + TILE + c]) * k4_head(w, g)[TILE + c];
        } else if (KIND == Q4H) {   // fp16 -> fp32, exact
          c10::Half h[2];
          std::memcpy(&h[0], blk + Q4_CODES + 2 * c, 2);
          std::memcpy(&h[1], blk + Q4_CODES + 2 * (TILE + c), 2);
          sc[c] = float(h[0]);
          mn[c] = float(h[1]);
        } else {
          std::memcpy(&sc[c], blk + Q4_CODES + 4 * c, 4);
          std::memcpy(&mn[c], blk + Q4_CODES + 4 * (TILE + c), 4);
        }
      }
      const int8_t* x = a.q + r * a.K + g * GROUP;
      for (int64_t c = 0; c < TILE; ++c) {
        int32_t dot = 0;
        for (int64_t p = 0; p < 4; ++p)
          for (int64_t i = 0; i < 4; ++i) {
            uint8_t byte = blk[p * 64 + c * 4 + i];
            dot += int32_t(byte & 15) * x[p * 8 + i] + int32_t(byte >> 4) * x[p * 8 + 4 + i];
          }
        float sd = sc[c] * a.d[r * a.G + g];
        acc[c] = std::fma(float(dot), sd, acc[c]);
        acc[c] = std::fma(mn[c], a.m[r * a.G + g], acc[c]);
      }
    }
    std::memcpy(y + r * ldy, acc, sizeof(acc));
  }
}

template <int MR, bool PF = false>
void q8_tile_scalar(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  for (int64_t r = 0; r < MR; ++r) {
    float acc[TILE] = {0};
    for (int64_t g = 0; g < a.G; ++g) {
      const uint8_t* blk = w + g * Q8_BLOCK;
      const int8_t* x = a.q + r * a.K + g * GROUP;
      for (int64_t c = 0; c < TILE; ++c) {
        int32_t dot = 0;
        for (int64_t k = 0; k < 8; ++k)
          for (int64_t i = 0; i < 4; ++i) dot += int32_t(blk[k * 64 + c * 4 + i]) * x[k * 4 + i];
        dot -= 128 * a.s[r * a.G + g];   // the weights are stored +128 (unsigned for vpdpbusd)
        acc[c] = std::fma(float(dot), a.d[r * a.G + g], acc[c]);
      }
    }
    std::memcpy(y + r * ldy, acc, sizeof(acc));
  }
}

// q6k, for each output: per group, per half of 16 inputs in order, idot = sum(code * x) - 32 * sum(x) (exact),
// acc = fma(float(idot), (float(sc) * d) * step, acc). The other files' tiles do the same fp32 operations.

template <int MR, bool PF = false>
void q6k_tile_scalar(const uint8_t* w, const Rows& a, float* y, int64_t ldy) {
  for (int64_t r = 0; r < MR; ++r) {
    float acc[TILE] = {0};
    for (int64_t g = 0; g < a.G; ++g) {
      const uint8_t* blk = q6_group(w, g);
      const int8_t* x = a.q + r * a.K + g * GROUP;
      const float step = a.d[r * a.G + g];
      for (int64_t c = 0; c < TILE; ++c)
        for (int64_t h = 0; h < 2; ++h) {
          int32_t dot = 0;
          for (int64_t v = 4 * h; v < 4 * h + 4; ++v)   // code vector v: inputs 4v..4v+3
            for (int64_t i = 0; i < 4; ++i) {
              const int64_t b = c * 4 + i;
              const uint8_t lo = v % 2 == 0 ? blk[(v / 2) * 64 + b] & 15 : blk[(v / 2) * 64 + b] >> 4;
              const uint8_t hi = (blk[Q6_HIGH + (v / 4) * 64 + b] >> (2 * (v % 4))) & 3;
              dot += int32_t(lo | (hi << 4)) * x[4 * v + i];
            }
          dot -= 32 * a.s16[r * 2 * a.G + 2 * g + h];
          const float ds = float(int8_t(blk[Q6_SCALES + h * TILE + c])) * q6_head(w, g)[c];
          acc[c] = std::fma(float(dot), ds * step, acc[c]);
        }
    }
    std::memcpy(y + r * ldy, acc, sizeof(acc));
  }
}

}  // namespace

SPECVIZ_TILE_TABLES(scalar)

}  // namespace specviz_q4a8
