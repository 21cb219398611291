// problem.hpp — one instance of the dual GEMM: shapes and the raw NVFP4 bytes (docs/design.md §1).
//
// Per batch index l in [0, L):
//   A      (L, M, K/2) bytes, packed E2M1, element 2j in the low nibble of byte j
//   B1, B2 (L, N, K/2) bytes, same packing ("K-major": the GEMM is A * B^T)
//   SFA    (L, M, K/16) E4M3FN bytes, "plain" layout (one scale per 16 consecutive K elements)
//   SFB1/2 (L, N, K/16) E4M3FN bytes
//   C      (L, M, N) fp16 = silu(alpha1 * A*B1^T) * (alpha2 * A*B2^T)
// All arrays are C-contiguous with the batch outermost. K must be a multiple of 16; M, N, L >= 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {

struct Shape {
  int64_t M = 0, N = 0, K = 0, L = 1;

  int64_t a_bytes() const { return L * M * (K / 2); }
  int64_t b_bytes() const { return L * N * (K / 2); }
  int64_t sfa_bytes() const { return L * M * (K / 16); }
  int64_t sfb_bytes() const { return L * N * (K / 16); }
  int64_t c_elems() const { return L * M * N; }
  // Multiply-adds times 2, for both GEMMs: 4*M*N*K*L.
  double flops() const { return 4.0 * double(M) * double(N) * double(K) * double(L); }

  // "MxNxK" when L == 1, else "MxNxKxL" (the token --shape parses).
  std::string str() const;
  // Parses "MxNxK" or "MxNxKxL"; throws InputError with the reason on anything else.
  static Shape parse(const std::string& text);
  // Throws InputError unless K % 16 == 0, K > 0, and M, N, L >= 1 (and sizes fit in memory math).
  void validate() const;

  bool operator==(const Shape& o) const { return M == o.M && N == o.N && K == o.K && L == o.L; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

// Which inputs change between calls (fresh inputs, docs/design.md §3): an engine rewrites the
// activations (A, SFA) for every call while the weights stay; `All` also rewrites B1, B2, SFB1,
// SFB2 and the global scales alpha1, alpha2.
enum class InputSet { Activations, All };
const char* input_set_name(InputSet s);  // "activations", "all"

struct Problem {
  Shape shape;
  std::vector<uint8_t> a, b1, b2;        // packed E2M1
  std::vector<uint8_t> sfa, sfb1, sfb2;  // E4M3FN, plain layout
  float alpha1 = 1.0f, alpha2 = 1.0f;    // optional per-tensor fp32 global scales

  // Allocates zeroed arrays of the right sizes for `s` (validates s first).
  static Problem zeros(const Shape& s);
  // Throws InputError naming the first array whose size disagrees with the shape.
  void validate() const;
};

}  // namespace nvfp4
