// One-query attention for CPUs: every query row on its own, over exactly the keys it may see.
//
// Why this exists: a verify must compute each of its K+1 rows exactly as the one-token step at that
// position does (specviz/runtime/attention.py). With PyTorch's SDPA that meant K+1 SDPA calls per layer,
// each ~130-550 us on 2 cores for a few hundred keys in bf16 (the flash kernel's set-up and its bf16 path
// dominate such a small problem): a verify of 8 rows spent ~30 ms of its ~145 ms in attention. Here one
// call takes every row of a layer, and each (row, head) is one fixed sequence of fp32 operations whatever
// the number of rows or threads, so a verify row is bit for bit the one-token step's row by construction.
//
// Per (row r, query head h), kv head h / (H / Hkv), keys j of row r in order:
//   s_j = dot(q, k_j) * scale        (fp32; 8 lanes, lane-wise fma over D/8 chunks, then a fixed pairwise sum)
//   p_j = exp(s_j - max s)           (std::exp), sum = p_0 + p_1 + ... in j order
//   out = (sum_j p_j * v_j) / sum    (lane-wise fma in j order)
// Inputs in fp32 or bf16 (bf16 -> fp32 is exact); the output is fp32 [rows, H, D]: the caller rounds it to
// the model's dtype with PyTorch's own conversion. Build with -ffp-contract=off (q4a8.CFLAGS).
// ATen's tensor, empty and parallel_for only (aten.h; torch/types.h and pybind11 stay in bindings.cpp).
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aten.h"
#include "cpu_features.h"
#include "ops.h"

namespace specviz {
namespace {

constexpr int64_t LANES = 8;

// The fixed sum of a dot product's 8 lanes, the same in every path.
inline float lanes_sum(const float* lane) {
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

template <typename T>
inline float as_float(T v) { return float(v); }
template <>
inline float as_float<at::BFloat16>(at::BFloat16 v) { return float(v); }

// One (row, head): q [D] fp32, keys/values rows of `kv` (T) at the given indices, out [D] fp32.
template <typename T>
void one_head(const float* q, const T* k, const T* v, int64_t stride, const int64_t* keys, int64_t n, int64_t D,
              float scale, float* out, std::vector<float>& s, std::vector<float>& row) {
  s.resize(n);
  row.resize(D);
  float top = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const T* kj = k + keys[j] * stride;
    for (int64_t d = 0; d < D; ++d) row[d] = as_float(kj[d]);
    float lane[LANES] = {0};
    for (int64_t c = 0; c < D; c += LANES)
      for (int64_t l = 0; l < LANES; ++l) lane[l] = std::fma(q[c + l], row[c + l], lane[l]);
    s[j] = lanes_sum(lane) * scale;
    top = std::max(top, s[j]);
  }
  float total = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - top);
    total += s[j];
  }
  for (int64_t d = 0; d < D; ++d) out[d] = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    const T* vj = v + keys[j] * stride;
    const float p = s[j];
    for (int64_t d = 0; d < D; ++d) out[d] = std::fma(p, as_float(vj[d]), out[d]);
  }
  for (int64_t d = 0; d < D; ++d) out[d] = out[d] / total;
}

// AVX2 + FMA: the same operations, 8 lanes at a time (lane l of a chunk is element c + l, as above).
inline __attribute__((target("avx2,fma"))) __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __attribute__((target("avx2,fma"))) __m256 load8(const at::BFloat16* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// The dot of q with one key: lane-wise fma over the chunks, then the fixed sum of the lanes.
inline __attribute__((target("avx2,fma"))) float lane_sum(__m256 acc) {
  alignas(32) float lane[LANES];
  _mm256_store_ps(lane, acc);
  return lanes_sum(lane);
}

template <typename T>
__attribute__((target("avx2,fma")))
void one_head_avx2(const float* q, const T* k, const T* v, int64_t stride, const int64_t* keys, int64_t n, int64_t D,
                   float scale, float* out, std::vector<float>& s, std::vector<float>&) {
  s.resize(n);
  float top = -INFINITY;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {   // four keys at once: four independent chains (each key's sum is unchanged)
    const T* k0 = k + keys[j] * stride; const T* k1 = k + keys[j + 1] * stride;
    const T* k2 = k + keys[j + 2] * stride; const T* k3 = k + keys[j + 3] * stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t c = 0; c < D; c += LANES) {
      const __m256 qc = _mm256_loadu_ps(q + c);
      a0 = _mm256_fmadd_ps(qc, load8(k0 + c), a0);
      a1 = _mm256_fmadd_ps(qc, load8(k1 + c), a1);
      a2 = _mm256_fmadd_ps(qc, load8(k2 + c), a2);
      a3 = _mm256_fmadd_ps(qc, load8(k3 + c), a3);
    }
    s[j] = lane_sum(a0) * scale; s[j + 1] = lane_sum(a1) * scale;
    s[j + 2] = lane_sum(a2) * scale; s[j + 3] = lane_sum(a3) * scale;
  }
  for (; j < n; ++j) {
    const T* kj = k + keys[j] * stride;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t c = 0; c < D; c += LANES) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), load8(kj + c), acc);
    s[j] = lane_sum(acc) * scale;
  }
  for (j = 0; j < n; ++j) top = std::max(top, s[j]);
  float total = 0.f;
  for (j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - top);
    total += s[j];
  }
  const __m256 div = _mm256_set1_ps(total);
  int64_t c = 0;
  for (; c + 8 * LANES <= D; c += 8 * LANES) {   // 64 outputs at once: eight chains, each lane still in j order
    __m256 acc[8];
    #pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) acc[u] = _mm256_setzero_ps();
    for (j = 0; j < n; ++j) {
      const __m256 p = _mm256_set1_ps(s[j]);
      const T* vj = v + keys[j] * stride + c;
      #pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(p, load8(vj + u * LANES), acc[u]);
    }
    #pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(out + c + u * LANES, _mm256_div_ps(acc[u], div));
  }
  for (; c < D; c += LANES) {
    __m256 acc = _mm256_setzero_ps();
    for (j = 0; j < n; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), load8(v + keys[j] * stride + c), acc);
    _mm256_storeu_ps(out + c, _mm256_div_ps(acc, div));
  }
}

