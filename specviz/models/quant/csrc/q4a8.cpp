// Weight-only 4-bit (and int8) linear for CPUs with int8 activations: specviz's "q4a8" kernels.
//
// Why this exists (issue 29): PyTorch's 4-bit CPU product blocks rows by 4 and turns every code
// into an fp32 weight per block of rows, so 5-8 rows cost two passes and one row is arithmetic-
// bound. Here each weight tile is unpacked once and multiplied, as int8, by every row's int8
// activations (AVX2 vpmaddubsw/vpmaddwd, AVX-512 VNNI vpdpbusd): a verify of up to 8 rows reads
// and unpacks the weights once.
//
// Row invariance by construction: the work is split over output tiles only, and every output
// element y[r, o] is the same sequence of operations whatever the number of rows or threads:
//   for g in 0..G-1 (in order):  dot = int32 sum over the block (exact, any order)
//                                acc = fma(float(dot), scale[o,g] * d[r,g], acc)
//                                acc = fma(min[o,g], m[r,g], acc)          (4-bit)
// where d[r,g] is the row's int8 step for block g and m[r,g] = d[r,g] * sum(xq over the block).
// The ISA paths do the same fp32 operations lane by lane, so they agree bit for bit too.
// Build with -ffp-contract=off: the compiler must not fuse or split these operations itself.
//
// Two 4-bit layouts (issue 29, "lever 1"): "q4" keeps an fp32 scale and minimum per (column, group)
// (0.75 B a weight, a third of it scales); "q4k" keeps a GGUF Q4_K tensor's own scales: 6-bit
// sub-scale sc and sub-minimum m per (column, group) as bytes, and fp32 d and -dmin per (column,
// super-block of 256 inputs) (0.59 B a weight). The kernel forms scale = float(sc) * d and
// min = float(m) * (-dmin): each product is exact in fp32 (an fp16 value times a 6-bit integer
// needs 17 bits), so "q4k" computes the very same fp32 sequence as "q4" holding those values.
// A third, "q4h", keeps the scale and minimum per (column, group) as fp16 (0.625 B a weight): for layers whose
// width is no multiple of a Q4_K super-block (the 0.5B draft's 896) and whose grid is ours to choose (a draft
// requantized to 4 bits). fp16 -> fp32 is exact, so again the fixed sequence of "q4" holding those values.
// PyTorch's tensor types and pybind11's casters for them: torch/extension.h (the whole C++ frontend) made the
// build of the four files 146 s on the 2-core Zen 1, 85 s now with the tiles in files of their own (session 46).
#include <torch/csrc/utils/pybind.h>
#include <torch/types.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "q4a8.h"

