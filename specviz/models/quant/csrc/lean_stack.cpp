// The lean layer stack's loop over layers in C++ (models/lean_forward.py; issue 29).
//
// Why: with the products, the attention and the elementwise tails in this extension, what was left of a one-token
// step outside them was Python: ~40 tensor calls a layer through PyTorch's Python bindings, ~270 us a layer of the
// 1.5B target and ~220 us of the 0.5B draft on the 2-core Zen 4 (5-8 ms a step, a quarter of the draft's). Here the
// same calls are made from C++, in the same order, on the same values: the ATen ones (the norm's mean, silu, the
// KV cache's cat, the residual adds, the dtype casts) are ATen's own operators, so every bit is what the Python
// stack computes, and that is transformers' forward bit for bit (tests/test_models_lean_forward.py).
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
torch::Tensor lean_rotary(torch::Tensor x, torch::Tensor cos, torch::Tensor sin);              // csrc/lean_ops.cpp
torch::Tensor lean_rms_tail(torch::Tensor h, torch::Tensor mean, torch::Tensor weight, double eps);

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
};

struct Layer {
  torch::Tensor norm1, norm2;
  double eps;
  Joined qkv, o, gate_up, down;
};

// lean_forward._rms: h = x in fp32, the mean of h^2 (ATen's), then the tail as one call.
torch::Tensor rms(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  auto h = x.to(torch::kFloat32);
  auto mean = h.pow(2).mean({-1}, true);
  return lean_rms_tail(h.reshape({-1, h.size(-1)}), mean.reshape({-1, 1}), weight, eps).view(x.sizes());
}

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
  std::tuple<torch::Tensor, std::vector<torch::Tensor>, std::vector<torch::Tensor>> forward(
      torch::Tensor x, std::vector<torch::Tensor> keys, std::vector<torch::Tensor> values, torch::Tensor cos,
      torch::Tensor sin, torch::Tensor flat, torch::Tensor offsets, int64_t isa) const {
    TORCH_CHECK(keys.size() == layers_.size() && values.size() == layers_.size(), "lean stack: one cache per layer");
    const int64_t n = x.size(0), d = head_dim_;
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& L = layers_[i];
      auto qkv = L.qkv(rms(x, L.norm1, L.eps), isa);
      auto q = lean_rotary(qkv[0].view({n, -1, d}), cos, sin);                  // apply_rotary_pos_emb
      auto k = lean_rotary(qkv[1].view({n, -1, d}), cos, sin);
      auto v = qkv[2].view({n, -1, d});
      keys[i] = at::cat({keys[i], k.transpose(0, 1).unsqueeze(0)}, -2);         // DynamicLayer.update
      values[i] = at::cat({values[i], v.transpose(0, 1).unsqueeze(0)}, -2);
      auto out = one_query_attention(q.to(torch::kFloat32).contiguous(), keys[i][0].contiguous(),
                                     values[i][0].contiguous(), flat, offsets, scaling_, 1)
                     .to(q.scalar_type());                                       // attention.rows_attention
      x = x + L.o(out.reshape({n, heads_ * d}), isa)[0];
      auto gate_up = L.gate_up(rms(x, L.norm2, L.eps), isa);
      x = x + L.down(at::silu(gate_up[0]) * gate_up[1], isa)[0];
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
