// The lean layer stack's loop over layers in C++ (models/lean_forward.py; issue 29).
//
// Why: with the products, the attention and the elementwise tails in this extension, what was left of a one-token
// step outside them was Python: ~40 tensor calls a layer through PyTorch's Python bindings, ~270 us a layer of the
// 1.5B target and ~220 us of the 0.5B draft on the 2-core Zen 4 (5-8 ms a step, a quarter of the draft's). Here the
// same steps are made from C++, in the same order, on the same values: ATen's own operators where a reduction or a
// transcendental decides the bits (the norms' sums, silu), the extension's elementwise calls for the rest, each
// rounding as the ATen operators it replaces (csrc/lean_ops.cpp): the rotary embedding, the norms' other six
// operations, the KV cache's cat, the residual adds, silu(gate) * up and the dtype casts (session 50: ~30 ATen calls
// a layer down to ~5, one-token steps 0.93 (draft) and 0.98 (target) of their time). So every bit is what the
// Python stack computes, and that is transformers' forward bit for bit (tests/test_models_lean_forward.py).
// PyTorch's tensor types and pybind11's casters for them: torch/extension.h (the whole C++ frontend) made the
// build of the four files 146 s on the 2-core Zen 1, 85 s now with the tiles in files of their own (session 46).
#include <torch/csrc/utils/pybind.h>
#include <torch/types.h>

#include <tuple>
#include <vector>

namespace specviz {

torch::Tensor q4_linear(torch::Tensor x, torch::Tensor packed, int64_t n, c10::optional<torch::Tensor> scales,
                        c10::optional<torch::Tensor> bias, int64_t isa, int64_t kind);        // csrc/q4a8.cpp
torch::Tensor one_query_attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor keys,
                                  torch::Tensor offsets, double scale, int64_t isa);           // csrc/attention.cpp
torch::Tensor lean_norm(torch::Tensor x, torch::Tensor weight, double eps);          // csrc/lean_ops.cpp
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> lean_attention_inputs(
    std::vector<torch::Tensor> srcs, std::vector<int64_t> cols, int64_t heads, torch::Tensor cos, torch::Tensor sin,
    torch::Tensor keys, torch::Tensor values);
torch::Tensor lean_add_(torch::Tensor a, torch::Tensor b);
torch::Tensor lean_mul_(torch::Tensor a, torch::Tensor b);
torch::Tensor lean_narrow(torch::Tensor x, torch::ScalarType dtype);

// (packed weights, width, per-output scales or None, bias or None, kind): one product of lean_forward._Joined.
using Part = std::tuple<torch::Tensor, int64_t, c10::optional<torch::Tensor>, c10::optional<torch::Tensor>, int64_t>;

namespace {

struct Joined {   // lean_forward._Joined: one product where the projections are of one kind, else one each
  std::vector<Part> parts;
  std::vector<int64_t> widths;

  std::vector<torch::Tensor> operator()(const torch::Tensor& x, int64_t isa) const {
    std::vector<torch::Tensor> outs;
    for (const auto& [packed, width, scales, bias, kind] : parts)
      outs.push_back(q4_linear(x, packed, width, scales, bias, isa, kind));
    if (outs.size() < widths.size()) return outs[0].split_with_sizes(widths, -1);
    return outs;
  }

  // Each projection's output as (its product's output, its first column): no split.
  std::pair<std::vector<torch::Tensor>, std::vector<int64_t>> columns(const torch::Tensor& x, int64_t isa) const {
    std::vector<torch::Tensor> outs;
    for (const auto& [packed, width, scales, bias, kind] : parts)
      outs.push_back(q4_linear(x, packed, width, scales, bias, isa, kind));
    std::vector<torch::Tensor> srcs;
    std::vector<int64_t> cols;
    int64_t at = 0;
    for (size_t i = 0; i < widths.size(); ++i) {
      srcs.push_back(outs.size() < widths.size() ? outs[0] : outs[i]);
      cols.push_back(outs.size() < widths.size() ? at : 0);
      at += widths[i];
    }
    return {srcs, cols};
  }
};

struct Layer {
  torch::Tensor norm1, norm2;
  double eps;
  Joined qkv, o, gate_up, down;
};

}  // namespace

