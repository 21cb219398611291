// distributions.hpp — named, seeded input generators (DESIGN §4). Same (shape, name, seed) gives
// the same bytes on every machine (the generator is specified here, not the C++ library's).
//
//   normal    realistic: N(0,1) data quantized to NVFP4 with block scale E4M3(amax/6)
//   uniform   every E2M1 code and scale bytes spread over [2^-4, 2^4] (non-negative, finite)
//   edge      edge scales: subnormal, 448, zero, mixed with ordinary ones; full-range codes
//   gpumode   the GPU MODE generator's narrow range: codes from bytes & 0xBB (values {0,+-0.5,
//             +-1,+-1.5}), scales E4M3(U[0,1))
//   ones      every value 1.0 and every scale 1.0 (C = silu(K)*K)
//   identity  A and B are 0/1 "identity-like" patterns so that each output names its indices
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

const std::vector<std::string>& distribution_names();
// Throws InputError for an unknown name.
Problem make_problem(const Shape& shape, const std::string& distribution, uint64_t seed);

}  // namespace nvfp4
