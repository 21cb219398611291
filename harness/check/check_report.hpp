// check_report.hpp — one output made elsewhere, checked against the exact reference: the
// in-memory form of `harness --inputs DIR --check C.npy`, and its report as text and as JSON
// (docs/design.md §4). Used by the Python module (python/) and by C++ consumers of the package.
//
// The text is what the CLI prints for a case-directory check; the JSON carries the comparison in
// the same form as a trial's "metrics" in `harness --json`. Evaluation lives in compare.hpp; this
// file only runs it and formats it. Nothing here prints on its own or exits.
//
// Layouts: a Problem is batch-first (problem.hpp); the output is L*M*N fp16 bit patterns, (L, M, N).
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "casemode.hpp"

namespace nvfp4 {

// Computes the exact reference of `p` (with the sums the tolerance needs), the case's flags
// (degeneracy, suspicious scale bytes) and compares `output` (p.shape.c_elems() fp16 patterns,
// (L, M, N)) with it. The returned CaseInfo keeps the reference's arrays only when
// `keep_reference` is true (they are 36 bytes per output element).
CheckResult check_output(const Problem& p, const uint16_t* output, bool keep_reference = false);

// The tolerance report of one comparison as indented lines (the lines under a failing trial).
void write_comparison_text(std::ostream& os, const Comparison& c, const std::string& indent);
// The comparison as one JSON object (the "metrics" of a trial in `harness --json`), compact, without
// a line break. Non-finite numbers are written as null.
void write_comparison_json(std::ostream& os, const Comparison& c);

// The whole check as the CLI prints it: the case (named `case_name`), its warnings and
// degeneracy, the verdict on `output_name`, then the comparison.
void write_check_text(std::ostream& os, const CaseInfo& info, const Comparison& c, const std::string& case_name,
                      const std::string& output_name);
// The whole check as one JSON object, compact, without a line break: {"ok", "case", "shape", "output",
// "alpha1", "alpha2", "reference_s", "degenerate", "degeneracy", "warnings", "metrics"}.
void write_check_json(std::ostream& os, const CaseInfo& info, const Comparison& c, const std::string& case_name,
                      const std::string& output_name);

}  // namespace nvfp4
