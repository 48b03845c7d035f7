// What the q4a8 files share: the packed layouts' constants, a pass's rows, where a group's codes start, the
// read-ahead, and the tables of tiles. The tiles per instruction set (q4a8_scalar.cpp, q4a8_avx2.cpp, q4a8_vnni.cpp),
// the activations' quantizer (q4a8_quantize.cpp) and the epilogue (q4a8_epilogue.cpp) are files of their own without
// PyTorch's headers, so they compile in parallel (PyTorch's extension builder runs one compiler per file) and fast;
// q4a8.cpp runs them over tensors. Same code, same flags, so the same bits.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu_features.h"

namespace specviz_q4a8 {

constexpr int64_t TILE = 16;                  // output columns per tile: one zmm of fp32
constexpr int64_t GROUP = 32;                 // inputs per block (the weights' group, the activations' block)
constexpr int64_t ROWS = 8;                   // rows per pass over a weight tile
constexpr int64_t Q4_CODES = TILE * GROUP / 2;           // 256 bytes of packed codes per (tile, group)
constexpr int64_t Q4_BLOCK = Q4_CODES + 2 * TILE * 4;    // + 16 fp32 scales + 16 fp32 minimums
constexpr int64_t Q8_BLOCK = TILE * GROUP;               // 512 bytes of biased int8 weights per (tile, group)
constexpr int64_t SUPER = 8;                             // groups per Q4_K super-block (256 inputs)
constexpr int64_t K4_GROUP = Q4_CODES + 2 * TILE;        // 288: codes + 16 sub-scales + 16 sub-minimums (uint8)
constexpr int64_t K4_HEAD = 2 * TILE * 4;                // 128: 16 fp32 d, then 16 fp32 -dmin per super-block
constexpr int64_t K4_BLOCK = K4_HEAD + SUPER * K4_GROUP;  // 2432 bytes per (tile, super-block)
constexpr int64_t H4_BLOCK = Q4_CODES + 2 * TILE * 2;    // 320: codes + 16 fp16 scales + 16 fp16 minimums
// Q6_K's own values (q6k): per (tile, group) the codes' low 4 bits (as q4's codes), their high 2 bits, the int8
// sub-scales of inputs 0-15 and 16-31; per (tile, super-block) 16 fp32 d first (q4a8_layout.pack_q6k).
constexpr int64_t Q6_HIGH = Q4_CODES;                    // 256: where the high bits start
constexpr int64_t Q6_SCALES = Q6_HIGH + TILE * GROUP / 4;  // 384: where the sub-scales start
constexpr int64_t Q6_GROUP = Q6_SCALES + 2 * TILE;         // 416 bytes per (tile, group)
constexpr int64_t K6_HEAD = TILE * 4;                      // 16 fp32 d per (tile, super-block)
constexpr int64_t K6_BLOCK = K6_HEAD + SUPER * Q6_GROUP;   // 3392 bytes per (tile, super-block)

// Software prefetch this many bytes ahead of the block being multiplied. With 4+ rows the
// products take long enough per block that the hardware prefetcher falls behind and the loads stall:
// on the 2-core Zen 4 VM a verify of 4 rows went from 1.75x to 1.46x one token, 8 rows from 2.45x to
// 2.05x, one row unchanged (scripts/q4_kernel_bench.py --cold 8; forward_costs of the packaged target).
// A prefetch changes no arithmetic, so row invariance is untouched. With one row it costs: the hardware
// prefetcher keeps up alone, and the extra loads held a one-row product of the target's largest shape, cold, at
// 22-23 GB/s against 29-30 without them, the speed of a plain streaming sum over the same bytes (a scratch C++
// bench, 400 MB of q4k tiles, 2 threads, Zen 4; 3 rows: 21-25 GB/s with, 18-20 without). Two rows gain from it in
// the whole model: the target's 2-row forward (a verify of one draft, common under the adaptive stop) took 0.82 and
// 0.92 of its time without read-ahead, one-token steps and 3+ rows unchanged (the q6k head, with more arithmetic
// per byte, fell behind most). So 2+ rows there.
// On the 2-core Zen 3 VM (AVX2) one row wants it too: the target's products in the model's order took 0.85 of their
// time with read-ahead at one row, the draft's 0.93. The two CPU kinds want opposite settings, so one
// row's read-ahead is a setting chosen by measurement at load (read_ahead.py, choose): `set_prefetch_rows`.
// 2+ rows always read ahead. Each tile comes in two variants at one row (PF false/true); the tables hold the
// variant per row count, and avx2_one_row / vnni_one_row the one-row tiles with read-ahead.
constexpr int64_t PREFETCH_AHEAD = 4096;

template <int LINES>
inline void prefetch_ahead(const uint8_t* p) {
  #pragma GCC unroll 8
  for (int l = 0; l < LINES; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + PREFETCH_AHEAD + 64 * l), _MM_HINT_T0);
}