class LeanStack {
 public:
  LeanStack(int64_t heads, int64_t head_dim, double scaling) : heads_(heads), head_dim_(head_dim), scaling_(scaling) {}

  void add_layer(torch::Tensor norm1, torch::Tensor norm2, double eps, std::vector<Part> qkv,
                 std::vector<int64_t> qkv_widths, std::vector<Part> o, std::vector<Part> gate_up,
                 std::vector<int64_t> gate_up_widths, std::vector<Part> down) {
    layers_.push_back(Layer{norm1, norm2, eps, {qkv, qkv_widths}, {o, {std::get<1>(o[0])}}, {gate_up, gate_up_widths},
                            {down, {std::get<1>(down[0])}}});
  }

  int64_t size() const { return int64_t(layers_.size()); }

  // x [n, H] through every layer, after keys[i] / values[i] [1, Hkv, kv, D] (a dynamic cache's tensors); returns
  // the hidden states and each layer's keys and values with the n new positions appended (the cache's new tensors).
  // The elementwise steps are the extension's own calls (csrc/lean_ops.cpp: each rounds as the ATen operators it
  // stands for do); ATen's own are the norms' sums, silu and the split of gate and up: ~5 ATen calls a layer, not ~30.
  std::tuple<torch::Tensor, std::vector<torch::Tensor>, std::vector<torch::Tensor>> forward(
      torch::Tensor x, std::vector<torch::Tensor> keys, std::vector<torch::Tensor> values, torch::Tensor cos,
      torch::Tensor sin, torch::Tensor flat, torch::Tensor offsets, int64_t isa) const {
    TORCH_CHECK(keys.size() == layers_.size() && values.size() == layers_.size(), "lean stack: one cache per layer");
    const int64_t n = x.size(0), d = head_dim_;
    const auto dtype = x.scalar_type();
    x = x.contiguous();
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& L = layers_[i];
      auto [srcs, cols] = L.qkv.columns(lean_norm(x, L.norm1, L.eps), isa);          // input_layernorm, q/k/v_proj
      auto [q, k, v] = lean_attention_inputs(srcs, cols, heads_, cos, sin, keys[i], values[i]);
      keys[i] = k;                                      // apply_rotary_pos_emb, DynamicLayer.update, q in fp32
      values[i] = v;
      auto out = one_query_attention(q, k[0], v[0], flat, offsets, scaling_, 1);    // attention.rows_attention
      x = lean_add_(L.o(lean_narrow(out, dtype).view({n, heads_ * d}), isa)[0], x);   // x + o_proj(out)
      auto gate_up = L.gate_up(lean_norm(x, L.norm2, L.eps), isa);   // post_attention_layernorm, gate/up_proj
      x = lean_add_(L.down(lean_mul_(at::silu(gate_up[0]), gate_up[1]), isa)[0], x);  // x + down(silu(gate) * up)
    }
    return {x, keys, values};
  }

 private:
  int64_t heads_, head_dim_;
  double scaling_;
  std::vector<Layer> layers_;
};

void bind_lean_stack(pybind11::module& mod) {
  // module_local: two builds of this extension (another source hash) may be loaded in one process.
  pybind11::class_<LeanStack>(mod, "LeanStack", pybind11::module_local())
      .def(pybind11::init<int64_t, int64_t, double>())
      .def("add_layer", &LeanStack::add_layer)
      .def("__len__", &LeanStack::size)
      .def("forward", &LeanStack::forward, pybind11::call_guard<pybind11::gil_scoped_release>());
}

}  // namespace specviz
