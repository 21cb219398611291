// bench_row.hpp — the timing members of a bench row, written alike by the parent's rows
// (bench_cli.cpp) and the GPU extras child's (optimized/gpu/bench.cpp); bench_cli.cpp extras_row
// reads the extras' back by these names.
#pragma once
#include "check_json.hpp"
#include "plan.hpp"

namespace nvfp4 {

// reps, median_us, min_us, mean_us, stdev_us, median_rse and b2b_us (`b2b_s`: the back-to-back
// figure in seconds), appended to `row` in that order; a figure not measured (NaN) is null.
inline void add_timing_members(Json& row, const Timing& t, double b2b_s) {
  row["reps"] = t.reps;
  row["median_us"] = t.median * 1e6;
  row["min_us"] = t.min * 1e6;
  row["mean_us"] = t.mean * 1e6;
  row["stdev_us"] = t.stdev * 1e6;
  row["median_rse"] = t.rse;
  row["b2b_us"] = b2b_s * 1e6;
}

}  // namespace nvfp4
