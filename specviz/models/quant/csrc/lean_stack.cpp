// The lean layer stack's loop over layers in C++ (models/lean_forward.py).
//
// Why: with the products, the attention and the elementwise tails in this extension, what was left of a one-token
// step outside them was Python: ~40 tensor calls a layer through PyTorch's Python bindings, ~270 us a layer of the
// 1.5B target and ~220 us of the 0.5B draft on the 2-core Zen 4 (5-8 ms a step, a quarter of the draft's). Here the
// same steps are made from C++, in the same order, on the same values: ATen's own operators where a reduction or a
// transcendental decides the bits (the norms' sums, silu), the extension's elementwise calls for the rest, each
// rounding as the ATen operators it replaces (csrc/lean_ops.cpp): the rotary embedding, the norms' other six
// operations, the KV cache's cat, the residual adds, silu(gate) * up and the dtype casts (~30 ATen calls
// a layer down to ~5, one-token steps 0.93 (draft) and 0.98 (target) of their time). So every bit is what the
// Python stack computes, and that is transformers' forward bit for bit (tests/test_models_lean_forward.py).
// ATen's tensor and silu only (aten.h; the binding: bindings.cpp).
#include <c10/util/Exception.h>

#include <tuple>
#include <vector>

#include "aten.h"
#include "lean_stack.h"
#include "ops.h"

namespace specviz {

std::vector<at::Tensor> Joined::operator()(const at::Tensor& x) const {
  std::vector<at::Tensor> outs;
  for (const auto& [packed, width, scales, bias, kind] : parts)
    outs.push_back(q4_linear(x, packed, width, scales, bias, kind));
  if (outs.size() < widths.size()) return outs[0].split_with_sizes(widths, -1);
  return outs;
}

std::pair<std::vector<at::Tensor>, std::vector<int64_t>> Joined::columns(const at::Tensor& x) const {
  std::vector<at::Tensor> outs;
  for (const auto& [packed, width, scales, bias, kind] : parts)
    outs.push_back(q4_linear(x, packed, width, scales, bias, kind));
  std::vector<at::Tensor> srcs;
  std::vector<int64_t> cols;
  int64_t at = 0;
  for (size_t i = 0; i < widths.size(); ++i) {
    srcs.push_back(outs.size() < widths.size() ? outs[0] : outs[i]);
    cols.push_back(outs.size() < widths.size() ? at : 0);
    at += widths[i];
  }
  return {srcs, cols};
}

void LeanStack::add_layer(at::Tensor norm1, at::Tensor norm2, double eps, std::vector<Part> qkv,
                          std::vector<int64_t> qkv_widths, std::vector<Part> o, std::vector<Part> gate_up,
                          std::vector<int64_t> gate_up_widths, std::vector<Part> down) {
  layers_.push_back(Layer{norm1, norm2, eps, {qkv, qkv_widths}, {o, {std::get<1>(o[0])}}, {gate_up, gate_up_widths},
                          {down, {std::get<1>(down[0])}}});
}

// The elementwise steps are the extension's own calls (csrc/lean_ops.cpp: each rounds as the ATen operators it
// stands for do); ATen's own are the norms' sums, silu and the split of gate and up: ~5 ATen calls a layer, not ~30.
std::tuple<at::Tensor, std::vector<at::Tensor>, std::vector<at::Tensor>> LeanStack::forward(
    at::Tensor x, std::vector<at::Tensor> keys, std::vector<at::Tensor> values, at::Tensor cos, at::Tensor sin,
    at::Tensor flat, at::Tensor offsets) const {
  TORCH_CHECK(keys.size() == layers_.size() && values.size() == layers_.size(), "lean stack: one cache per layer");
  const int64_t n = x.size(0), d = head_dim_;
  const auto dtype = x.scalar_type();
  x = x.contiguous();
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    auto [srcs, cols] = L.qkv.columns(lean_norm(x, L.norm1, L.eps));       // input_layernorm, q/k/v_proj
    auto [q, k, v] = lean_attention_inputs(srcs, cols, heads_, cos, sin, keys[i], values[i]);
    keys[i] = k;                                      // apply_rotary_pos_emb, DynamicLayer.update, q in fp32
    values[i] = v;
    auto out = one_query_attention(q, k[0], v[0], flat, offsets, scaling_);    // attention.rows_attention
    x = lean_add_(L.o(lean_narrow(out, dtype).view({n, heads_ * d}))[0], x);   // x + o_proj(out)
    auto gate_up = L.gate_up(lean_norm(x, L.norm2, L.eps));   // post_attention_layernorm, gate/up_proj
    x = lean_add_(L.down(lean_mul_(aten::silu(gate_up[0]), gate_up[1]))[0], x);  // x + down(silu(gate) * up)
  }
  return {x, keys, values};
}

}  // namespace specviz