namespace {

using namespace specviz_q4a8;

// Read ahead from this many rows: see PREFETCH_AHEAD in q4a8.h.
std::atomic<int> prefetch_rows{2};   // 1: one row reads ahead too; 2: from two rows (the default)

// ---------------------------------------------------------------- portable (any x86-64, the reference)
template <int KIND>
void q4_tile_scalar(const uint8_t* w, const Rows& a, int64_t mr, float* y, int64_t ldy) {
  for (int64_t r = 0; r < mr; ++r) {
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

void q8_tile_scalar(const uint8_t* w, const Rows& a, int64_t mr, float* y, int64_t ldy) {
  for (int64_t r = 0; r < mr; ++r) {
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
// acc = fma(float(idot), (float(sc) * d) * step, acc). The ISA paths below do the same fp32 operations.

void q6k_tile_scalar(const uint8_t* w, const Rows& a, int64_t mr, float* y, int64_t ldy) {
  for (int64_t r = 0; r < mr; ++r) {
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

bool cpu_has(int64_t isa) {
  __builtin_cpu_init();
  if (isa == AVX512VNNI)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("fma");
  if (isa == AVX2)   // f16c: the q4h layout's fp16 scales (every AVX2 CPU has it)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return isa == SCALAR;
}

bool isa_supported(int64_t isa) {
  static const bool have[3] = {cpu_has(SCALAR), cpu_has(AVX2), cpu_has(AVX512VNNI)};
  return isa >= 0 && isa <= 2 && have[isa];
}

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

std::vector<torch::Tensor> quantize(torch::Tensor x, int64_t isa) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "quantize: a 2-D fp32 tensor");
  x = x.contiguous();
  const int64_t M = x.size(0), K = x.size(1);
  TORCH_CHECK(K % GROUP == 0, "quantize: width must be a multiple of 32");
  auto q = torch::empty({M, K}, torch::kInt8);
  auto d = torch::empty({M, K / GROUP}, torch::kFloat32);
  auto m = torch::empty({M, K / GROUP}, torch::kFloat32);
  auto s = torch::empty({M, K / GROUP}, torch::kInt32);
  TORCH_CHECK(isa_supported(isa), "quantize: this CPU lacks the requested instruction set");
  quantize_rows(x.data_ptr<float>(), M, K, q.data_ptr<int8_t>(), d.data_ptr<float>(), m.data_ptr<float>(),
                s.data_ptr<int32_t>(), isa != SCALAR);
  return {q, d, m, s};
}

const TileFn* tile_table(int64_t isa, Kind kind) { return isa == AVX2 ? avx2_tiles(kind) : vnni_tiles(kind); }

using ScalarFn = void (*)(const uint8_t*, const Rows&, int64_t, float*, int64_t);
ScalarFn scalar_tile(Kind kind) {
  switch (kind) {
    case Q4: return q4_tile_scalar<Q4>;
    case Q4K: return q4_tile_scalar<Q4K>;
    case Q4H: return q4_tile_scalar<Q4H>;
    case Q6K: return q6k_tile_scalar;
    default: return q8_tile_scalar;
  }
}

// What `linear` does after the product, per output element, exactly as the ATen ops it replaces do it: keep the
// first n columns, [times the per-output scale (fp32 arithmetic: a bf16 scale promotes exactly),] to the output's
// dtype (bf16: round to nearest even, c10::BFloat16's and ATen's conversion), [plus the bias in that dtype (bf16:
// the sum of the two values as floats, rounded once, as ATen's bf16 add)]. Fused into the tile loop: no ATen call,
// no fp32 copy of the whole output (issue 29: the five ops cost a small layer 6-15 us a call on the 2-core Zen 4).
struct Epilogue {
  int64_t n = 0;
  const float* scales_f = nullptr;
  const at::BFloat16* scales_b = nullptr;
  const float* bias_f = nullptr;            // bias already in the output's dtype
  const at::BFloat16* bias_b = nullptr;
  float* out_f = nullptr;                   // exactly one of the two outputs
  at::BFloat16* out_b = nullptr;
  void (*fn)(const Epilogue&, const float*, int64_t, int64_t, int64_t, int64_t) = nullptr;

  void apply(const float* y, int64_t ldy, int64_t r0, int64_t mr, int64_t c0) const {
    fn(*this, y, ldy, r0, mr, c0);
  }
};

// fp32 -> bf16, round to nearest even (c10::BFloat16's rounding; NaN kept a NaN), branch-free for the vectorizer.
inline uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return v != v ? uint16_t(0x7FC0) : uint16_t(rounded);
}

inline float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

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
      if (SCALES == 2) v[c] = v[c] * float(e.scales_b[c0 + c]);
    }
    const int64_t at = (r0 + r) * e.n + c0;
    if (BF16) {
      uint16_t* out = reinterpret_cast<uint16_t*>(e.out_b + at);
      const uint16_t* bias = reinterpret_cast<const uint16_t*>(e.bias_b + c0);
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
void pick_epilogue(Epilogue& e, bool avx2) {
  const bool bf16 = e.out_b != nullptr, bias = e.bias_f != nullptr || e.bias_b != nullptr;
  if (avx2)
    e.fn = bf16 ? (bias ? epilogue_avx2<SCALES, true, true> : epilogue_avx2<SCALES, true, false>)
                : (bias ? epilogue_avx2<SCALES, false, true> : epilogue_avx2<SCALES, false, false>);
  else
    e.fn = bf16 ? (bias ? epilogue<SCALES, true, true> : epilogue<SCALES, true, false>)
                : (bias ? epilogue<SCALES, false, true> : epilogue<SCALES, false, false>);
}

// The product over tiles: into y[M, tiles*16] (fp32) or, with an epilogue, straight into its output.
void product(const float* x, int64_t M, int64_t K, const torch::Tensor& packed, int64_t isa, Kind kind, float* y,
             const Epilogue* ep) {
  const int64_t G = K / GROUP, tiles = packed.size(0);
  const int64_t block = kind == Q4 ? Q4_BLOCK : kind == Q4K ? K4_BLOCK : kind == Q4H ? H4_BLOCK
                       : kind == Q6K ? K6_BLOCK : Q8_BLOCK;
  const bool super = kind == Q4K || kind == Q6K;
  const int64_t blocks = super ? G / SUPER : G;   // per tile
  TORCH_CHECK(K % GROUP == 0 && (!super || G % SUPER == 0) && packed.size(1) == blocks &&
              packed.size(2) == block, "q4a8: shapes do not match");
  std::vector<int8_t> q(M * K);
  std::vector<float> d(M * G), m(M * G);
  std::vector<int32_t> s(M * G);
  quantize_rows(x, M, K, q.data(), d.data(), m.data(), s.data(), isa != SCALAR);
  std::vector<int32_t> s16(kind == Q6K ? 2 * M * G : 0);   // q6k: the sums of each half of 16
  for (int64_t i = 0; i < int64_t(s16.size()); ++i) {
    int32_t sum = 0;
    for (int64_t j = 0; j < 16; ++j) sum += q[16 * i + j];
    s16[i] = sum;
  }
  const uint8_t* wp = packed.data_ptr<uint8_t>();
  const int64_t ldy = tiles * TILE;
  // The tile per row count, read once a product: a setting changed between products never splits one.
  TileFn tiles_for[ROWS + 1] = {nullptr};
  if (isa != SCALAR) {
    std::copy_n(tile_table(isa, kind), ROWS + 1, tiles_for);
    if (prefetch_rows.load(std::memory_order_relaxed) == 1) tiles_for[1] = isa == AVX2 ? avx2_one_row(kind) : vnni_one_row(kind);
  }
  // Output tiles only: which thread runs a tile never changes what it computes.
  at::parallel_for(0, tiles, 1, [&](int64_t t0, int64_t t1) {
    float local[ROWS * TILE];
    for (int64_t t = t0; t < t1; ++t) {
      const uint8_t* w = wp + t * blocks * block;
      for (int64_t r0 = 0; r0 < M; r0 += ROWS) {
        const int64_t mr = std::min(ROWS, M - r0);
        Rows a{q.data() + r0 * K, d.data() + r0 * G, m.data() + r0 * G, s.data() + r0 * G,
               s16.empty() ? nullptr : s16.data() + r0 * 2 * G, K, G};
        float* out = ep ? local : y + r0 * ldy + t * TILE;
        const int64_t ld = ep ? TILE : ldy;
        if (isa == SCALAR)
          scalar_tile(kind)(w, a, mr, out, ld);
        else
          tiles_for[mr](w, a, out, ld);
        if (ep && t * TILE < ep->n) ep->apply(local, TILE, r0, mr, t * TILE);
      }
    }
  });
}

void check_packed(const torch::Tensor& packed, int64_t isa) {
  TORCH_CHECK(packed.dim() == 3 && packed.scalar_type() == torch::kUInt8 && packed.is_contiguous(),
              "q4a8: packed weights must be contiguous uint8 [tiles, groups, block]");
  TORCH_CHECK(isa_supported(isa), "q4a8: this CPU lacks the requested instruction set");
}

// y[M, tiles*16] = x[M, K] times the packed weights, 4-bit (q4: [tiles, G, 384], q4k: [tiles, G/8, 2432], q4h:
// [tiles, G, 320]) or int8 ([tiles, G, 512]), all uint8.
torch::Tensor matmul(torch::Tensor x, torch::Tensor packed, int64_t isa, Kind kind) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "q4a8: x must be 2-D fp32");
  check_packed(packed, isa);
  x = x.contiguous();
  auto y = torch::empty({x.size(0), packed.size(0) * TILE}, torch::kFloat32);
  product(x.data_ptr<float>(), x.size(0), x.size(1), packed, isa, kind, y.data_ptr<float>(), nullptr);
  return y;
}

torch::Tensor q4_matmul(torch::Tensor x, torch::Tensor packed, int64_t isa) { return matmul(x, packed, isa, Q4); }
torch::Tensor q4k_matmul(torch::Tensor x, torch::Tensor packed, int64_t isa) { return matmul(x, packed, isa, Q4K); }
torch::Tensor q8_matmul(torch::Tensor x, torch::Tensor packed, int64_t isa) { return matmul(x, packed, isa, Q8); }
torch::Tensor q4h_matmul(torch::Tensor x, torch::Tensor packed, int64_t isa) { return matmul(x, packed, isa, Q4H); }

// The whole layer as the Python module spelled it, op for op (so bit for bit the same result), in one call: x to
// fp32 (exact), the product, its first n columns, [times the per-output scales,] back to x's dtype, [plus the bias]
// (issue 29: one Python call a product instead of five, then the epilogue fused into the tiles).
torch::Tensor linear(torch::Tensor x, torch::Tensor packed, int64_t n, c10::optional<torch::Tensor> scales,
                     c10::optional<torch::Tensor> bias, int64_t isa, int64_t kind) {
  TORCH_CHECK(kind >= Q4 && kind <= Q6K, "q4a8: unknown kind");
  TORCH_CHECK(x.dim() == 2 && (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16),
              "q4a8: x must be 2-D fp32 or bf16");
  check_packed(packed, isa);
  TORCH_CHECK(n >= 1 && n <= packed.size(0) * TILE, "q4a8: n must be within the packed outputs");
  const auto dtype = x.scalar_type();
  // x as fp32 (bf16 -> fp32 is exact), into a plain buffer rather than an ATen copy: ~3 us a call saved.
  const auto xc = x.contiguous();
  const int64_t rows = xc.size(0), width = xc.size(1);
  std::vector<float> widened;
  const float* xf = nullptr;
  if (dtype == torch::kFloat32) {
    xf = xc.data_ptr<float>();
  } else {
    widened.resize(rows * width);
    const uint16_t* bits = reinterpret_cast<const uint16_t*>(xc.data_ptr<at::BFloat16>());
    for (int64_t i = 0; i < rows * width; ++i) widened[i] = bf16_value(bits[i]);
    xf = widened.data();
  }
  auto out = torch::empty({x.size(0), n}, x.options().dtype(dtype));
  Epilogue ep;
  ep.n = n;
  torch::Tensor sc, b;   // kept alive through the product
  if (scales.has_value()) {
    sc = scales->scalar_type() == torch::kBFloat16 ? scales->contiguous() : scales->to(torch::kFloat32).contiguous();
    TORCH_CHECK(sc.dim() == 1 && sc.size(0) >= n, "q4a8: one scale per output");
    if (sc.scalar_type() == torch::kBFloat16) ep.scales_b = sc.data_ptr<at::BFloat16>(); else ep.scales_f = sc.data_ptr<float>();
  }
  if (bias.has_value()) {
    b = bias->to(dtype).contiguous();
    TORCH_CHECK(b.dim() == 1 && b.size(0) >= n, "q4a8: one bias per output");
    if (dtype == torch::kBFloat16) ep.bias_b = b.data_ptr<at::BFloat16>(); else ep.bias_f = b.data_ptr<float>();
  }
  if (dtype == torch::kBFloat16) ep.out_b = out.data_ptr<at::BFloat16>(); else ep.out_f = out.data_ptr<float>();
  const bool avx2 = isa != SCALAR;
  if (ep.scales_f) pick_epilogue<1>(ep, avx2); else if (ep.scales_b) pick_epilogue<2>(ep, avx2); else pick_epilogue<0>(ep, avx2);
  product(xf, rows, width, packed, isa, static_cast<Kind>(kind), nullptr, &ep);
  return out;
}

int64_t threads() { return at::get_num_threads(); }

// Read ahead from this many rows (1 or 2): changes no arithmetic, only when the weights arrive (see prefetch_rows).
void set_prefetch_rows(int64_t rows) {
  TORCH_CHECK(rows == 1 || rows == 2, "q4a8: read-ahead from 1 or 2 rows");
  prefetch_rows.store(int(rows));
}
int64_t get_prefetch_rows() { return prefetch_rows.load(); }

}  // namespace

namespace specviz {   // csrc/attention.cpp, csrc/lean_ops.cpp and csrc/lean_stack.cpp, built into the same extension
torch::Tensor q4_linear(torch::Tensor x, torch::Tensor packed, int64_t n, c10::optional<torch::Tensor> scales,
                        c10::optional<torch::Tensor> bias, int64_t isa, int64_t kind) {
  return linear(x, packed, n, scales, bias, isa, kind);
}
void bind_lean_stack(pybind11::module& mod);
void bind_gguf_repack(pybind11::module& mod);
torch::Tensor one_query_attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor keys,
                                  torch::Tensor offsets, double scale, int64_t isa);
torch::Tensor lean_rotary(torch::Tensor x, torch::Tensor cos, torch::Tensor sin);
torch::Tensor lean_norm(torch::Tensor x, torch::Tensor weight, double eps);
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> lean_attention_inputs(
    std::vector<torch::Tensor> srcs, std::vector<int64_t> cols, int64_t heads, torch::Tensor cos, torch::Tensor sin,
    torch::Tensor keys, torch::Tensor values);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {
  // The GIL is let go while the kernels run, as PyTorch's own operators do (the app's other threads keep going).
  mod.def("q4_matmul", &q4_matmul, "x[M,K] fp32 times packed 4-bit weights, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q4k_matmul", &q4k_matmul, "x[M,K] fp32 times packed 4-bit weights with Q4_K's own scales, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q4h_matmul", &q4h_matmul, "x[M,K] fp32 times packed 4-bit weights with fp16 scales, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q8_matmul", &q8_matmul, "x[M,K] fp32 times packed int8 weights, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("linear", &linear, "x[M,K] (fp32 or bf16) times packed weights of a kind (0 q4, 1 q8, 2 q4k, 3 q4h): [M,n] in x's "
          "dtype, [times scales,] [plus bias]; 4 q6k", pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("quantize", &quantize, "per row and block of 32: (int8 values, step, step*sum, sum)");
  mod.def("isa_supported", &isa_supported, "whether this CPU runs an instruction set (0 scalar, 1 avx2, 2 avx512vnni)");
  mod.def("one_query_attention", &specviz::one_query_attention,
          "each query row [R,H,D] over its own keys of k, v [Hkv,kv,D]: fp32 [R,H,D] (csrc/attention.cpp)",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("rotary", &specviz::lean_rotary, "x * cos + rotate_half(x) * sin, op for op as ATen (csrc/lean_ops.cpp)");
  mod.def("norm", &specviz::lean_norm, "Qwen2RMSNorm of x [n, W] bit for bit: ATen's sum, the rest one call each side");
  mod.def("attention_inputs", &specviz::lean_attention_inputs,
          "q rotated in fp32 and the cache's keys and values grown, from q, k, v's product outputs (csrc/lean_ops.cpp)");
  specviz::bind_lean_stack(mod);
  specviz::bind_gguf_repack(mod);
  mod.def("threads", &threads, "at::get_num_threads() as the extension sees it");
  mod.def("set_prefetch_rows", &set_prefetch_rows, "read ahead of the weights from 1 or 2 rows (no arithmetic changes)");
  mod.def("prefetch_rows", &get_prefetch_rows, "the rows from which the products read ahead");
}
