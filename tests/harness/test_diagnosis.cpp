// test_diagnosis.cpp — what a failing output is named as: the misreading it computes
// (misreading.hpp) and where its flagged elements lie (compare.hpp, Locations).
//
// Each wrong output is made without the catalogue's code: the inputs themselves are changed the
// way the bug reads them (bytes swapped, scales replaced, a block of codes zeroed, batch 0 copied
// over the others) and the exact reference of the changed problem is the "output". The catalogue
// must then name that misreading, and must name nothing for a correct output, a slightly noisy one
// or garbage.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compare.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "layout.hpp"
#include "misreading.hpp"
#include "reference.hpp"

using namespace nvfp4;

namespace {

std::vector<uint16_t> output_of(const Problem& p) { return compute_reference(p).c; }

std::string named(const Problem& p, const std::vector<uint16_t>& out, const std::vector<MisreadingSource>& others = {}) {
  const auto m = find_misreading(p, out.data(), others);
  return m ? m->what : std::string("(nothing)");
}

Problem alphas(Problem p, float a1, float a2) {
  p.alpha1 = a1;
  p.alpha2 = a2;
  return p;
}

}  // namespace

TEST_SUITE("diagnosis") {
TEST_CASE("a correct output, a noisy one and garbage are named as nothing") {
  const Problem p = alphas(make_problem(Shape::parse("48x40x256x2"), "normal", 3), -1.5f, 0.75f);
  std::vector<uint16_t> c = output_of(p);
  CHECK_FALSE(find_misreading(p, c.data()));
  std::mt19937 rng(5);
  for (auto& v : c)  // one fp16 ulp of noise here and there, as fp32 accumulation gives
    if (rng() % 3 == 0 && (v & 0x7FFF) && (v & 0x7C00) != 0x7C00) v = uint16_t(v + (rng() % 2 ? 1 : -1));
  CHECK_FALSE(find_misreading(p, c.data()));
  for (auto& v : c) v = uint16_t(rng() & 0x7BFF);
  CHECK_FALSE(find_misreading(p, c.data()));
}

TEST_CASE("the epilogue's misreadings") {
  const Problem p = alphas(make_problem(Shape::parse("40x48x256"), "normal", 11), -1.5f, 0.75f);
  Problem swapped = p;  // silu on the second GEMM: the weights, their scales and alphas exchanged
  std::swap(swapped.b1, swapped.b2);
  std::swap(swapped.sfb1, swapped.sfb2);
  std::swap(swapped.alpha1, swapped.alpha2);
  CHECK(named(p, output_of(swapped)) ==
        "B1 and B2 in each other's place with their alphas: silu(alpha2*A*B2^T) * (alpha1*A*B1^T)");
  std::swap(swapped.alpha1, swapped.alpha2);  // the weights exchanged, the alphas where they were
  CHECK(named(p, output_of(swapped)) ==
        "B1 and B2 in each other's place, the alphas in theirs: silu(alpha1*A*B2^T) * (alpha2*A*B1^T)");
  CHECK(named(p, output_of(alphas(p, p.alpha1, 1.0f))) == "alpha2 not applied");
  CHECK(named(p, output_of(alphas(p, 1.0f, 1.0f))) == "neither alpha applied");
  Problem gate_twice = p;  // B1 read for both GEMMs
  gate_twice.b2 = p.b1;
  gate_twice.sfb2 = p.sfb1;
  gate_twice.alpha2 = p.alpha2;
  CHECK(named(p, output_of(gate_twice)) == "B1 (and SFB1) for both GEMMs");

  // An intermediate held in bf16: the exact G and U, scaled and rounded to bf16, then the epilogue.
  const ReferenceResult ref = compute_reference(p);
  std::vector<uint16_t> out(ref.c.size());
  auto bf16 = [](double x) {
    float f = float(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
    std::memcpy(&f, &u, 4);
    return double(f);
  };
  for (size_t i = 0; i < out.size(); ++i) {
    const double g = bf16(p.alpha1 * ref.g[i]), u = bf16(p.alpha2 * ref.u[i]);
    out[i] = fp16_from_double(g / (1 + std::exp(-g)) * u);
  }
  CHECK(named(p, out) == "alpha1*G and alpha2*U rounded to bf16 before the epilogue");

  // The output's bits are bf16, or the output is written transposed.
  for (size_t i = 0; i < out.size(); ++i) {
    const float f = float(fp16_to_double(ref.c[i]));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    out[i] = uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
  }
  CHECK(named(p, out) == "bf16 bits in the fp16 output");
  const int64_t M = p.shape.M, N = p.shape.N;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) out[size_t(n * M + m)] = ref.c[size_t(m * N + n)];
  CHECK(named(p, out) == "the output written transposed, (N, M) per batch");
  for (auto& v : out) v = 0;
  CHECK(named(p, out) == "zeros on every sampled element");
  for (auto& v : out) v = kPoisonBits;  // unwritten: the poison (a NaN) fits no misreading
  CHECK(named(p, out) == "(nothing)");
}

TEST_CASE("how the operands are read") {
  const Problem p = make_problem(Shape::parse("40x48x256"), "normal", 12);
  Problem q = p;  // B1's nibbles high first
  for (auto& b : q.b1) b = uint8_t((b << 4) | (b >> 4));
  CHECK(named(p, output_of(q)) == "B1's FP4 nibbles read high first");

  q = p;  // every operand's plain scales read at the blocked layout's offsets (0 past the array)
  auto blocked_read = [](const std::vector<uint8_t>& plain, int64_t rows, int64_t cols) {
    std::vector<uint8_t> v(plain.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t at = blocked_scale_offset(r, c, 0, rows, cols);
        v[size_t(r * cols + c)] = at < int64_t(plain.size()) ? plain[size_t(at)] : 0;
      }
    return v;
  };
  const int64_t cols = p.shape.K / 16;
  q.sfa = blocked_read(p.sfa, p.shape.M, cols);
  q.sfb1 = blocked_read(p.sfb1, p.shape.N, cols);
  q.sfb2 = blocked_read(p.sfb2, p.shape.N, cols);
  CHECK(named(p, output_of(q)) == "every operand's plain scales read as the blocked (128x4-tiled) layout");

  q = p;  // A's scales one per 32 elements: element k takes scale k/32
  for (int64_t m = 0; m < p.shape.M; ++m)
    for (int64_t b = 0; b < cols; ++b) q.sfa[size_t(m * cols + b)] = p.sfa[size_t(m * cols + b / 2)];
  CHECK(named(p, output_of(q)) == "A's block scales taken one per 32 elements (scale k/32 for element k)");

  q = p;  // SFB1 and SFB2 exchanged
  std::swap(q.sfb1, q.sfb2);
  CHECK(named(p, output_of(q)) == "B1's and B2's scales in each other's place");
}

TEST_CASE("which part of K, which batch, which call") {
  const Problem p = make_problem(Shape::parse("40x48x208"), "normal", 13);
  Problem q = p;  // the tail beyond 192 = 3 x 64 dropped: its codes zeroed
  for (int64_t r = 0; r < p.shape.M; ++r)
    for (int64_t k = 192; k < 208; k += 2) q.a[size_t(r * 104 + k / 2)] = 0;
  CHECK(named(p, output_of(q)) == "K cut to its first 192 elements");  // (also [192, 208) left out)

  q = p;  // the block [64, 80) left out in every row of A
  for (int64_t r = 0; r < p.shape.M; ++r)
    for (int64_t k = 64; k < 80; k += 2) q.a[size_t(r * 104 + k / 2)] = 0;
  CHECK(named(p, output_of(q)) == "the K elements [64, 80) left out");

  q = p;  // the block [96, 112) counted twice: A's scale there doubled (one more exponent step)
  const int64_t nsf = p.shape.K / 16;
  for (int64_t r = 0; r < p.shape.M; ++r) {
    uint8_t& s = q.sfa[size_t(r * nsf + 6)];
    const int e = (s >> 3) & 0xF;
    REQUIRE((e >= 1 && e < 14));  // a normal E4M3 number far from the top: doubling is exact
    s = uint8_t(s + 8);
  }
  CHECK(named(p, output_of(q)) == "the K elements [96, 112) counted twice");

  const Problem b = make_problem(Shape::parse("16x24x128x3"), "normal", 14);
  q = b;  // batch 0's weights for every batch
  const size_t wb = size_t(24 * 64), sb = size_t(24 * 8);
  for (int l = 1; l < 3; ++l) {
    std::memcpy(q.b1.data() + l * wb, b.b1.data(), wb);
    std::memcpy(q.b2.data() + l * wb, b.b2.data(), wb);
    std::memcpy(q.sfb1.data() + l * sb, b.sfb1.data(), sb);
    std::memcpy(q.sfb2.data() + l * sb, b.sfb2.data(), sb);
  }
  CHECK(named(b, output_of(q)) == "every batch with batch 0's weights");

  // The activation scales kept from an earlier call's inputs.
  const Problem earlier = make_problem(p.shape, "normal", 99);
  q = p;
  q.sfa = earlier.sfa;
  CHECK(named(p, output_of(q), {{"call 1's inputs", &earlier}}) == "A's block scales from call 1's inputs");
  CHECK(named(p, output_of(q)) == "(nothing)");  // without the earlier inputs nothing explains it
}

TEST_CASE("where the flagged elements lie") {
  const Problem p = make_problem(Shape::parse("60x90x128x2"), "normal", 21);
  ReferenceOptions o;
  o.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, o);
  auto flagged_text = [&](const std::vector<uint16_t>& out) {
    return compare_output(ref, p.alpha1, p.alpha2, out.data(), nullptr, nullptr, 1).flagged.text();
  };
  CHECK(flagged_text(ref.c).empty());
  const int64_t M = 60, N = 90;
  std::vector<uint16_t> out = ref.c;  // lane 3 of 4 off by 64 ulps
  for (size_t i = 0; i < out.size(); ++i)
    if (int64_t(i) % N % 4 == 3 && (out[i] & 0x7FFF) > 0x0400 && (out[i] & 0x7C00) != 0x7C00) out[i] = uint16_t(out[i] + 64);
  CHECK(flagged_text(out) == "columns n % 4 == 3");
  out = ref.c;  // the M tail past 56 = 7 x 8 and the N tail past 88 = 11 x 8 left unwritten
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        if (m >= 56 || n >= 88) out[size_t((l * M + m) * N + n)] = kPoisonBits;
  CHECK(flagged_text(out) == "the M and N tails past the last whole tile of 8 (rows >= 56 or columns >= 88)");
  out = ref.c;  // one tile of 16 x 32 in batch 1
  for (int64_t m = 16; m < 32; ++m)
    for (int64_t n = 32; n < 64; ++n) out[size_t((M + m) * N + n)] ^= 0x4000;
  CHECK(flagged_text(out) == "batch 1 (the last), rows 16..31, columns 32..63");
}
}

