// The lean layer stack's elementwise tails in one call each (models/lean_forward.py).
//
// Why: after the products and the attention moved into this extension, a one-token step of the 0.5B draft still
// spent ~4-5 ms of its ~18 in small ATen operations, a few microseconds each: the rotary embedding is seven of
// them for q and k (~22 us a layer), a norm's tail five. Each op here is elementwise, so it can be spelled exactly
// as ATen computes it, element by element: a bf16 result is the fp32 result rounded to nearest even once per ATen
// op (ATen's reduced-precision arithmetic), an fp32 one is the IEEE operation. The logits stay transformers' bit
// for bit (tests/test_models_lean_forward.py). The norm's sum stays ATen's (a reduction: its order is ATen's).
// Build with -ffp-contract=off (q4a8.CFLAGS): no multiply and add may fuse.
// ATen's tensor, empty and from_blob only (aten.h; torch/types.h and pybind11 stay in bindings.cpp).
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "aten.h"
#include "bf16.h"
#include "cpu_features.h"
#include "ops.h"

namespace specviz {
namespace {

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
  static float load(Raw v) { return bf16_value(v); }
  static Raw store(float v) { return bf16_bits(v); }
  static float round(float v) { return bf16_value(bf16_bits(v)); }   // the result of one bf16 ATen op
};

// x * cos + rotate_half(x) * sin (transformers' apply_rotary_pos_emb) over rows of D (the last dim contiguous):
// four ATen ops a value: the two products (each rounded to T), then their sum (rounded to T). Row r, head h goes to
// out + r * or_ + h * oh: in T, or (Wide) widened to fp32 after its rounding to T (a later .to(float32), exact).
template <typename T, bool Wide = false>
inline __attribute__((always_inline))
void rotary_body(const typename Io<T>::Raw* x, int64_t n, int64_t H, int64_t D, int64_t sr, int64_t sh,
                 const typename Io<T>::Raw* cos, const typename Io<T>::Raw* sin,
                 std::conditional_t<Wide, float, typename Io<T>::Raw>* out, int64_t or_, int64_t oh) {
  using I = Io<T>;
  const int64_t half = D / 2;
  auto put = [](float v) { if constexpr (Wide) return I::round(v); else return I::store(v); };
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < H; ++h) {
      const auto* row = x + r * sr + h * sh;
      const auto* c = cos + r * D;
      const auto* s = sin + r * D;
      auto* o = out + r * or_ + h * oh;
      for (int64_t j = 0; j < half; ++j)
        o[j] = put(I::round(I::load(row[j]) * I::load(c[j])) + I::round(-I::load(row[j + half]) * I::load(s[j])));
      for (int64_t j = half; j < D; ++j)
        o[j] = put(I::round(I::load(row[j]) * I::load(c[j])) + I::round(I::load(row[j - half]) * I::load(s[j])));
    }
}

// Qwen2RMSNorm / LlamaRMSNorm: weight * (h * rsqrt(mean(h^2) + eps)).to(T), h = x in fp32, all but the sum: ATen's
// mean is sum_out(h^2).div_(W) on a CPU and h.pow(2) is h * h there (pow's exponent-2 case), so `square`, then ATen's
// sum, then `norm` is the norm bit for bit with one ATen operator of its seven. rsqrt is 1 / sqrt, as ATen computes
// it on a CPU (scalar and vector).
template <typename T>
inline __attribute__((always_inline))
void square_body(const typename Io<T>::Raw* x, int64_t count, float* out) {
  using I = Io<T>;
  for (int64_t i = 0; i < count; ++i) out[i] = I::load(x[i]) * I::load(x[i]);
}
template <typename T>
inline __attribute__((always_inline))
void norm_body(const typename Io<T>::Raw* x, const float* sum, const typename Io<T>::Raw* weight, float eps,
               int64_t n, int64_t W, typename Io<T>::Raw* out) {
  using I = Io<T>;
  for (int64_t r = 0; r < n; ++r) {
    const float inv = 1.0f / std::sqrt(sum[r] / float(W) + eps);
    const auto* xr = x + r * W;
    auto* o = out + r * W;
    for (int64_t j = 0; j < W; ++j) o[j] = I::store(I::load(weight[j]) * I::round(I::load(xr[j]) * inv));
  }
}

