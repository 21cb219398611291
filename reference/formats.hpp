// formats.hpp — the bit-level facts of NVFP4, defined once for the whole project (docs/design.md §1).
//
// E2M1 (FP4): sign in bit 3; magnitude codes 0..7 -> 0, 0.5, 1, 1.5, 2, 3, 4, 6. Code 8 is -0.
//   No inf, no NaN. Two codes per byte: element 2j in the LOW nibble of byte j, 2j+1 in the high one.
// E4M3FN (FP8 scale): bias 7, no inf, NaN only 0x7F and 0xFF, max finite 448 (0x7E),
//   subnormals m/8 * 2^-6 (smallest 2^-9). Not "e4m3fnuz" (bias 8, NaN 0x80).
// fp16 (IEEE binary16) is carried as its uint16_t bit pattern in host code.
//
// Integer views used by the exact reference: 2*E2M1 is an integer in [-12, 12] and
// 2^9 * E4M3 is an integer in [-229376, 229376], so a product a*sa*b*sb times 2^20 is an integer.
#pragma once
#include <cstdint>

namespace nvfp4 {

constexpr int kBlock = 16;  // elements per E4M3 scale along K

// E2M1 code (low 4 bits of `code` are used) -> value.
double e2m1_value(uint8_t code);
// E2M1 code -> 2*value, an integer in [-12, 12] (-0 gives 0).
int e2m1_twice(uint8_t code);
// The k-th FP4 element of a packed row (element 2j in the low nibble of byte j).
inline uint8_t fp4_code_at(const uint8_t* packed_row, int64_t k) {
  const uint8_t byte = packed_row[k >> 1];
  return (k & 1) ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0x0F);
}

// E4M3FN byte -> value (quiet NaN for 0x7F/0xFF; the sign bit is decoded, so 0x80 is -0).
double e4m3_value(uint8_t byte);
inline bool e4m3_is_nan(uint8_t byte) { return (byte & 0x7F) == 0x7F; }
// E4M3FN byte -> 2^9 * value, an integer in [-229376, 229376]. Precondition: not NaN.
int32_t e4m3_times_512(uint8_t byte);

// IEEE binary16 <-> wider types. The conversions to fp16 round to nearest, ties to even,
// overflow to +-inf (|x| >= 65520) and keep NaN as a quiet NaN.
double fp16_to_double(uint16_t bits);
float fp16_to_float(uint16_t bits);
uint16_t fp16_from_double(double x);
uint16_t fp16_from_float(float x);
inline bool fp16_is_nan(uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0; }
inline bool fp16_is_inf(uint16_t bits) { return (bits & 0x7FFF) == 0x7C00; }

}  // namespace nvfp4
