// decoded_case.hpp — a generated case with its exact reference (abs sums included) and its FP4
// operands decoded to fp32, for tests that simulate a path's arithmetic (test_compare,
// test_criteria). L = 1: a is (M, K), b1 and b2 (N, K).
#pragma once
#include <cstdint>
#include <vector>

#include "cpu/cpu_common.hpp"
#include "distributions.hpp"
#include "reference.hpp"

namespace nvfp4::test {

struct DecodedCase {
  Problem p;
  ReferenceResult ref;
  std::vector<float> a, b1, b2;
};

inline DecodedCase make_decoded_case(const char* shape, const char* dist, uint64_t seed) {
  DecodedCase d;
  d.p = make_problem(Shape::parse(shape), dist, seed);
  ReferenceOptions o;
  o.abs_sums = true;
  d.ref = compute_reference(d.p, o);
  const Shape& s = d.p.shape;
  d.a.resize(size_t(s.M * s.K));
  d.b1.resize(size_t(s.N * s.K));
  d.b2.resize(size_t(s.N * s.K));
  cpu::decode_rows_f32(d.p.a.data(), d.p.sfa.data(), s.M, s.K, d.a.data());
  cpu::decode_rows_f32(d.p.b1.data(), d.p.sfb1.data(), s.N, s.K, d.b1.data());
  cpu::decode_rows_f32(d.p.b2.data(), d.p.sfb2.data(), s.N, s.K, d.b2.data());
  return d;
}

}  // namespace nvfp4::test