// a + b and a * b in T (ATen's add with alpha 1 and its mul: the fp32 operation, rounded once) into a, of n rows
// of W at row strides sa, sb; and fp32 -> T (ATen's .to: round to nearest even).
template <typename T>
inline __attribute__((always_inline))
void add_body(typename Io<T>::Raw* a, const typename Io<T>::Raw* b, int64_t n, int64_t W, int64_t sa, int64_t sb) {
  using I = Io<T>;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < W; ++j) a[r * sa + j] = I::store(I::load(a[r * sa + j]) + I::load(b[r * sb + j]));
}
template <typename T>
inline __attribute__((always_inline))
void mul_body(typename Io<T>::Raw* a, const typename Io<T>::Raw* b, int64_t n, int64_t W, int64_t sa, int64_t sb) {
  using I = Io<T>;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < W; ++j) a[r * sa + j] = I::store(I::load(a[r * sa + j]) * I::load(b[r * sb + j]));
}
template <typename T>
inline __attribute__((always_inline))
void narrow_body(const float* a, int64_t count, typename Io<T>::Raw* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = Io<T>::store(a[i]);
}

// Each compiled twice: for any x86-64 and for AVX2 (wider vectors; the same IEEE operations, so the same bits).
// name(args...) then calls the AVX2 build under the process's choice (cpu_features.h: avx2_build), as the products.
#define SPECVIZ_TWICE(name, body)                                                                              \
  template <typename T, typename... A> void name##_plain(A... a) { body(a...); }                                \
  template <typename T, typename... A> __attribute__((target("avx2,fma"))) void name##_avx2(A... a) { body(a...); } \
  template <typename T, typename... A> void name(A... a) {                                                      \
    if (avx2_build(isa())) name##_avx2<T>(a...); else name##_plain<T>(a...);                                    \
  }
SPECVIZ_TWICE(rotary_rows, rotary_body<T>)
SPECVIZ_TWICE(rotary_wide, (rotary_body<T, true>))
SPECVIZ_TWICE(square_rows, square_body<T>)
SPECVIZ_TWICE(norm_rows, norm_body<T>)
SPECVIZ_TWICE(add_rows, add_body<T>)
SPECVIZ_TWICE(mul_rows, mul_body<T>)
SPECVIZ_TWICE(narrow_rows, narrow_body<T>)

template <typename T>
const typename Io<T>::Raw* raw(const at::Tensor& t) {
  return reinterpret_cast<const typename Io<T>::Raw*>(t.data_ptr());
}
template <typename T>
typename Io<T>::Raw* raw_out(at::Tensor& t) {
  return reinterpret_cast<typename Io<T>::Raw*>(t.data_ptr());
}

// f<T>() for a bf16 or fp32 dtype.
template <typename F>
void by_dtype(at::ScalarType dtype, const char* what, F&& f) {
  if (dtype == at::kBFloat16) f(at::BFloat16());
  else if (dtype == at::kFloat) f(float());
  else TORCH_CHECK(false, what, ": fp32 or bf16");
}

at::Tensor rotary(at::Tensor x, at::Tensor cos, at::Tensor sin) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) % 2 == 0, "rotary: x is [n, heads, D] with an even D");
  TORCH_CHECK(cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type(),
              "rotary: cos and sin in x's dtype");
  if (x.stride(2) != 1) x = x.contiguous();
  const int64_t n = x.size(0), H = x.size(1), D = x.size(2);
  auto c = cos.reshape({n, D}).contiguous(), s = sin.reshape({n, D}).contiguous();
  auto out = aten::empty({n, H, D}, x.options());
  by_dtype(x.scalar_type(), "rotary", [&](auto t) {
    using T = decltype(t);
    rotary_rows<T>(raw<T>(x), n, H, D, x.stride(0), x.stride(1), raw<T>(c), raw<T>(s), raw_out<T>(out), H * D, D);
  });
  return out;
}

}  // namespace

at::Tensor lean_rotary(at::Tensor x, at::Tensor cos, at::Tensor sin) { return rotary(x, cos, sin); }

