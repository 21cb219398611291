// junit.hpp — the JUnit XML form of a verify/bisect report (`harness --junit FILE`), for CI
// systems that show test results from JUnit files.
//
// Input: the JSON report (report.cpp write_json), parsed (json_read.hpp), whether from this run or
// from a file, so one code path serves both. Output, in the common JUnit format
// (tests/report/junit.xsd is the schema the tests validate against):
//   <testsuites>  with the report's totals and elapsed time
//     <testsuite name="nvfp4-dual.BACKEND">  one per backend, in report order
//       <testcase classname="BACKEND.COMBO" name="CASE" time="WALL_S">  one per trial
//         FAIL                   -> <failure type="FAIL" message="...">details</failure>
//         ERROR, CRASH, TIMEOUT  -> <error type="OUTCOME" message="...">details</error>
//         SKIP, BLOCKED          -> <skipped message="OUTCOME: reason"/>
//         <system-out>          the one-line summary and the reproducer (every trial)
// A failing trial's details name the stage, the message, the metrics (every field of the report's
// "metrics" object, so fields added later appear) and the paste-able reproducer. A backend whose
// probe failed (its trials are then all BLOCKED) adds one <error> testcase "BACKEND.probe", so a
// report whose harness exit code is 1 always shows a failure or an error in JUnit.
#pragma once
#include <ostream>

#include "json_read.hpp"

namespace nvfp4 {

// Writes the JUnit XML of `report`; InputError when it is not a verify/bisect report.
void write_junit(std::ostream& os, const JsonValue& report);

}  // namespace nvfp4
