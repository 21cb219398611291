// misreading.hpp — what a failing output computes instead: the dual GEMM under a catalogue of
// misreadings of its inputs, judged on a sample of output elements.
//
// A FAIL says that an output is wrong; a kernel engineer needs to know how. Most gross bugs are a
// misreading of one input or of the epilogue: B1 and B2 in the other order, an alpha dropped, the
// FP4 nibbles swapped, E4M3 scales decoded as MX's UE8M0, plain scales read in the blocked layout,
// the K tail beyond the last whole tile dropped, every batch computed with batch 0's weights, one
// tensor (the activation scales, the weights) kept from an earlier call, an intermediate held in
// bf16, the output written as bf16 or transposed. Each entry of the catalogue is one such
// deviation from the definition (docs/design.md §1); a failing output that agrees with one of them
// and not with the reference names its bug class. See docs/design.md §4.14.
//
// The judgment, per entry h, over the sampled elements (at most kMisreadingSamples, spread over
// batches, rows and columns, the first and last of each included): an element *tells h apart* when
// the reference's value and h's are not near each other (near: both NaN, the same infinity, or
// within 2 fp16 ulps of the larger plus 2^-10 of the sample's RMS). h is reported when at least 8
// elements tell it apart, the output is near h's value and nearer to it than to the reference's on
// at least 90% of them, and near h's value on at least 90% of all sampled elements. Of several
// such entries the one that fits best (then the one that more elements tell apart, then the
// earlier in the catalogue) is named. Nothing is claimed when no entry fits: the catalogue is of
// named classes, not a search for any function that fits.
//
// Cost: the sampled G and U of every entry are dot products over K from the packed bytes (decoded
// rows cached per entry): about (entries x samples x 2K) multiply-adds, ~0.1 s at K = 7168. It runs
// only for a failing output.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

constexpr int kMisreadingSamples = 128;

// Inputs the path was handed in other calls (the warm-up's, another checked call's): the sources
// of the "kept from an earlier call" entries. `label` reads after "from": "call 1's inputs".
struct MisreadingSource {
  std::string label;
  const Problem* problem = nullptr;  // same shape as the call's own
};

struct MisreadingMatch {
  std::string what;  // "B1's FP4 nibbles read high first" (", or equally ..." where the data cannot tell)
  std::string hint;  // what kind of bug gives it, as a question
  int fitting = 0;   // elements telling it apart on which the output fits it
  int apart = 0;     // elements telling it apart from the reference
  int sampled = 0;
  // "the output matches B1's FP4 nibbles read high first, on 97 of the 100 sampled elements that
  // tell it from the reference: <hint>"
  std::string text() const;
};

// The best-fitting misreading of `p` that `out` (fp16 bits, (L, M, N)) computes, if any.
std::optional<MisreadingMatch> find_misreading(const Problem& p, const uint16_t* out,
                                               const std::vector<MisreadingSource>& others = {});

// How many entries the catalogue has for `p` with `others` (for tests and the docs).
int misreading_catalogue_size(const Problem& p, const std::vector<MisreadingSource>& others = {});

}  // namespace nvfp4
