// test_layout.cpp — plain <-> 128x4 blocked scale layout and batch-order transposes (layout.hpp).
//
// The expected blocked offsets are derived here a second way, by replaying the tensor operations
// of the GPU MODE `to_blocked` (reference-kernels problems/nvidia reference.py, cited in
// docs/gpu-mode.md):
//   padded (Rt*128, Ct*4) -> view(Rt,128,Ct,4) -> permute(0,2,1,3) -> reshape(-1,4,32,4)
//   -> transpose(1,2) -> flatten
// as explicit index bookkeeping, not as the closed formula layout.cpp uses.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "errors.hpp"
#include "layout.hpp"

using namespace nvfp4;

namespace {

// Offset of padded element (r, c) within one batch, following the torch ops step by step.
int64_t to_blocked_offset(int64_t r, int64_t c, int64_t Ct) {
  // view(Rt,128,Ct,4): (i, a, j, b); permute(0,2,1,3): (i, j, a, b), shape (Rt, Ct, 128, 4)
  const int64_t i = r / 128, a = r % 128, j = c / 4, b = c % 4;
  // reshape(-1,4,32,4): t = i*Ct + j, a = q*32 + w -> (t, q, w, b)
  const int64_t t = i * Ct + j, q = a / 32, w = a % 32;
  // transpose(1,2): (t, w, q, b) of shape (Rt*Ct, 32, 4, 4), contiguous after reshape
  return ((t * 32 + w) * 4 + q) * 4 + b;
}

uint8_t pattern(int64_t l, int64_t r, int64_t c) { return uint8_t(1 + (l * 131 + r * 7 + c * 29) % 251); }

}  // namespace

TEST_CASE("blocked offset: hand-checked entries") {
  // rows 256, cols 8: Rt = 2, Ct = 2, 1024 bytes per tile row.
  CHECK(blocked_scale_offset(0, 0, 0, 256, 8) == 0);
  CHECK(blocked_scale_offset(0, 1, 0, 256, 8) == 1);
  CHECK(blocked_scale_offset(1, 0, 0, 256, 8) == 16);    // next row of a 32-row group: +16
  CHECK(blocked_scale_offset(32, 0, 0, 256, 8) == 4);    // M32 sits right after M0's 4 scales
  CHECK(blocked_scale_offset(96, 3, 0, 256, 8) == 15);
  CHECK(blocked_scale_offset(0, 4, 0, 256, 8) == 512);   // next column tile
  CHECK(blocked_scale_offset(128, 0, 0, 256, 8) == 1024);  // next row tile
  CHECK(blocked_scale_offset(0, 0, 1, 256, 8) == 2048);  // next batch
  CHECK(blocked_scale_bytes(256, 8, 3) == 3 * 2048);
  CHECK(blocked_scale_bytes(1, 1, 1) == 512);  // padded to one 128x4 tile
  CHECK(blocked_scale_bytes(129, 5, 2) == 2 * 256 * 8);
}

TEST_CASE("blocked offset equals the to_blocked tensor ops and is a bijection") {
  const int64_t rows_list[] = {1, 31, 32, 127, 128, 129, 300};
  const int64_t cols_list[] = {1, 3, 4, 5, 8, 9};
  for (int64_t rows : rows_list)
    for (int64_t cols : cols_list) {
      const int64_t L = 2, Rt = (rows + 127) / 128, Ct = (cols + 3) / 4;
      const int64_t per = Rt * Ct * 512;
      REQUIRE(blocked_scale_bytes(rows, cols, L) == L * per);
      std::vector<int> hits(size_t(L * per), 0);
      for (int64_t l = 0; l < L; ++l)
        for (int64_t r = 0; r < Rt * 128; ++r)
          for (int64_t c = 0; c < Ct * 4; ++c) {
            const int64_t off = blocked_scale_offset(r, c, l, rows, cols);
            if (off != l * per + to_blocked_offset(r, c, Ct))
              FAIL("rows " << rows << " cols " << cols << " (" << l << "," << r << "," << c << ")");
            REQUIRE(off >= 0);
            REQUIRE(off < L * per);
            ++hits[size_t(off)];
          }
      for (int h : hits) REQUIRE(h == 1);
    }
}

TEST_CASE("plain <-> blocked round trip with zero padding, ragged shapes, L > 1") {
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 3, 2}, {128, 4, 1}, {129, 5, 3}, {300, 9, 2}, {64, 448, 1}};
  for (const auto& s : shapes) {
    const int64_t rows = s[0], cols = s[1], L = s[2];
    CAPTURE(rows);
    CAPTURE(cols);
    CAPTURE(L);
    std::vector<uint8_t> plain(size_t(L * rows * cols));
    for (int64_t l = 0; l < L; ++l)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) plain[size_t((l * rows + r) * cols + c)] = pattern(l, r, c);
    const auto blocked = scales_plain_to_blocked(plain, rows, cols, L);
    REQUIRE(int64_t(blocked.size()) == blocked_scale_bytes(rows, cols, L));
    // Every logical element is where the independent derivation says; everything else is zero.
    const int64_t Ct = (cols + 3) / 4, per = ((rows + 127) / 128) * Ct * 512;
    std::vector<uint8_t> expect(blocked.size(), 0);
    for (int64_t l = 0; l < L; ++l)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) expect[size_t(l * per + to_blocked_offset(r, c, Ct))] = pattern(l, r, c);
    CHECK(blocked == expect);
    CHECK(scales_blocked_to_plain(blocked, rows, cols, L) == plain);
    const auto chk = compare_scale_layouts(plain, blocked, rows, cols, L);
    CHECK(chk.ok);
    CHECK(chk.message.empty());
  }
}

