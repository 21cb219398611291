// case_dir.hpp — the on-disk interchange: a directory of .npy files (docs/design.md §1).
//
//   a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy   uint8, shapes (L, rows, K/2) and (L, rows, K/16)
//                                                   (2-D arrays mean L = 1)
//   c.npy (optional)                                float16, (L, M, N) or (M, N)
// With `batch_last`, arrays are (rows, K/2, L) etc., the order some tools use; they are
// transposed into the library's batch-first order on load.
// Every inconsistency (missing file, wrong dtype, shapes that disagree, K not a multiple of 16)
// throws InputError naming the file.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

Problem load_case(const std::string& dir, bool batch_last = false);
// The problem's shape from the six headers alone, with every check load_case makes except those
// of the data itself (which it does not read): how much a case needs, known before it is loaded.
Shape read_case_shape(const std::string& dir, bool batch_last = false);
// Writes the six input files (batch-first, 3-D when L > 1, else 2-D).
void save_case(const std::string& dir, const Problem& p);
// Reads an fp16 output array (L, M, N) or (M, N) and checks it against `shape`.
std::vector<uint16_t> load_output(const std::string& path, const Shape& shape, bool batch_last = false);
void save_output(const std::string& path, const Shape& shape, const std::vector<uint16_t>& c);

}  // namespace nvfp4
