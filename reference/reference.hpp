// reference.hpp — the exact CPU reference (docs/design.md §2). The only component called "reference".
//
// Every decoded product a*sa*b*sb is an integer multiple of 2^-20 below 2^23 in magnitude, so
// G = A*B1^T and U = A*B2^T are computed exactly (double sums certified by a bound on sum|terms|,
// with an exact integer fallback). C = fp16_rne(silu(alpha1*G) * (alpha2*U)), the epilogue in
// double from the exact G and U, rounded to fp16 once. IEEE overflow gives +-inf; a NaN scale
// makes every output it touches NaN.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

struct ReferenceOptions {
  // Also compute sum_k |a*sa*b*sb| per output element (needed by the harness tolerance).
  // The sums are upper bounds, at most a factor (1 + 4(K+1) 2^-24) above the exact value (an fp32
  // GEMM of |A| |B|^T scaled up; fp64 and 2^-53 beyond K = 2^22; reference.cpp proves it). NaN
  // where a NaN scale is touched.
  bool abs_sums = false;
  // Worker threads; 0 means std::thread::hardware_concurrency(). Results do not depend on it.
  int threads = 0;
  // GEMM kernels: "" picks the best this CPU runs; "baseline", "x86-64-v3", "x86-64-v4" force one
  // (InputError if unusable here). Results do not depend on it (the sums are certified exact).
  std::string isa;
};

// ReferenceResult's q of a row without any nonzero element: its terms are all zero.
constexpr int32_t kZeroRowQ = 1 << 20;
// The block exponent of a block without terms; twice it still fits a uint8_t sum.
constexpr int kZeroBlockQ = 127;

struct ReferenceResult {
  Shape shape;
  // Exact A*B1^T, A*B2^T (alpha NOT applied), (L, M, N). (Only a value needing more than 53
  // significant bits — possible only when |G| > 2^33 — is rounded once, to nearest-even.)
  std::vector<double> g, u;
  std::vector<uint16_t> c;           // fp16 bits, (L, M, N)
  std::vector<double> g_abs, u_abs;  // upper bounds of sum |terms| per element; empty unless requested
  // With abs_sums (empty otherwise): per row of A, (L, M), and of B1 and B2, (L, N), the smallest
  // number of trailing zero bits q of a nonzero I = (2*e2m1) * (512*e4m3) in the row's non-NaN
  // blocks (kZeroRowQ when there is none). Every term of G[l, m, n] is an integer multiple of
  // 2^(q_a[l, m] + q_b1[l, n] - 20), every term of U of 2^(q_a[l, m] + q_b2[l, n] - 20): with the
  // abs sums this certifies where fp32 accumulation is exact (harness/check/compare.hpp, Certificate).
  std::vector<int32_t> q_a, q_b1, q_b2;
  // The same per block of 16: (L, M, K/16) for A, (L, N, K/16) for B1 and B2 (kZeroBlockQ for a
  // block without a nonzero element or with a NaN scale). Every term of block b of G[l, m, n] is a
  // multiple of 2^(qb_a[l, m, b] + qb_b1[l, n, b] - 20): the minimum over b is a finer quantum for
  // the element than the rows' q when the rows' smallest exponents lie in different blocks.
  std::vector<uint8_t> qb_a, qb_b1, qb_b2;
  // How the G and U elements were certified (reference.cpp): elements the row-norm bound could
  // not certify, settled by the |A| |B|^T GEMM (tier 2) or recomputed in integers (tier 3).
  int64_t certified_by_abs_gemm = 0;
  int64_t integer_fallback = 0;
};

ReferenceResult compute_reference(const Problem& p, const ReferenceOptions& opt = {});

// The epilogue alone, in double, rounded once to fp16: fp16(silu(alpha1*g) * (alpha2*u)).
uint16_t reference_epilogue(double g, double u, float alpha1, float alpha2);

// The GEMM kernel ISAs usable on this CPU, best first (values for ReferenceOptions::isa).
std::vector<std::string> reference_isas();

}  // namespace nvfp4