TEST_SUITE("diagnosis") {
// Found by a review: each failed before its fix.
TEST_CASE("an unwritten output on data with NaN-making bytes names nothing") {
  const Problem p = make_problem(Shape::parse("9x129x1040"), "suspicious", 1);
  const std::vector<uint16_t> out(size_t(p.shape.c_elems()), kPoisonBits);
  CHECK(named(p, out) == "(nothing)");  // was: every operand's scale bytes decoded as E4M3FNUZ
}
TEST_CASE("misreadings this data cannot tell apart are named together") {
  const Problem p = make_problem(Shape::parse("40x48x256"), "normal", 12);
  Problem q = p;  // the weights' scales decoded as FNUZ: each halved, as A's halved would give too
  for (auto* sf : {&q.sfb1, &q.sfb2})
    for (auto& b : *sf)
      if ((b >> 3) & 0xF) b = uint8_t(b - 8);
  const std::string name = named(p, output_of(q));
  CHECK(name.find("scale bytes decoded as E4M3FNUZ (bias 8), or equally ") != std::string::npos);
  CHECK(name.find("B1's and B2's scale bytes decoded as E4M3FNUZ") != std::string::npos);
  CHECK(name.find("(this data cannot tell them apart") != std::string::npos);
}
TEST_CASE("a region is named only where chance would not put the flagged elements") {
  Locations at;
  at.shape = Shape::parse("60x90x128");
  for (int64_t m : {10, 20})
    for (int64_t n = 0; n < 90; ++n) at.add(0, m, n);
  CHECK(at.text() == "rows 10..20 (2 of them)");  // was: rows 10..20 with m % 2 == 0
  Locations few;
  few.shape = Shape::parse("300x300x256");
  for (int64_t i : {17, 150, 299}) few.add(0, i, (i * 7) % 300);
  CHECK(few.text().empty());
}
}