template <typename T>
void run(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const int64_t* keys,
         const int64_t* offsets, float scale, bool avx2, float* out) {
  const int64_t R = q.size(0), H = q.size(1), D = q.size(2), Hkv = k.size(0), group = H / Hkv;
  const float* qp = q.data_ptr<float>();
  const T* kp = k.data_ptr<T>();
  const T* vp = v.data_ptr<T>();
  // Multiply-adds of the scores: threads only where they pay (2-core Zen 4: from ~2^14, e.g. one row of the 0.5B
  // draft over 24 keys, 5.6 us against 6.8 serial; 13.7 against 23.4 us over 150 keys).
  const int64_t work = offsets[R] * H * D;
  at::parallel_for(0, R * H, work > (1 << 14) ? 1 : R * H, [&](int64_t t0, int64_t t1) {
    std::vector<float> s, row;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / H, h = t % H, g = h / group;
      const int64_t* idx = keys + offsets[r];
      const int64_t n = offsets[r + 1] - offsets[r];
      const T* kh = kp + g * k.stride(0);   // a head's positions are contiguous; the heads need not be adjacent
      const T* vh = vp + g * v.stride(0);
      (avx2 ? one_head_avx2<T> : one_head<T>)(qp + (r * H + h) * D, kh, vh, D, idx, n, D, scale,
                                              out + (r * H + h) * D, s, row);
    }
  });
}

}  // namespace

// q [R, H, D] fp32 contiguous; k, v [Hkv, kv, D] fp32 or bf16 (each head's kv x D contiguous); keys int64 (every row's key
// indices, concatenated), offsets int64 [R + 1] -> fp32 [R, H, D]. The AVX2 build under every choice but scalar.
at::Tensor one_query_attention(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor keys, at::Tensor offsets,
                               double scale) {
  const bool avx2 = avx2_build(isa());   // read once: every (row, head) of the call on one build
  TORCH_CHECK(q.dim() == 3 && q.scalar_type() == at::kFloat && q.is_contiguous(), "attention: q fp32 [R, H, D]");
  TORCH_CHECK(k.dim() == 3 && v.sizes() == k.sizes() && k.scalar_type() == v.scalar_type() && k.stride(2) == 1 &&
              v.stride(2) == 1 && k.stride(1) == k.size(2) && v.stride(1) == v.size(2),
              "attention: k and v [Hkv, kv, D] of one dtype, each head's positions contiguous");
  TORCH_CHECK(k.scalar_type() == at::kFloat || k.scalar_type() == at::kBFloat16, "attention: fp32 or bf16");
  const int64_t R = q.size(0), H = q.size(1), D = q.size(2);
  TORCH_CHECK(k.size(2) == D && D % LANES == 0 && H % k.size(0) == 0, "attention: head sizes do not match");
  TORCH_CHECK(keys.scalar_type() == at::kLong && offsets.scalar_type() == at::kLong &&
              offsets.numel() == R + 1 && keys.is_contiguous() && offsets.is_contiguous(), "attention: key lists");
  const int64_t* kp = keys.data_ptr<int64_t>();
  const int64_t* op = offsets.data_ptr<int64_t>();
  TORCH_CHECK(op[0] == 0 && op[R] == keys.numel(), "attention: offsets do not cover the keys");
  for (int64_t r = 0; r < R; ++r) TORCH_CHECK(op[r + 1] > op[r], "attention: every row sees at least one key");
  for (int64_t i = 0; i < keys.numel(); ++i) TORCH_CHECK(kp[i] >= 0 && kp[i] < k.size(1), "attention: key out of range");
  auto out = aten::empty({R, H, D}, at::kFloat);
  if (k.scalar_type() == at::kFloat)
    run<float>(q, k, v, kp, op, float(scale), avx2, out.data_ptr<float>());
  else
    run<at::BFloat16>(q, k, v, kp, op, float(scale), avx2, out.data_ptr<float>());
  return out;
}

}  // namespace specviz
