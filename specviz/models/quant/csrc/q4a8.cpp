// Weight-only 4-bit (and int8) linear for CPUs with int8 activations: specviz's "q4a8" kernels.
//
// Why this exists: PyTorch's 4-bit CPU product blocks rows by 4 and turns every code
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
// Two 4-bit layouts: "q4" keeps an fp32 scale and minimum per (column, group)
// (0.75 B a weight, a third of it scales); "q4k" keeps a GGUF Q4_K tensor's own scales: 6-bit
// sub-scale sc and sub-minimum m per (column, group) as bytes, and fp32 d and -dmin per (column,
// super-block of 256 inputs) (0.59 B a weight). The kernel forms scale = float(sc) * d and
// min = float(m) * (-dmin): each product is exact in fp32 (an fp16 value times a 6-bit integer
// needs 17 bits), so "q4k" computes the very same fp32 sequence as "q4" holding those values.
// A third, "q4h", keeps the scale and minimum per (column, group) as fp16 (0.625 B a weight): for layers whose
// width is no multiple of a Q4_K super-block (the 0.5B draft's 896) and whose grid is ours to choose (a draft
// requantized to 4 bits). fp16 -> fp32 is exact, so again the fixed sequence of "q4" holding those values.
//
// This file runs the tiles over tensors: quantizing a product's activations (q4a8_quantize.cpp), choosing the tiles
// (q4a8_scalar.cpp, q4a8_avx2.cpp, q4a8_vnni.cpp) and the epilogue (q4a8_epilogue.cpp), splitting the output tiles
// over threads. ATen's tensor, empty and parallel_for only (aten.h): torch/types.h and pybind11 stay in bindings.cpp.
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "aten.h"
#include "bf16.h"
#include "ops.h"
#include "q4a8.h"
#include "q4a8_epilogue.h"

namespace specviz_q4a8 {
namespace {

// Read ahead from this many rows: see PREFETCH_AHEAD in q4a8.h.
std::atomic<int> prefetch_rows{2};   // 1: one row reads ahead too; 2: from two rows (the default)

// The tiles for the process's instruction set: one table per file (q4a8.h), chosen here only.
const TileFn* tile_table(Isa isa, Kind kind) {
  return isa == AVX512VNNI ? vnni_tiles(kind) : isa == AVX2 ? avx2_tiles(kind) : scalar_tiles(kind);
}
TileFn one_row_tile(Isa isa, Kind kind) {
  return isa == AVX512VNNI ? vnni_one_row(kind) : isa == AVX2 ? avx2_one_row(kind) : scalar_one_row(kind);
}

// The product over tiles: into y[M, tiles*16] (fp32) or, with an epilogue, straight into its output.
void product(const float* x, int64_t M, int64_t K, const at::Tensor& packed, Isa isa, Kind kind, float* y,
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
  quantize_rows(x, M, K, q.data(), d.data(), m.data(), s.data(), specviz::avx2_build(isa));
  std::vector<int32_t> s16(kind == Q6K ? 2 * M * G : 0);   // q6k: the sums of each half of 16
  for (int64_t i = 0; i < int64_t(s16.size()); ++i) {
    int32_t sum = 0;
    for (int64_t j = 0; j < 16; ++j) sum += q[16 * i + j];
    s16[i] = sum;
  }
  const uint8_t* wp = packed.data_ptr<uint8_t>();
  const int64_t ldy = tiles * TILE;
  // The tile per row count, read once a product: a setting changed between products never splits one.
  TileFn tiles_for[ROWS + 1];
  std::copy_n(tile_table(isa, kind), ROWS + 1, tiles_for);
  if (prefetch_rows.load(std::memory_order_relaxed) == 1) tiles_for[1] = one_row_tile(isa, kind);
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
        tiles_for[mr](w, a, out, ld);
        if (ep && t * TILE < ep->n) ep->apply(local, TILE, r0, mr, t * TILE);
      }
    }
  });
}

void check_packed(const at::Tensor& packed) {
  TORCH_CHECK(packed.dim() == 3 && packed.scalar_type() == at::kByte && packed.is_contiguous(),
              "q4a8: packed weights must be contiguous uint8 [tiles, groups, block]");
}

// y[M, tiles*16] = x[M, K] times the packed weights, 4-bit (q4: [tiles, G, 384], q4k: [tiles, G/8, 2432], q4h:
// [tiles, G, 320]) or int8 ([tiles, G, 512]), all uint8.
at::Tensor matmul(at::Tensor x, const at::Tensor& packed, Kind kind) {
  const Isa isa = specviz::isa();   // read once: the whole product on one instruction set
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "q4a8: x must be 2-D fp32");
  check_packed(packed);
  x = x.contiguous();
  auto y = specviz::aten::empty({x.size(0), packed.size(0) * TILE}, at::kFloat);
  product(x.data_ptr<float>(), x.size(0), x.size(1), packed, isa, kind, y.data_ptr<float>(), nullptr);
  return y;
}