// Qwen2RMSNorm / LlamaRMSNorm of x [n, W] (T) with weight [W] (T): `square`, ATen's sum, `norm` (above).
at::Tensor lean_norm(at::Tensor x, at::Tensor weight, double eps) {
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 1 && weight.size(0) == x.size(1) &&
              weight.scalar_type() == x.scalar_type(), "norm: x [n, W] and weight [W] of one dtype");
  x = x.contiguous();
  weight = weight.contiguous();
  const int64_t n = x.size(0), W = x.size(1);
  auto squares = aten::empty({n, W}, x.options().dtype(at::kFloat));
  auto out = aten::empty({n, W}, x.options());
  by_dtype(x.scalar_type(), "norm", [&](auto t) {
    using T = decltype(t);
    square_rows<T>(raw<T>(x), n * W, squares.data_ptr<float>());
    const auto sum = squares.sum({-1}, true);   // ATen's sum (at::sum's very call), in mean's own order
    norm_rows<T>(raw<T>(x), sum.data_ptr<float>(), raw<T>(weight), float(eps), n, W, raw_out<T>(out));
  });
  return out;
}

// The KV cache's buffers with room to grow: each layer's keys (and values) live in a buffer with spare positions
// after each head's; while n more fit, a step writes its rows there and returns a longer view, copying nothing of
// the old positions (a cat copies the whole cache every step: O(length) a layer, ~5 % of a step at 700 positions).
// Else a new buffer with room for half as many again, the old positions copied once. Only buffers made here are
// grown in place (a registry of their data, cleared by their deleter), and only past the view's length, so nothing
// a view of that length shows changes; a longer view kept from before a crop would see the new rows, and the
// decoder keeps none (a crop is its only way back).
namespace {
std::mutex room_lock;
std::unordered_set<const void*> rooms;

at::Tensor with_room(const at::Tensor& t, int64_t length) {   // [1, H, length, D] of a new buffer, t's copied
  const int64_t H = t.size(1), kv = t.size(2), D = t.size(3), cap = length + length / 2 + 16;
  const size_t bytes = (size_t(H * cap * D) * t.element_size() + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, bytes);
  TORCH_CHECK(data != nullptr, "attention inputs: out of memory for the KV cache");
  {
    std::lock_guard<std::mutex> hold(room_lock);
    rooms.insert(data);
  }
  auto buffer = at::from_blob(data, {1, H, cap, D}, [](void* p) {
    {
      std::lock_guard<std::mutex> hold(room_lock);
      rooms.erase(p);
    }
    std::free(p);
  }, t.options());
  auto view = buffer.narrow(2, 0, length);
  view.narrow(2, 0, kv).copy_(t);
  return view;
}

// t [1, H, kv, D] (each head's positions contiguous) as [1, H, kv + n, D] whose first kv positions are t's.
at::Tensor grown(const at::Tensor& t, int64_t n) {
  const int64_t H = t.size(1), kv = t.size(2), D = t.size(3), hs = t.stride(1);
  bool ours;
  {
    std::lock_guard<std::mutex> hold(room_lock);
    ours = rooms.count(t.storage().data()) > 0;
  }
  const int64_t elems = int64_t(t.storage().nbytes() / t.element_size()) - t.storage_offset();
  if (ours && (H == 1 || (hs % D == 0 && kv + n <= hs / D)) && (H - 1) * hs + (kv + n) * D <= elems)
    return t.as_strided({1, H, kv + n, D}, {t.stride(0), hs, D, 1});
  return with_room(t, kv + n);
}
}  // namespace

