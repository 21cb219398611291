// layout.hpp — the two E4M3 scale layouts and batch-order transposes (docs/design.md §1).
//
// Plain layout: (L, rows, cols) bytes, C order, cols = K/16 (one scale per 16 K elements).
// Blocked ("128x4 tiled", "swizzled") layout used by cuBLASLt and CUTLASS/CuTe on Blackwell:
// each batch's (rows x cols) matrix is zero-padded to Rt = ceil(rows/128) row tiles and
// Ct = ceil(cols/4) column tiles of 512 bytes each; the byte offset of (r, c, l) is
//   l*(Rt*Ct*512) + (r/128)*(Ct*512) + (c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + (c%4).
// Padding bytes (r >= rows or c >= cols) must be zero.
//
// Batch order: the library is batch-first, (L, rows, cols); some tools write batch-last,
// (rows, cols, L). The transposes below convert either way for any element size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {

// Byte offset of plain element (r, c) of batch l in the blocked layout of a (rows x cols) matrix.
int64_t blocked_scale_offset(int64_t r, int64_t c, int64_t l, int64_t rows, int64_t cols);
// Total blocked bytes for L batches: L * ceil(rows/128)*128 * ceil(cols/4)*4.
int64_t blocked_scale_bytes(int64_t rows, int64_t cols, int64_t L);

// plain (L, rows, cols) -> blocked, padding zero. rows, cols, L >= 1 (else InputError).
std::vector<uint8_t> scales_plain_to_blocked(const uint8_t* plain, int64_t rows, int64_t cols, int64_t L);
// blocked -> plain (L, rows, cols); the padding is ignored (compare_scale_layouts checks it).
std::vector<uint8_t> scales_blocked_to_plain(const uint8_t* blocked, int64_t rows, int64_t cols, int64_t L);
// Vector forms: check the input size first (InputError on mismatch).
std::vector<uint8_t> scales_plain_to_blocked(const std::vector<uint8_t>& plain, int64_t rows, int64_t cols,
                                             int64_t L);
std::vector<uint8_t> scales_blocked_to_plain(const std::vector<uint8_t>& blocked, int64_t rows, int64_t cols,
                                             int64_t L);

// Result of checking that a plain and a blocked copy encode the same scales.
struct ScaleLayoutCheck {
  bool ok = true;
  bool in_padding = false;  // the first problem is a non-zero padding byte (r >= rows or c >= cols)
  int64_t l = -1, r = -1, c = -1;  // first disagreeing position (in the padded index space if in_padding)
  uint8_t plain = 0, blocked = 0;  // the two bytes there (plain is 0 for padding)
  std::string message;             // one line, empty when ok
};
// Checks every (l, r, c) of the logical matrix in plain order, then every padding byte; reports
// the first problem. Bytes are compared as bytes (NaN 0x7F vs 0xFF differ; +0 vs -0 differ).
ScaleLayoutCheck compare_scale_layouts(const uint8_t* plain, const uint8_t* blocked, int64_t rows, int64_t cols,
                                       int64_t L);
// Vector form: a size mismatch is reported as not ok (message says which), not thrown.
ScaleLayoutCheck compare_scale_layouts(const std::vector<uint8_t>& plain, const std::vector<uint8_t>& blocked,
                                       int64_t rows, int64_t cols, int64_t L);

// (rows, cols, L) -> (L, rows, cols), elements of `elem_bytes` bytes.
std::vector<uint8_t> batch_last_to_first(const uint8_t* src, int64_t rows, int64_t cols, int64_t L,
                                         size_t elem_bytes);
// (L, rows, cols) -> (rows, cols, L).
std::vector<uint8_t> batch_first_to_last(const uint8_t* src, int64_t rows, int64_t cols, int64_t L,
                                         size_t elem_bytes);

}  // namespace nvfp4
