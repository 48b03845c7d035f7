// The lean layer stack's elementwise tails in one call each (models/lean_forward.py; issue 29).
//
// Why: after the products and the attention moved into this extension, a one-token step of the 0.5B draft still
// spent ~4-5 ms of its ~18 in small ATen operations, a few microseconds each: the rotary embedding is seven of
// them for q and k (~22 us a layer), a norm's tail five. Each op here is elementwise, so it can be spelled exactly
// as ATen computes it, element by element: a bf16 result is the fp32 result rounded to nearest even once per ATen
// op (ATen's reduced-precision arithmetic), an fp32 one is the IEEE operation. The logits stay transformers' bit
// for bit (tests/test_models_lean_forward.py). The norm's mean stays ATen's (a reduction: its order is ATen's).
// Build with -ffp-contract=off (q4a8.CFLAGS): no multiply and add may fuse.
// PyTorch's tensor types only: torch/extension.h (the whole C++ frontend) made this file ~2.5x slower to compile.
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace specviz {
namespace {

// bf16 <-> fp32 as plain integer operations (the vectorizer takes them): round to nearest even, as c10::BFloat16
// and ATen round (a NaN stays a NaN).
inline uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return v != v ? uint16_t(0x7FC0) : uint16_t(rounded);
}
inline float bf16_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// T's storage as seen here: fp32 as is, bf16 as its 16 bits.
template <typename T> struct Io;
template <> struct Io<float> {
  using Raw = float;
  static float load(Raw v) { return v; }
  static Raw store(float v) { return v; }
  static float round(float v) { return v; }   // an fp32 op's result is already fp32
};
template <> struct Io<at::BFloat16> {
  using Raw = uint16_t;
  static float load(Raw v) { return bf16_float(v); }
  static Raw store(float v) { return bf16_bits(v); }
  static float round(float v) { return bf16_float(bf16_bits(v)); }   // the result of one bf16 ATen op
};

// x * cos + rotate_half(x) * sin (transformers' apply_rotary_pos_emb) over rows of D (the last dim contiguous):
// four ATen ops a value: the two products (each rounded to T), then their sum (rounded to T).
template <typename T>
inline __attribute__((always_inline))
void rotary_body(const typename Io<T>::Raw* x, int64_t n, int64_t H, int64_t D, int64_t sr, int64_t sh,
                 const typename Io<T>::Raw* cos, const typename Io<T>::Raw* sin, typename Io<T>::Raw* out) {
  using I = Io<T>;
  const int64_t half = D / 2;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < H; ++h) {
      const auto* row = x + r * sr + h * sh;
      const auto* c = cos + r * D;
      const auto* s = sin + r * D;
      auto* o = out + (r * H + h) * D;
      for (int64_t j = 0; j < half; ++j)
        o[j] = I::store(I::round(I::load(row[j]) * I::load(c[j])) + I::round(-I::load(row[j + half]) * I::load(s[j])));
      for (int64_t j = half; j < D; ++j)
        o[j] = I::store(I::round(I::load(row[j]) * I::load(c[j])) + I::round(I::load(row[j - half]) * I::load(s[j])));
    }
}

// The tail of Qwen2RMSNorm / LlamaRMSNorm after ATen's mean: weight * (h * rsqrt(mean + eps)).to(T), h = x in fp32
// [n, W], mean [n] fp32, weight [W] in T. rsqrt is 1 / sqrt, as ATen computes it on a CPU (scalar and vector).
template <typename T>
inline __attribute__((always_inline))
void rms_tail_body(const float* h, const float* mean, const typename Io<T>::Raw* weight, float eps, int64_t n,
                   int64_t W, typename Io<T>::Raw* out) {
  using I = Io<T>;
  for (int64_t r = 0; r < n; ++r) {
    const float inv = 1.0f / std::sqrt(mean[r] + eps);
    const float* hr = h + r * W;
    auto* o = out + r * W;
    for (int64_t j = 0; j < W; ++j) o[j] = I::store(I::load(weight[j]) * I::round(hr[j] * inv));
  }
}

