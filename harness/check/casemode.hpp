// casemode.hpp — checking outside outputs on a case directory (docs/design.md §1, §4).
//
//   harness --inputs DIR --save-output C.npy        the reference's C (or a path's, with --verify COMBO)
//   harness --inputs DIR --check C.npy              compares C.npy with the reference
//   harness --inputs DIR                            checks DIR/c.npy when present
// A case directory holds a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy (uint8; (L, rows, K/2) and
// (L, rows, K/16), or 2-D for L = 1; (rows, K/2, L) with --batch-last) and optionally c.npy (fp16).
// Bad input throws InputError naming the file (exit 2 in main).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cases.hpp"
#include "compare.hpp"

namespace nvfp4 {

struct CheckResult {
  std::shared_ptr<const CaseInfo> info;  // reference, degeneracy, suspicious-data warnings
  Comparison cmp;
};

// Loads the case (validating it), computes the exact reference and compares `output_npy` (fp16,
// (L, M, N) or (M, N); (M, N, L) with batch_last) against it.
CheckResult check_output_file(const CaseSpec& c, const std::string& output_npy);

// Loads the case and writes the reference's C to `output_npy` (see write_output_npy).
// Returns the case's suspicious-data warnings.
std::vector<std::string> save_reference_output(const CaseSpec& c, const std::string& output_npy);

// Writes C (L*M*N fp16 bits, (L, M, N)) as fp16 .npy in the case's order: (L, M, N), or (M, N, L)
// when the inputs were batch-last, so an output can be checked with the same flags; 2-D when L = 1.
void write_output_npy(const std::string& path, const Shape& shape, const std::vector<uint16_t>& c,
                      bool batch_last);

}  // namespace nvfp4
