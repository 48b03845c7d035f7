// The ATen operators the extension's files call, each spelled exactly as ATen's own inline wrapper spells it
// (ATen/ops/empty.h, zeros.h, silu.h: one call into the dispatcher), from its declaration in ATen/ops/<op>_ops.h.
// Why: ATen/ops/<op>.h also includes ATen/Context.h and what it brings, ~3 s of the compiler's time a file for
// nothing used here (a file with Tensor.h and these: ~1.8 s; with ATen/ops/empty.h: ~4.9 s, on the 2-core Zen 4).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/zeros_ops.h>

namespace specviz::aten {

inline at::Tensor empty(at::IntArrayRef size, at::TensorOptions options) {   // at::empty
  return at::_ops::empty_memory_format::call(
      c10::fromIntArrayRefSlow(size), c10::optTypeMetaToScalarType(options.dtype_opt()), options.layout_opt(),
      options.device_opt(), options.pinned_memory_opt(),
      c10::impl::check_tensor_options_and_extract_memory_format(options, std::nullopt));
}

inline at::Tensor zeros(at::IntArrayRef size, at::TensorOptions options) {   // at::zeros
  return at::_ops::zeros::call(c10::fromIntArrayRefSlow(size), c10::optTypeMetaToScalarType(options.dtype_opt()),
                               options.layout_opt(), options.device_opt(), options.pinned_memory_opt());
}

inline at::Tensor silu(const at::Tensor& x) { return at::_ops::silu::call(x); }   // at::silu

}  // namespace specviz::aten