// Each compiled twice: for any x86-64 and for AVX2 (wider vectors; the same IEEE operations, so the same bits).
template <typename T>
void rotary_plain(const typename Io<T>::Raw* x, int64_t n, int64_t H, int64_t D, int64_t sr, int64_t sh,
                  const typename Io<T>::Raw* cos, const typename Io<T>::Raw* sin, typename Io<T>::Raw* out) {
  rotary_body<T>(x, n, H, D, sr, sh, cos, sin, out);
}
template <typename T>
__attribute__((target("avx2,fma")))
void rotary_avx2(const typename Io<T>::Raw* x, int64_t n, int64_t H, int64_t D, int64_t sr, int64_t sh,
                 const typename Io<T>::Raw* cos, const typename Io<T>::Raw* sin, typename Io<T>::Raw* out) {
  rotary_body<T>(x, n, H, D, sr, sh, cos, sin, out);
}
template <typename T>
void rms_tail_plain(const float* h, const float* mean, const typename Io<T>::Raw* weight, float eps, int64_t n,
                    int64_t W, typename Io<T>::Raw* out) {
  rms_tail_body<T>(h, mean, weight, eps, n, W, out);
}
template <typename T>
__attribute__((target("avx2,fma")))
void rms_tail_avx2(const float* h, const float* mean, const typename Io<T>::Raw* weight, float eps, int64_t n,
                   int64_t W, typename Io<T>::Raw* out) {
  rms_tail_body<T>(h, mean, weight, eps, n, W, out);
}

bool has_avx2() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
}

template <typename T>
const typename Io<T>::Raw* raw(const torch::Tensor& t) {
  return reinterpret_cast<const typename Io<T>::Raw*>(t.data_ptr());
}

template <typename T>
void rotary_of(const torch::Tensor& x, const torch::Tensor& c, const torch::Tensor& s, torch::Tensor& out) {
  auto* o = reinterpret_cast<typename Io<T>::Raw*>(out.data_ptr());
  (has_avx2() ? rotary_avx2<T> : rotary_plain<T>)(raw<T>(x), x.size(0), x.size(1), x.size(2), x.stride(0),
                                                  x.stride(1), raw<T>(c), raw<T>(s), o);
}

torch::Tensor rotary(torch::Tensor x, torch::Tensor cos, torch::Tensor sin) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) % 2 == 0, "rotary: x is [n, heads, D] with an even D");
  TORCH_CHECK(cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type(),
              "rotary: cos and sin in x's dtype");
  if (x.stride(2) != 1) x = x.contiguous();
  const int64_t n = x.size(0), D = x.size(2);
  auto c = cos.reshape({n, D}).contiguous(), s = sin.reshape({n, D}).contiguous();
  auto out = torch::empty({n, x.size(1), D}, x.options());
  if (x.scalar_type() == torch::kBFloat16)
    rotary_of<at::BFloat16>(x, c, s, out);
  else if (x.scalar_type() == torch::kFloat32)
    rotary_of<float>(x, c, s, out);
  else
    TORCH_CHECK(false, "rotary: fp32 or bf16");
  return out;
}

template <typename T>
void rms_tail_of(const torch::Tensor& h, const torch::Tensor& mean, const torch::Tensor& weight, double eps,
                 torch::Tensor& out) {
  auto* o = reinterpret_cast<typename Io<T>::Raw*>(out.data_ptr());
  (has_avx2() ? rms_tail_avx2<T> : rms_tail_plain<T>)(h.data_ptr<float>(), mean.data_ptr<float>(), raw<T>(weight),
                                                      float(eps), h.size(0), h.size(1), o);
}

torch::Tensor rms_tail(torch::Tensor h, torch::Tensor mean, torch::Tensor weight, double eps) {
  TORCH_CHECK(h.dim() == 2 && h.scalar_type() == torch::kFloat32 && mean.scalar_type() == torch::kFloat32 &&
              mean.numel() == h.size(0) && weight.dim() == 1 && weight.size(0) == h.size(1),
              "rms_tail: h [n, W] fp32, mean [n, 1] fp32, weight [W]");
  h = h.contiguous();
  mean = mean.contiguous();
  weight = weight.contiguous();
  auto out = torch::empty(h.sizes(), h.options().dtype(weight.scalar_type()));
  if (weight.scalar_type() == torch::kBFloat16)
    rms_tail_of<at::BFloat16>(h, mean, weight, eps, out);
  else if (weight.scalar_type() == torch::kFloat32)
    rms_tail_of<float>(h, mean, weight, eps, out);
  else
    TORCH_CHECK(false, "rms_tail: fp32 or bf16");
  return out;
}

}  // namespace

torch::Tensor lean_rotary(torch::Tensor x, torch::Tensor cos, torch::Tensor sin) { return rotary(x, cos, sin); }
torch::Tensor lean_rms_tail(torch::Tensor h, torch::Tensor mean, torch::Tensor weight, double eps) {
  return rms_tail(h, mean, weight, eps);
}

}  // namespace specviz
