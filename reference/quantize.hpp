// quantize.hpp — float data -> NVFP4 (packed E2M1 codes + E4M3FN block scales), and the two
// encoders it uses (docs/design.md §1 formats; the decoders live in formats.hpp).
//
// Layouts: data is (rows, K) row-major floats; the result is packed E2M1 (rows, K/2) bytes with
// element 2j in the LOW nibble of byte j, and E4M3FN scales (rows, K/16) in the plain layout.
//
// Rounding choices (all round-to-nearest, ties-to-even, computed once from exact inputs):
//   e4m3_encode: RNE into E4M3FN; |x| > 448 saturates to +-448 (no inf in the format); values
//     below the smallest subnormal round to +-0 (2^-10 ties to 0); NaN -> 0x7F.
//   e2m1_encode: RNE onto {0, 0.5, 1, 1.5, 2, 3, 4, 6} ("even" = even code, e.g. 0.25 -> 0,
//     0.75 -> 1, 2.5 -> 2, 5 -> 4); |x| > 6 saturates to +-6; the sign is kept, so small
//     negatives give -0 (code 8). NaN is refused (E2M1 has no NaN): std::invalid_argument.
//   Block quantizer, per 16 consecutive elements along K:
//     scale = e4m3_encode(amax / 6), amax / 6 computed in double (correctly rounded E4M3, since
//     amax is a float and a double quotient cannot cross an E4M3 rounding boundary);
//     amax = 0, or amax/6 rounding to 0, gives scale 0 and all codes 0;
//     each element is the E2M1 RNE of the exact quotient x / scale (computed without division, by
//     comparing |x| with exact midpoint*scale products), which can saturate at 6 when the rounded
//     scale is below amax/6, or when amax/6 > 448 (scale saturated at 448).
//   NaN or inf in the data throws InputError naming its (row, k): NVFP4 cannot represent it.
#pragma once
#include <cstdint>
#include <vector>

namespace nvfp4 {

// double -> E4M3FN byte (see the rounding rules above).
uint8_t e4m3_encode(double x);
// double -> E2M1 code in the low 4 bits (see above). Throws std::invalid_argument for NaN.
uint8_t e2m1_encode(double x);

struct Nvfp4Matrix {
  int64_t rows = 0, K = 0;
  std::vector<uint8_t> packed;  // (rows, K/2), low nibble first
  std::vector<uint8_t> scales;  // (rows, K/16), plain layout, E4M3FN
};

// data: (rows, K) row-major. K must be a positive multiple of 16 (else InputError).
Nvfp4Matrix quantize_nvfp4(const float* data, int64_t rows, int64_t K);
// Same, writing into caller-provided buffers of rows*K/2 and rows*K/16 bytes.
void quantize_nvfp4_into(const float* data, int64_t rows, int64_t K, uint8_t* packed, uint8_t* scales);
// Decodes NVFP4 back to doubles (rows, K): value = e2m1 * e4m3 (NaN scale gives NaN).
std::vector<double> dequantize_nvfp4(const uint8_t* packed, const uint8_t* scales, int64_t rows, int64_t K);

}  // namespace nvfp4
