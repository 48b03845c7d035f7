// The lean layer stack's loop over layers (lean_stack.cpp says why), declared for its binding (bindings.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace specviz {

// (packed weights, width, per-output scales or None, bias or None, kind): one product of lean_forward._Joined.
using Part = std::tuple<at::Tensor, int64_t, c10::optional<at::Tensor>, c10::optional<at::Tensor>, int64_t>;

struct Joined {   // lean_forward._Joined: one product where the projections are of one kind, else one each
  std::vector<Part> parts;
  std::vector<int64_t> widths;

  std::vector<at::Tensor> operator()(const at::Tensor& x) const;
  // Each projection's output as (its product's output, its first column): no split.
  std::pair<std::vector<at::Tensor>, std::vector<int64_t>> columns(const at::Tensor& x) const;
};

struct Layer {
  at::Tensor norm1, norm2;
  double eps;
  Joined qkv, o, gate_up, down;
};

class LeanStack {
 public:
  LeanStack(int64_t heads, int64_t head_dim, double scaling) : heads_(heads), head_dim_(head_dim), scaling_(scaling) {}

  void add_layer(at::Tensor norm1, at::Tensor norm2, double eps, std::vector<Part> qkv, std::vector<int64_t> qkv_widths,
                 std::vector<Part> o, std::vector<Part> gate_up, std::vector<int64_t> gate_up_widths,
                 std::vector<Part> down);

  int64_t size() const { return int64_t(layers_.size()); }

  // x [n, H] through every layer, after keys[i] / values[i] [1, Hkv, kv, D] (a dynamic cache's tensors); returns
  // the hidden states and each layer's keys and values with the n new positions appended (the cache's new tensors).
  std::tuple<at::Tensor, std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      at::Tensor x, std::vector<at::Tensor> keys, std::vector<at::Tensor> values, at::Tensor cos, at::Tensor sin,
      at::Tensor flat, at::Tensor offsets) const;

 private:
  int64_t heads_, head_dim_;
  double scaling_;
  std::vector<Layer> layers_;
};

}  // namespace specviz
