// layout.cpp — plain <-> 128x4 blocked scale layouts and batch-order transposes (see layout.hpp).
#include "layout.hpp"

#include <cstring>

#include "errors.hpp"

namespace nvfp4 {

namespace {

void check_dims(const char* what, int64_t rows, int64_t cols, int64_t L) {
  if (rows < 1 || cols < 1 || L < 1)
    throw InputError(std::string(what) + ": rows, cols and L must be at least 1 (got " + std::to_string(rows) + ", " +
                     std::to_string(cols) + ", " + std::to_string(L) + ")");
}

int64_t row_tiles(int64_t rows) { return (rows + 127) / 128; }
int64_t col_tiles(int64_t cols) { return (cols + 3) / 4; }

std::string pos_str(int64_t l, int64_t r, int64_t c) {
  return "(l " + std::to_string(l) + ", r " + std::to_string(r) + ", c " + std::to_string(c) + ")";
}

std::string hex(uint8_t b) {
  static const char* d = "0123456789abcdef";
  return std::string("0x") + d[b >> 4] + d[b & 15];
}

}  // namespace

int64_t blocked_scale_offset(int64_t r, int64_t c, int64_t l, int64_t rows, int64_t cols) {
  const int64_t ct = col_tiles(cols);
  return l * (row_tiles(rows) * ct * 512) + (r / 128) * (ct * 512) + (c / 4) * 512 + (r % 32) * 16 +
         ((r % 128) / 32) * 4 + (c % 4);
}

int64_t blocked_scale_bytes(int64_t rows, int64_t cols, int64_t L) {
  return L * row_tiles(rows) * col_tiles(cols) * 512;
}

std::vector<uint8_t> scales_plain_to_blocked(const uint8_t* plain, int64_t rows, int64_t cols, int64_t L) {
  check_dims("scales_plain_to_blocked", rows, cols, L);
  std::vector<uint8_t> out(size_t(blocked_scale_bytes(rows, cols, L)), 0);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[size_t(blocked_scale_offset(r, c, l, rows, cols))] = plain[(l * rows + r) * cols + c];
  return out;
}

std::vector<uint8_t> scales_blocked_to_plain(const uint8_t* blocked, int64_t rows, int64_t cols, int64_t L) {
  check_dims("scales_blocked_to_plain", rows, cols, L);
  std::vector<uint8_t> out(size_t(L * rows * cols));
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[size_t((l * rows + r) * cols + c)] = blocked[blocked_scale_offset(r, c, l, rows, cols)];
  return out;
}

std::vector<uint8_t> scales_plain_to_blocked(const std::vector<uint8_t>& plain, int64_t rows, int64_t cols,
                                             int64_t L) {
  check_dims("scales_plain_to_blocked", rows, cols, L);
  if (int64_t(plain.size()) != L * rows * cols)
    throw InputError("scales_plain_to_blocked: " + std::to_string(plain.size()) + " plain bytes, (L, rows, cols) = (" +
                     std::to_string(L) + ", " + std::to_string(rows) + ", " + std::to_string(cols) + ") needs " +
                     std::to_string(L * rows * cols));
  return scales_plain_to_blocked(plain.data(), rows, cols, L);
}

std::vector<uint8_t> scales_blocked_to_plain(const std::vector<uint8_t>& blocked, int64_t rows, int64_t cols,
                                             int64_t L) {
  check_dims("scales_blocked_to_plain", rows, cols, L);
  if (int64_t(blocked.size()) != blocked_scale_bytes(rows, cols, L))
    throw InputError("scales_blocked_to_plain: " + std::to_string(blocked.size()) + " blocked bytes, expected " +
                     std::to_string(blocked_scale_bytes(rows, cols, L)));
  return scales_blocked_to_plain(blocked.data(), rows, cols, L);
}

ScaleLayoutCheck compare_scale_layouts(const uint8_t* plain, const uint8_t* blocked, int64_t rows, int64_t cols,
                                       int64_t L) {
  check_dims("compare_scale_layouts", rows, cols, L);
  ScaleLayoutCheck res;
  auto set = [&](bool pad, int64_t l, int64_t r, int64_t c, uint8_t p, uint8_t b) {
    res.ok = false;
    res.in_padding = pad;
    res.l = l;
    res.r = r;
    res.c = c;
    res.plain = p;
    res.blocked = b;
    res.message = pad ? "blocked scales: non-zero padding byte " + hex(b) + " at " + pos_str(l, r, c) +
                            " (logical size " + std::to_string(rows) + " x " + std::to_string(cols) + ")"
                      : "scale layouts disagree at " + pos_str(l, r, c) + ": plain " + hex(p) + ", blocked " +
                            hex(b);
  };
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t p = plain[(l * rows + r) * cols + c];
        const uint8_t b = blocked[blocked_scale_offset(r, c, l, rows, cols)];
        if (p != b) {
          set(false, l, r, c, p, b);
          return res;
        }
      }
  const int64_t prow = row_tiles(rows) * 128, pcol = col_tiles(cols) * 4;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < prow; ++r)
      for (int64_t c = (r < rows ? cols : 0); c < pcol; ++c) {
        const uint8_t b = blocked[blocked_scale_offset(r, c, l, rows, cols)];
        if (b != 0) {
          set(true, l, r, c, 0, b);
          return res;
        }
      }
  return res;
}

ScaleLayoutCheck compare_scale_layouts(const std::vector<uint8_t>& plain, const std::vector<uint8_t>& blocked,
                                       int64_t rows, int64_t cols, int64_t L) {
  check_dims("compare_scale_layouts", rows, cols, L);
  ScaleLayoutCheck res;
  if (int64_t(plain.size()) != L * rows * cols || int64_t(blocked.size()) != blocked_scale_bytes(rows, cols, L)) {
    res.ok = false;
    res.message = "scale layouts have the wrong sizes: plain " + std::to_string(plain.size()) + " (expected " +
                  std::to_string(L * rows * cols) + "), blocked " + std::to_string(blocked.size()) + " (expected " +
                  std::to_string(blocked_scale_bytes(rows, cols, L)) + ")";
    return res;
  }
  return compare_scale_layouts(plain.data(), blocked.data(), rows, cols, L);
}

std::vector<uint8_t> batch_last_to_first(const uint8_t* src, int64_t rows, int64_t cols, int64_t L,
                                         size_t elem_bytes) {
  check_dims("batch_last_to_first", rows, cols, L);
  std::vector<uint8_t> out(size_t(L * rows * cols) * elem_bytes);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t l = 0; l < L; ++l)
        std::memcpy(out.data() + size_t((l * rows + r) * cols + c) * elem_bytes,
                    src + size_t((r * cols + c) * L + l) * elem_bytes, elem_bytes);
  return out;
}

std::vector<uint8_t> batch_first_to_last(const uint8_t* src, int64_t rows, int64_t cols, int64_t L,
                                         size_t elem_bytes) {
  check_dims("batch_first_to_last", rows, cols, L);
  std::vector<uint8_t> out(size_t(L * rows * cols) * elem_bytes);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(out.data() + size_t((r * cols + c) * L + l) * elem_bytes,
                    src + size_t((l * rows + r) * cols + c) * elem_bytes, elem_bytes);
  return out;
}

}  // namespace nvfp4
