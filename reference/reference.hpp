// reference.hpp — the exact CPU reference (DESIGN §2). The only component called "reference".
//
// Every decoded product a*sa*b*sb is an integer multiple of 2^-20 below 2^23 in magnitude, so
// G = A*B1^T and U = A*B2^T are computed exactly (double sums certified by a bound on sum|terms|,
// with an exact integer fallback). C = fp16_rne(silu(alpha1*G) * (alpha2*U)), the epilogue in
// double from the exact G and U, rounded to fp16 once. IEEE overflow gives +-inf; a NaN scale
// makes every output it touches NaN.
#pragma once
#include <cstdint>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

struct ReferenceOptions {
  // Also compute sum_k |a*sa*b*sb| per output element (needed by the harness tolerance).
  bool abs_sums = false;
};

struct ReferenceResult {
  Shape shape;
  std::vector<double> g, u;          // exact A*B1^T, A*B2^T (alpha NOT applied), (L, M, N)
  std::vector<uint16_t> c;           // fp16 bits, (L, M, N)
  std::vector<double> g_abs, u_abs;  // sum of |terms| per element; empty unless requested
};

ReferenceResult compute_reference(const Problem& p, const ReferenceOptions& opt = {});

// The epilogue alone, in double, rounded once to fp16: fp16(silu(alpha1*g) * (alpha2*u)).
uint16_t reference_epilogue(double g, double u, float alpha1, float alpha2);

}  // namespace nvfp4