// One layer's attention inputs from its projections' outputs: q, k, v [n, heads * D] at column `cols` of `srcs`
// (views into one joined product's output, or one output each; the last dim contiguous), rotated as `rotary`, and
// the dynamic cache's keys and values [1, Hkv, kv, D]: returns q rotated and widened to fp32 [n, H, D] (attention's
// input: .to(float32) is exact) and the cache's keys and values [1, Hkv, kv + n, D] (DynamicLayer.update's cat: the
// old positions, then the n new ones; grown in their buffer, above). One call for the split, two rotary calls, two
// cats and q's widening.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lean_attention_inputs(
    std::vector<at::Tensor> srcs, std::vector<int64_t> cols, int64_t heads, at::Tensor cos, at::Tensor sin,
    at::Tensor keys, at::Tensor values) {
  TORCH_CHECK(srcs.size() == 3 && cols.size() == 3, "attention inputs: q, k and v");
  TORCH_CHECK(keys.dim() == 4 && keys.size(0) == 1 && values.sizes() == keys.sizes() && keys.stride(3) == 1 &&
              values.stride(3) == 1 && keys.stride(2) == keys.size(3) && values.stride(2) == values.size(3),
              "attention inputs: keys and values [1, Hkv, kv, D], each head's positions contiguous");
  const int64_t n = srcs[0].size(0), kv_heads = keys.size(1), kv = keys.size(2), D = keys.size(3);
  const auto dtype = keys.scalar_type();
  for (int i = 0; i < 3; ++i)
    TORCH_CHECK(srcs[i].dim() == 2 && srcs[i].size(0) == n && srcs[i].stride(1) == 1 &&
                srcs[i].scalar_type() == dtype && cols[i] + (i ? kv_heads : heads) * D <= srcs[i].size(1),
                "attention inputs: projections [n, width] in the cache's dtype");
  TORCH_CHECK(cos.scalar_type() == dtype && sin.scalar_type() == dtype && cos.numel() == n * D && sin.numel() == n * D,
              "attention inputs: cos and sin [n, D] in the cache's dtype");
  auto c = cos.reshape({n, D}).contiguous(), s = sin.reshape({n, D}).contiguous();
  auto q = aten::empty({n, heads, D}, keys.options().dtype(at::kFloat));
  auto new_keys = grown(keys, n), new_values = grown(values, n);
  const int64_t ks = new_keys.stride(1), vs = new_values.stride(1);
  by_dtype(dtype, "attention inputs", [&](auto t) {
    using T = decltype(t);
    using Raw = typename Io<T>::Raw;
    const Raw* src[3];
    for (int i = 0; i < 3; ++i) src[i] = raw<T>(srcs[i]) + cols[i];
    rotary_wide<T>(src[0], n, heads, D, srcs[0].stride(0), D, raw<T>(c), raw<T>(s), q.data_ptr<float>(), heads * D, D);
    Raw* nv = raw_out<T>(new_values);
    for (int64_t h = 0; h < kv_heads; ++h)   // the new rows after each head's old positions
      for (int64_t r = 0; r < n; ++r)
        std::memcpy(nv + h * vs + (kv + r) * D, src[2] + r * srcs[2].stride(0) + h * D, D * sizeof(Raw));
    rotary_rows<T>(src[1], n, kv_heads, D, srcs[1].stride(0), D, raw<T>(c), raw<T>(s), raw_out<T>(new_keys) + kv * D,
                   D, ks);
  });
  return {q, new_keys, new_values};
}

namespace {
// a + b (Add) or a * b into a, both [n, W] of one dtype with a contiguous last dim; returns a.
template <bool Add>
at::Tensor combine_into(at::Tensor a, const at::Tensor& b, const char* what) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.dim() == 2 && a.scalar_type() == b.scalar_type() && a.stride(1) == 1 &&
              b.stride(1) == 1, what, ": a and b [n, W] of one dtype");
  by_dtype(a.scalar_type(), what, [&](auto t) {
    using T = decltype(t);
    if constexpr (Add)
      add_rows<T>(raw_out<T>(a), raw<T>(b), a.size(0), a.size(1), a.stride(0), b.stride(0));
    else
      mul_rows<T>(raw_out<T>(a), raw<T>(b), a.size(0), a.size(1), a.stride(0), b.stride(0));
  });
  return a;
}
}  // namespace

at::Tensor lean_add_(at::Tensor a, at::Tensor b) { return combine_into<true>(a, b, "add"); }   // residuals
at::Tensor lean_mul_(at::Tensor a, at::Tensor b) { return combine_into<false>(a, b, "mul"); }  // silu(gate) * up

// fp32 x -> dtype (x itself where dtype is fp32).
at::Tensor lean_narrow(at::Tensor x, at::ScalarType dtype) {
  TORCH_CHECK(x.scalar_type() == at::kFloat, "narrow: fp32 in");
  if (dtype == at::kFloat) return x;
  TORCH_CHECK(dtype == at::kBFloat16, "narrow: to fp32 or bf16");
  x = x.contiguous();
  auto out = aten::empty(x.sizes(), x.options().dtype(dtype));
  narrow_rows<at::BFloat16>(x.data_ptr<float>(), x.numel(), raw_out<at::BFloat16>(out));
  return out;
}

}  // namespace specviz
