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

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the repacks read and write the blocks' bytes as little-endian words"
#endif

// The codes are moved eight at a time in 64-bit words (byte k of word p: input 8p+k of a group), not a byte at a
// time: 1.3 GB/s of Q4_K and 0.3 GB/s of Q6_K a byte at a time, most of a warm load (the .so has no -march: SSE2).
constexpr uint64_t NIBBLES = 0x0F0F0F0F0F0F0F0FULL, TWO_BITS = 0x0303030303030303ULL;

uint64_t word_at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void put_word(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// A group's 32 codes (0..15, as 4 words) into column col of its (tile, group): byte col*4+i of 64-byte block p holds
// input 8p+i in the low nibble and 8p+4+i in the high (q4a8_layout.pack_q4). A code fits a nibble, so the shift
// carries nothing into the next byte.
void put_codes(uint8_t* out, int64_t col, const uint64_t codes[4]) {
  for (int p = 0; p < 4; ++p)
    put_word(out + p * 64 + col * 4, static_cast<uint32_t>(codes[p]) | (static_cast<uint32_t>(codes[p] >> 32) << 4));
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
  // A row is read front to back (its super-blocks in turn), not the tile's 16 rows a super-block at a time: 16 rows
  // read side by side outran the hardware's prefetch (2.5 against 6.6 GB/s for the 1.5B target's embedding table).
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t col = 0; col < TILE && t * TILE + col < n; ++col)
      for (int64_t s = 0; s < supers; ++s)
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
      const uint8_t* qs = block + 16 + (g / 2) * 32;   // groups 2h and 2h+1 share 32 bytes: low, high nibbles
      const int shift = (g % 2) * 4;
      const bool zero = !(static_cast<float>(sc) * d > 0.0f);   // exact_codes gives such a group code 0
      uint64_t codes[4];
      for (int p = 0; p < 4; ++p) codes[p] = zero ? 0 : (word_at(qs + 8 * p) >> shift) & NIBBLES;
      put_codes(group, col, codes);
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
    for (int g = 0; g < 8; ++g) {
      uint8_t* group = head + K6_HEAD + g * Q6_GROUP;
      // Code w = 32g + j (0..63) as gguf's Q6_K dequantizer reads it: with h = g / 4 and r = w % 128, its low 4
      // bits are ql[64h + r % 64] >> 4(r / 64), its high 2 bits qh[32h + r % 32] >> 2(r / 32); for a group of 32
      // that is 32 consecutive bytes of each, shifted alike.
      const int h = g / 4;
      uint64_t low[4], high[4];
      for (int p = 0; p < 4; ++p) {
        low[p] = (word_at(ql + 64 * h + 32 * (g % 2) + 8 * p) >> (4 * ((g % 4) / 2))) & NIBBLES;
        high[p] = (word_at(qh + 32 * h + 8 * p) >> (2 * (g % 4))) & TWO_BITS;
      }
      for (int half = 0; half < 2; ++half)   // sub-block 2g + half (codes 16 half .. 16 half + 15): words 2 half, +1
        if (static_cast<float>(scales[2 * g + half]) * d == 0.0f) {   // step 0: code 32, as exact_q6k_codes gives
          low[2 * half] = low[2 * half + 1] = 0;
          high[2 * half] = high[2 * half + 1] = 0x0202020202020202ULL;   // 32 >> 4 = 2
        }
      put_codes(group, col, low);
      // High 2 bits: byte col*4+i of 64-byte block b holds input 16b + 4v + i's at bits 2v (v = 0..3): inputs
      // 16b + i, +4, +8, +12 are the low and high halves of words 2b and 2b+1; a value fits 2 bits, so no carries.
      for (int b = 0; b < 2; ++b) {
        const uint64_t w0 = high[2 * b], w1 = high[2 * b + 1];
        put_word(group + Q6K_LOW + b * 64 + col * 4,
                 static_cast<uint32_t>(w0) | (static_cast<uint32_t>(w0 >> 32) << 2) |
                     (static_cast<uint32_t>(w1) << 4) | (static_cast<uint32_t>(w1 >> 32) << 6));
      }
      group[Q6K_LOW + Q6K_HIGH + col] = static_cast<uint8_t>(scales[2 * g]);
      group[Q6K_LOW + Q6K_HIGH + TILE + col] = static_cast<uint8_t>(scales[2 * g + 1]);
    }
  });
}

}  // namespace specviz
