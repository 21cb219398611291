// npy_cases.hpp — small helpers of the tests that write case directories and .npy files by hand
// (tests/harness/test_casemode.cpp, tests/harness/test_intake.cpp).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "npy.hpp"

namespace nvfp4::test {

// A uint8 array of the given shape.
inline NpyArray u8(std::vector<int64_t> shape, std::vector<uint8_t> data) {
  NpyArray a;
  a.type = NpyType::U8;
  a.shape = std::move(shape);
  a.data = std::move(data);
  return a;
}

// (L, rows, cols) bytes -> (rows, cols, L), as np.moveaxis(v, 0, 2) saves them.
inline std::vector<uint8_t> to_batch_last(const std::vector<uint8_t>& v, int64_t L, int64_t rows, int64_t cols) {
  std::vector<uint8_t> o(v.size());
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) o[size_t((r * cols + c) * L + l)] = v[size_t((l * rows + r) * cols + c)];
  return o;
}

}  // namespace nvfp4::test
