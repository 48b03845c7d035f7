// The extension's Python module: every function the other files define (ops.h) and the lean stack's class
// (lean_stack.h), bound with pybind11. The one file that includes pybind11 and PyTorch's casters for it: they cost a
// file ~8 s of the compiler's time on the 2-core Zen 4, and with torch/types.h (~9 s more, nothing here needs it) they
// were in every file: a clean build took 74-82 s of CPU, 33-39 s since (the longest file 17-19 s, this one 10-11 s).
// The build's other files include the few ATen headers they use (aten.h), or none.
#include <torch/csrc/utils/pybind.h>

#include "cpu_features.h"
#include "lean_stack.h"
#include "ops.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {
  using namespace specviz;
  // The GIL is let go while the kernels run, as PyTorch's own operators do (the app's other threads keep going).
  mod.def("q4_matmul", &q4_matmul, "x[M,K] fp32 times packed 4-bit weights, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q4k_matmul", &q4k_matmul, "x[M,K] fp32 times packed 4-bit weights with Q4_K's own scales, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q4h_matmul", &q4h_matmul, "x[M,K] fp32 times packed 4-bit weights with fp16 scales, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("q8_matmul", &q8_matmul, "x[M,K] fp32 times packed int8 weights, int8 activations",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("linear", &q4_linear, "x[M,K] (fp32 or bf16) times packed weights of a kind (0 q4, 1 q8, 2 q4k, 3 q4h, "
          "4 q6k): [M,n] in x's dtype, [times scales,] [plus bias]", pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("quantize", &quantize, "per row and block of 32: (int8 values, step, step*sum, sum)");
  // The process's instruction set, chosen once inside the extension (cpu_features.h): no call takes one.
  mod.def("isa", &chosen_isa_name, "the instruction set this process runs (the best here, or SPECVIZ_Q4_ISA's)");
  mod.def("set_isa", &set_isa, "run every later call on this instruction set (scalar, avx2, avx512vnni): for tests");
  mod.def("supported_isas", &supported_isas, "the instruction sets this CPU runs, best last");
  mod.def("one_query_attention", &one_query_attention,
          "each query row [R,H,D] over its own keys of k, v [Hkv,kv,D]: fp32 [R,H,D] (csrc/attention.cpp)",
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("rotary", &lean_rotary, "x * cos + rotate_half(x) * sin, op for op as ATen (csrc/lean_ops.cpp)");
  mod.def("norm", &lean_norm, "Qwen2RMSNorm of x [n, W] bit for bit: ATen's sum, the rest one call each side");
  mod.def("attention_inputs", &lean_attention_inputs,
          "q rotated in fp32 and the cache's keys and values grown, from q, k, v's product outputs (csrc/lean_ops.cpp)");
  // module_local: two builds of this extension (another source hash) may be loaded in one process.
  pybind11::class_<LeanStack>(mod, "LeanStack", pybind11::module_local())
      .def(pybind11::init<int64_t, int64_t, double>())
      .def("add_layer", &LeanStack::add_layer)
      .def("__len__", &LeanStack::size)
      .def("forward", &LeanStack::forward, pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("repack_q4k", &repack_q4k, "a Q4_K tensor's GGUF blocks [n, S*144] -> the q4k tiles (q4a8_layout.pack_q4k)",
          pybind11::arg("raw"), pybind11::arg("out") = pybind11::none(),
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("repack_q6k", &repack_q6k, "a Q6_K tensor's GGUF blocks [n, S*210] -> the q6k tiles (q4a8_layout.pack_q6k)",
          pybind11::arg("raw"), pybind11::arg("out") = pybind11::none(),
          pybind11::call_guard<pybind11::gil_scoped_release>());
  mod.def("threads", &threads, "at::get_num_threads() as the extension sees it");
  mod.def("set_prefetch_rows", &set_prefetch_rows, "read ahead of the weights from 1 or 2 rows (no arithmetic changes)");
  mod.def("prefetch_rows", &get_prefetch_rows, "the rows from which the products read ahead");
}
