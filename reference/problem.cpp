// problem.cpp — Shape parsing/validation and Problem allocation.
#include "problem.hpp"

#include <cstdlib>
#include <sstream>

#include "errors.hpp"

namespace nvfp4 {

const char* input_set_name(InputSet s) {
  return s == InputSet::All ? "all" : "activations";
}


std::string Shape::str() const {
  std::ostringstream os;
  os << M << 'x' << N << 'x' << K;
  if (L != 1) os << 'x' << L;
  return os.str();
}

Shape Shape::parse(const std::string& text) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find('x', pos);
    if (next == std::string::npos) next = text.size();
    const std::string part = text.substr(pos, next - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12)
      throw InputError("bad shape '" + text + "': expected MxNxK or MxNxKxL with positive integers");
    v.push_back(std::strtoll(part.c_str(), nullptr, 10));
    pos = next + 1;
  }
  if (v.size() != 3 && v.size() != 4)
    throw InputError("bad shape '" + text + "': expected MxNxK or MxNxKxL");
  Shape s;
  s.M = v[0];
  s.N = v[1];
  s.K = v[2];
  s.L = v.size() == 4 ? v[3] : 1;
  s.validate();
  return s;
}

void Shape::validate() const {
  if (M < 1 || N < 1 || L < 1 || K < 1)
    throw InputError("bad shape " + str() + ": M, N, K and L must be at least 1");
  if (K % 16 != 0)
    throw InputError("bad shape " + str() + ": K = " + std::to_string(K) +
                     " is not a multiple of 16 (one E4M3 scale per 16 elements)");
  constexpr int64_t kMax = int64_t(1) << 40;
  if (M > kMax / N || M * N > kMax / L || K > (int64_t(1) << 24))
    throw InputError("bad shape " + str() + ": too large");
}

Problem Problem::zeros(const Shape& s) {
  s.validate();
  Problem p;
  p.shape = s;
  p.a.assign(size_t(s.a_bytes()), 0);
  p.b1.assign(size_t(s.b_bytes()), 0);
  p.b2.assign(size_t(s.b_bytes()), 0);
  p.sfa.assign(size_t(s.sfa_bytes()), 0);
  p.sfb1.assign(size_t(s.sfb_bytes()), 0);
  p.sfb2.assign(size_t(s.sfb_bytes()), 0);
  return p;
}

void Problem::validate() const {
  shape.validate();
  auto check = [&](const std::vector<uint8_t>& v, int64_t want, const char* name) {
    if (int64_t(v.size()) != want)
      throw InputError(std::string(name) + " has " + std::to_string(v.size()) + " bytes; shape " +
                       shape.str() + " needs " + std::to_string(want));
  };
  check(a, shape.a_bytes(), "A");
  check(b1, shape.b_bytes(), "B1");
  check(b2, shape.b_bytes(), "B2");
  check(sfa, shape.sfa_bytes(), "SFA");
  check(sfb1, shape.sfb_bytes(), "SFB1");
  check(sfb2, shape.sfb_bytes(), "SFB2");
}

}  // namespace nvfp4
