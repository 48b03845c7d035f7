// bf16 <-> fp32 as plain integer operations (the vectorizer takes them): round to nearest even, as c10::BFloat16 and
// ATen round (a NaN stays a NaN); bf16 -> fp32 is exact. Shared by the products' epilogue and the elementwise tails.
#pragma once

#include <cstdint>
#include <cstring>

namespace specviz {

inline uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return v != v ? uint16_t(0x7FC0) : uint16_t(rounded);
}

inline float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

}  // namespace specviz