// A bf16 tensor's values as their 16 bits (bf16.h), the tensor's dtype checked as data_ptr checks it.
const uint16_t* bf16_data(const at::Tensor& t) { return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>()); }

}  // namespace
}  // namespace specviz_q4a8

namespace specviz {

using namespace specviz_q4a8;

at::Tensor q4_matmul(at::Tensor x, at::Tensor packed) { return matmul(x, packed, Q4); }
at::Tensor q4k_matmul(at::Tensor x, at::Tensor packed) { return matmul(x, packed, Q4K); }
at::Tensor q8_matmul(at::Tensor x, at::Tensor packed) { return matmul(x, packed, Q8); }
at::Tensor q4h_matmul(at::Tensor x, at::Tensor packed) { return matmul(x, packed, Q4H); }

// The whole layer as the Python module spelled it, op for op (so bit for bit the same result), in one call: x to
// fp32 (exact), the product, its first n columns, [times the per-output scales,] back to x's dtype, [plus the bias]
// (one Python call a product instead of five, then the epilogue fused into the tiles).
at::Tensor q4_linear(at::Tensor x, at::Tensor packed, int64_t n, c10::optional<at::Tensor> scales,
                     c10::optional<at::Tensor> bias, int64_t kind) {
  const Isa isa = specviz::isa();   // read once: the whole product on one instruction set
  TORCH_CHECK(kind >= Q4 && kind <= Q6K, "q4a8: unknown kind");
  TORCH_CHECK(x.dim() == 2 && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16),
              "q4a8: x must be 2-D fp32 or bf16");
  check_packed(packed);
  TORCH_CHECK(n >= 1 && n <= packed.size(0) * TILE, "q4a8: n must be within the packed outputs");
  const auto dtype = x.scalar_type();
  // x as fp32 (bf16 -> fp32 is exact), into a plain buffer rather than an ATen copy: ~3 us a call saved.
  const auto xc = x.contiguous();
  const int64_t rows = xc.size(0), width = xc.size(1);
  std::vector<float> widened;
  const float* xf = nullptr;
  if (dtype == at::kFloat) {
    xf = xc.data_ptr<float>();
  } else {
    widened.resize(rows * width);
    const uint16_t* bits = bf16_data(xc);
    for (int64_t i = 0; i < rows * width; ++i) widened[i] = bf16_value(bits[i]);
    xf = widened.data();
  }
  auto out = aten::empty({x.size(0), n}, x.options().dtype(dtype));
  Epilogue ep;
  ep.n = n;
  at::Tensor sc, b;   // kept alive through the product
  if (scales.has_value()) {
    sc = scales->scalar_type() == at::kBFloat16 ? scales->contiguous() : scales->to(at::kFloat).contiguous();
    TORCH_CHECK(sc.dim() == 1 && sc.size(0) >= n, "q4a8: one scale per output");
    if (sc.scalar_type() == at::kBFloat16) ep.scales_b = bf16_data(sc); else ep.scales_f = sc.data_ptr<float>();
  }
  if (bias.has_value()) {
    b = bias->to(dtype).contiguous();
    TORCH_CHECK(b.dim() == 1 && b.size(0) >= n, "q4a8: one bias per output");
    if (dtype == at::kBFloat16) ep.bias_b = bf16_data(b); else ep.bias_f = b.data_ptr<float>();
  }
  if (dtype == at::kBFloat16)
    ep.out_b = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  else
    ep.out_f = out.data_ptr<float>();
  pick_epilogue(ep, avx2_build(isa));
  product(xf, rows, width, packed, isa, static_cast<Kind>(kind), nullptr, &ep);
  return out;
}

// Per row and block of 32: (int8 values, step, step * sum, sum), as the products quantize their activations.
std::vector<at::Tensor> quantize(at::Tensor x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "quantize: a 2-D fp32 tensor");
  x = x.contiguous();
  const int64_t M = x.size(0), K = x.size(1);
  TORCH_CHECK(K % GROUP == 0, "quantize: width must be a multiple of 32");
  auto q = aten::empty({M, K}, at::kChar);
  auto d = aten::empty({M, K / GROUP}, at::kFloat);
  auto m = aten::empty({M, K / GROUP}, at::kFloat);
  auto s = aten::empty({M, K / GROUP}, at::kInt);
  quantize_rows(x.data_ptr<float>(), M, K, q.data_ptr<int8_t>(), d.data_ptr<float>(), m.data_ptr<float>(),
                s.data_ptr<int32_t>(), avx2_build(isa()));
  return {q, d, m, s};
}

int64_t threads() { return at::get_num_threads(); }

// Read ahead from this many rows (1 or 2): changes no arithmetic, only when the weights arrive (see prefetch_rows).
void set_prefetch_rows(int64_t rows) {
  TORCH_CHECK(rows == 1 || rows == 2, "q4a8: read-ahead from 1 or 2 rows");
  prefetch_rows.store(int(rows));
}
int64_t get_prefetch_rows() { return prefetch_rows.load(); }

}  // namespace specviz
