// check_json.hpp — how the project writes JSON, and check_report's JSON as values: for the harness's
// own writers (reports, merge, bench). Not installed: it includes nlohmann/json, which consumers of
// the package need not have (check_report.hpp gives them the same JSON as text).
//
// Every JSON document the project writes is a Json (nlohmann::ordered_json: members stay in the
// order written, so reports read top-down and diffs between runs are stable) turned into text by
// json_text alone, which fixes the conventions every reader relies on:
//   - compact (no whitespace), UTF-8 as is (no \u escapes beyond control characters);
//   - a double that is NaN or infinite is written as null (JSON has neither; a member that must
//     tell them apart is written as a string by its writer);
//   - doubles in the shortest form that reads back as the same double; integers as integers;
//   - bytes that are not UTF-8 (a child's log may hold anything) become U+FFFD, so every document
//     is valid UTF-8 and writing one never throws.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "compare.hpp"

namespace nvfp4 {

using Json = nlohmann::ordered_json;

// The text of `j` under the conventions above.
std::string json_text(const Json& j);

// One comparison: the "metrics" of a trial in `harness --json` (check_report.hpp).
Json comparison_json(const Comparison& c);

}  // namespace nvfp4