using specviz::Isa;   // cpu_features.h: the process's choice
using specviz::SCALAR;
using specviz::AVX2;
using specviz::AVX512VNNI;
enum Kind : int { Q4 = 0, Q8 = 1, Q4K = 2, Q4H = 3, Q6K = 4 };

// Where group g's codes start (a 4-bit kind), and (q4k) its super-block's d and -dmin.
template <int KIND>
inline const uint8_t* q4_codes(const uint8_t* w, int64_t g) {
  if (KIND == Q4K) return w + (g / SUPER) * K4_BLOCK + K4_HEAD + (g % SUPER) * K4_GROUP;
  return w + g * (KIND == Q4H ? H4_BLOCK : Q4_BLOCK);
}
inline const float* k4_head(const uint8_t* w, int64_t g) {
  return reinterpret_cast<const float*>(w + (g / SUPER) * K4_BLOCK);
}


struct Rows {          // one pass's rows: quantized activations and their per-block factors
  const int8_t* q;     // [rows, K]
  const float* d;      // [rows, G]
  const float* m;      // [rows, G]
  const int32_t* s;    // [rows, G] sum of the block's int8 values
  const int32_t* s16;  // [rows, 2G] sums of its two halves of 16 (q6k)
  int64_t K, G;
};

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline const uint8_t* q6_group(const uint8_t* w, int64_t g) { return w + (g / SUPER) * K6_BLOCK + K6_HEAD + (g % SUPER) * Q6_GROUP; }
inline const float* q6_head(const uint8_t* w, int64_t g) { return reinterpret_cast<const float*>(w + (g / SUPER) * K6_BLOCK); }

// One tile: 16 outputs of a weight tile for a pass's rows (the row count is the template's; the tables index by it).
using TileFn = void (*)(const uint8_t*, const Rows&, float*, int64_t);

// Per row and block of 32: the int8 values, step, step * sum and sum (q4a8_quantize.cpp).
void quantize_rows(const float* x, int64_t M, int64_t K, int8_t* q, float* d, float* m, int32_t* s, bool avx2);

// The tiles per row count (entry 0 unused, 1..ROWS) for a kind, and the one-row tile with read-ahead
// (prefetch_rows 1), per instruction set: each in its own file (q4a8_scalar.cpp, q4a8_avx2.cpp, q4a8_vnni.cpp), the
// portable tiles the reference the others agree with bit for bit (they take the read-ahead variant and ignore it).
const TileFn* scalar_tiles(Kind kind);
TileFn scalar_one_row(Kind kind);
const TileFn* avx2_tiles(Kind kind);
TileFn avx2_one_row(Kind kind);
const TileFn* vnni_tiles(Kind kind);
TileFn vnni_one_row(Kind kind);

// Both accessors for an instruction set, each tile file's last lines (the portable file's too): its q4_tile_<isa>,
// q8_tile_<isa> and q6k_tile_<isa> per kind in Kind's order (Q4, Q8, Q4K, Q4H, Q6K), at 1..ROWS rows, and at one row
// with read-ahead.
#define SPECVIZ_ROWS(fn, ...) fn<1 __VA_ARGS__>, fn<2 __VA_ARGS__>, fn<3 __VA_ARGS__>, fn<4 __VA_ARGS__>,          \
                              fn<5 __VA_ARGS__>, fn<6 __VA_ARGS__>, fn<7 __VA_ARGS__>, fn<8 __VA_ARGS__>
#define SPECVIZ_TILE_TABLES(isa)                                                                                  \
  const TileFn* isa##_tiles(Kind kind) {                                                                         \
    static const TileFn tables[5][ROWS + 1] = {                                                                  \
        {nullptr, SPECVIZ_ROWS(q4_tile_##isa, , Q4)}, {nullptr, SPECVIZ_ROWS(q8_tile_##isa)},                     \
        {nullptr, SPECVIZ_ROWS(q4_tile_##isa, , Q4K)}, {nullptr, SPECVIZ_ROWS(q4_tile_##isa, , Q4H)},             \
        {nullptr, SPECVIZ_ROWS(q6k_tile_##isa)}};                                                                 \
    return tables[kind];                                                                                          \
  }                                                                                                               \
  TileFn isa##_one_row(Kind kind) {                                                                              \
    static const TileFn one_row[5] = {q4_tile_##isa<1, Q4, true>, q8_tile_##isa<1, true>,                         \
                                      q4_tile_##isa<1, Q4K, true>, q4_tile_##isa<1, Q4H, true>,                   \
                                      q6k_tile_##isa<1, true>};                                                   \
    return one_row[kind];                                                                                         \
  }

}  // namespace specviz_q4a8
