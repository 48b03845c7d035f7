// A GGUF's Q4_K and Q6_K blocks straight into the packed layouts the products read (models/gguf_loader.py).
//
// Why: a model loaded from its GGUF file places each 4- and 6-bit tensor in specviz's tiles at every start. Done in
// PyTorch (unpack the codes to int32, then pack them again: q4a8_layout.pack_q4k / pack_q6k) that took ~9 s of the
// 1.5B target's load on 2 cores; here each output byte is written once from the block bytes it comes from, a pass at
// memory speed. The layouts are q4a8_layout's, byte for byte (tests/test_models_gguf.py compares the two), so the
// products compute the same values: a group or sub-block whose step is 0 gets the code the PyTorch path gives it
// (0 for Q4_K, 32 for Q6_K), which changes no product (its weights are its minimum, or 0, either way).
// ATen's tensor and zeros only (aten.h; the binding: bindings.cpp).
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>

#include "aten.h"
#include "ops.h"
#include "q4a8.h"

namespace specviz {
namespace {

using namespace specviz_q4a8;

constexpr int64_t Q4K_BYTES = 144;   // fp16 d, fp16 dmin, 12 bytes of 6-bit sc and m, 128 bytes of codes
constexpr int64_t Q6K_BYTES = 210;   // 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 sub-scales, fp16 d
constexpr int64_t Q4K_GROUP_OUT = Q4_CODES + 2 * TILE;   // 288: a group's codes, then 16 sc and 16 m bytes
constexpr int64_t Q4K_HEAD_OUT = 2 * TILE * 4;           // 16 fp32 d, then 16 fp32 -dmin
constexpr int64_t Q6K_LOW = Q4_CODES, Q6K_HIGH = TILE * GROUP / 4;   // 256 and 128 bytes per (tile, group)

float half_to_float(const uint8_t* p) {   // IEEE fp16 -> fp32, exact (as numpy's astype)
  uint16_t h;
  std::memcpy(&h, p, 2);
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {   // subnormal: normalize
    exp = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void put_float(uint8_t* out, float value) { std::memcpy(out, &value, 4); }

// gguf's Q4_K.get_scale_min: the 6-bit sub-scale and sub-minimum of group j (0..7) from the 12 packed bytes.
void scale_min(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Byte col*4+i of 64-byte block p of a (tile, group)'s codes: input 8p+i in the low nibble, 8p+4+i in the high
// (q4a8_layout.pack_q4); `code(input)` is that column's code of an input of the group.
template <typename Code>
void put_nibbles(uint8_t* out, int64_t col, Code code) {
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 4; ++i)
      out[p * 64 + col * 4 + i] = static_cast<uint8_t>(code(8 * p + i) | (code(8 * p + 4 + i) << 4));
}

}  // namespace

// The walk both repacks share: every column's super-block of `raw` (uint8 [n, S * block_bytes]) handed to `put`
// with the block of its tile it fills (uint8 [out_bytes] of the result [tiles, S, out_bytes]), in parallel over tiles.
// `given` (optional): the result's memory, e.g. in 2 MB pages, so the tiles are written once where they will stay.
template <typename Put>
at::Tensor each_block(const at::Tensor& raw, int64_t block_bytes, int64_t out_bytes, const c10::optional<at::Tensor>& given,
                      Put put) {
  const int64_t n = raw.size(0), row = raw.size(1), supers = row / block_bytes, tiles = (n + TILE - 1) / TILE;
  at::Tensor out;
  if (given.has_value()) {
    out = *given;
    TORCH_CHECK(out.dtype() == at::kByte && out.is_contiguous() && out.dim() == 3 && out.size(0) == tiles &&
                out.size(1) == supers && out.size(2) == out_bytes, "repack: out must be contiguous uint8 [tiles, S, block]");
    // A full tile's every byte is written below; a last partial tile's padding is not: zeroed here.
    if (n % TILE) std::memset(out.data_ptr<uint8_t>(), 0, out.numel());
  } else {
    out = aten::zeros({tiles, supers, out_bytes}, at::kByte);
  }
  const uint8_t* src = raw.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t s = 0; s < supers; ++s)
      for (int64_t col = 0; col < TILE && t * TILE + col < n; ++col)
        put(dst + (t * supers + s) * out_bytes, col, src + (t * TILE + col) * row + s * block_bytes);
  return out;
}

// raw: uint8 [n, S * 144], a Q4_K tensor's rows as the GGUF stores them -> uint8 [tiles, S, K4_BLOCK].
at::Tensor repack_q4k(at::Tensor raw, c10::optional<at::Tensor> out) {
  TORCH_CHECK(raw.dtype() == at::kByte && raw.dim() == 2 && raw.is_contiguous() && raw.size(1) % Q4K_BYTES == 0,
              "repack_q4k: raw must be contiguous uint8 [n, super-blocks * 144]");
  TORCH_CHECK(K4_BLOCK == Q4K_HEAD_OUT + 8 * Q4K_GROUP_OUT, "repack_q4k: layout constants disagree");
  return each_block(raw, Q4K_BYTES, K4_BLOCK, out, [](uint8_t* head, int64_t col, const uint8_t* block) {
    const float d = half_to_float(block), dmin = half_to_float(block + 2);
    put_float(head + col * 4, d);
    put_float(head + (TILE + col) * 4, -dmin);
    for (int g = 0; g < 8; ++g) {
      uint8_t sc, m;
      scale_min(block + 4, g, &sc, &m);
      uint8_t* group = head + Q4K_HEAD_OUT + g * Q4K_GROUP_OUT;
      group[Q4_CODES + col] = sc;
      group[Q4_CODES + TILE + col] = m;
      const uint8_t* qs = block + 16 + (g / 2) * 32;
      const int shift = (g % 2) * 4;
      const bool zero = !(static_cast<float>(sc) * d > 0.0f);   // exact_codes gives such a group code 0
      put_nibbles(group, col, [&](int input) { return zero ? 0 : (qs[input] >> shift) & 15; });
    }
  });
}

// raw: uint8 [n, S * 210], a Q6_K tensor's rows -> uint8 [tiles, S, K6_BLOCK] (q4a8_layout.pack_q6k).
at::Tensor repack_q6k(at::Tensor raw, c10::optional<at::Tensor> out) {
  TORCH_CHECK(raw.dtype() == at::kByte && raw.dim() == 2 && raw.is_contiguous() && raw.size(1) % Q6K_BYTES == 0,
              "repack_q6k: raw must be contiguous uint8 [n, super-blocks * 210]");
  TORCH_CHECK(K6_BLOCK == K6_HEAD + 8 * Q6_GROUP && Q6_GROUP == Q6K_LOW + Q6K_HIGH + 2 * TILE,
              "repack_q6k: layout constants disagree");
  return each_block(raw, Q6K_BYTES, K6_BLOCK, out, [](uint8_t* head, int64_t col, const uint8_t* block) {
    const uint8_t *ql = block, *qh = block + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
    const float d = half_to_float(block + 208);
    put_float(head + col * 4, d);
    // Every code (0..63) of the super-block, as gguf's Q6_K dequantizer reads it; 32 (q = 0) where the
    // sub-block's step is 0, as exact_q6k_codes gives it.
    uint8_t codes[256];
    for (int w = 0; w < 256; ++w) {
      const int half = w / 128, r = w % 128;
      const int low = (ql[64 * half + r % 64] >> (4 * (r / 64))) & 15;
      const int high = (qh[32 * half + r % 32] >> (2 * (r / 32))) & 3;
      codes[w] = static_cast<float>(scales[w / 16]) * d == 0.0f ? 32 : static_cast<uint8_t>(low | (high << 4));
    }
    for (int g = 0; g < 8; ++g) {
      uint8_t* group = head + K6_HEAD + g * Q6_GROUP;
      const uint8_t* c = codes + 32 * g;
      put_nibbles(group, col, [&](int input) { return c[input] & 15; });
      // High 2 bits: byte col*4+i of 64-byte block b holds input 4v+i's at bits 2(v%4), v = 4b + v%4.
      for (int b = 0; b < 2; ++b)
        for (int i = 0; i < 4; ++i) {
          uint8_t byte = 0;
          for (int v4 = 0; v4 < 4; ++v4) byte |= static_cast<uint8_t>((c[4 * (4 * b + v4) + i] >> 4) << (2 * v4));
          group[Q6K_LOW + b * 64 + col * 4 + i] = byte;
        }
      group[Q6K_LOW + Q6K_HIGH + col] = static_cast<uint8_t>(scales[2 * g]);
      group[Q6K_LOW + Q6K_HIGH + TILE + col] = static_cast<uint8_t>(scales[2 * g + 1]);
    }
  });
}

}  // namespace specviz