TEST_CASE("compare_scale_layouts reports the first disagreement and non-zero padding") {
  const int64_t rows = 130, cols = 6, L = 2;
  std::vector<uint8_t> plain(size_t(L * rows * cols));
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = uint8_t(i % 200 + 1);
  const auto good = scales_plain_to_blocked(plain, rows, cols, L);
  REQUIRE(compare_scale_layouts(plain, good, rows, cols, L).ok);

  SUBCASE("a logical element differs") {
    auto bad = good;
    bad[size_t(blocked_scale_offset(129, 5, 1, rows, cols))] ^= 0x10;
    bad[size_t(blocked_scale_offset(40, 2, 1, rows, cols))] = 0x7F;  // earlier in plain order
    const auto r = compare_scale_layouts(plain, bad, rows, cols, L);
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.in_padding);
    CHECK(r.l == 1);
    CHECK(r.r == 40);
    CHECK(r.c == 2);
    CHECK(r.blocked == 0x7F);
    CHECK(r.plain == plain[size_t((1 * rows + 40) * cols + 2)]);
    CHECK(r.message.find("l 1, r 40, c 2") != std::string::npos);
  }
  SUBCASE("the plain copy differs (swapped rows)") {
    auto p2 = plain;
    std::swap(p2[size_t((0 * rows + 3) * cols + 0)], p2[size_t((0 * rows + 4) * cols + 0)]);
    const auto r = compare_scale_layouts(p2, good, rows, cols, L);
    CHECK_FALSE(r.ok);
    CHECK(r.l == 0);
    CHECK(r.r == 3);
    CHECK(r.c == 0);
  }
  SUBCASE("padding rows and columns must be zero") {
    auto bad = good;
    bad[size_t(blocked_scale_offset(200, 1, 0, rows, cols))] = 0x38;  // row padding (rows = 130)
    auto r = compare_scale_layouts(plain, bad, rows, cols, L);
    CHECK_FALSE(r.ok);
    CHECK(r.in_padding);
    CHECK(r.l == 0);
    CHECK(r.r == 200);
    CHECK(r.c == 1);
    CHECK(r.blocked == 0x38);
    auto bad2 = good;
    bad2[size_t(blocked_scale_offset(5, 7, 1, rows, cols))] = 0x01;  // column padding (cols = 6)
    r = compare_scale_layouts(plain, bad2, rows, cols, L);
    CHECK_FALSE(r.ok);
    CHECK(r.in_padding);
    CHECK(r.l == 1);
    CHECK(r.r == 5);
    CHECK(r.c == 7);
    // Conversion back ignores padding, so only the check can see it.
    CHECK(scales_blocked_to_plain(bad2, rows, cols, L) == plain);
  }
  SUBCASE("sizes") {
    auto short_blocked = good;
    short_blocked.pop_back();
    CHECK_FALSE(compare_scale_layouts(plain, short_blocked, rows, cols, L).ok);
    CHECK_THROWS_AS(scales_blocked_to_plain(short_blocked, rows, cols, L), InputError);
    auto short_plain = plain;
    short_plain.pop_back();
    CHECK_THROWS_AS(scales_plain_to_blocked(short_plain, rows, cols, L), InputError);
    CHECK_THROWS_AS(scales_plain_to_blocked(plain, 0, cols, L), InputError);
  }
}

TEST_CASE("batch-last <-> batch-first transposes") {
  const int64_t rows = 3, cols = 5, L = 4;
  const size_t es = 2;
  // Batch-last source: element (r, c, l) holds the 16-bit value r*1000 + c*10 + l.
  std::vector<uint8_t> last(size_t(rows * cols * L) * es);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t l = 0; l < L; ++l) {
        const uint16_t v = uint16_t(r * 1000 + c * 10 + l);
        const size_t at = size_t((r * cols + c) * L + l) * es;
        last[at] = uint8_t(v & 0xFF);
        last[at + 1] = uint8_t(v >> 8);
      }
  const auto first = batch_last_to_first(last.data(), rows, cols, L, es);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t at = size_t((l * rows + r) * cols + c) * es;
        CHECK(uint16_t(first[at] | (first[at + 1] << 8)) == r * 1000 + c * 10 + l);
      }
  CHECK(batch_first_to_last(first.data(), rows, cols, L, es) == last);
}
