// text.hpp — number-to-text helpers shared by the report writers (one definition instead of a local
// copy per file).
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

namespace nvfp4 {

// printf-style formatting of one number, e.g. fmt("%.3f", seconds).
inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The same, or "-" for NaN and infinities (table cells that have no value).
inline std::string fmt_or_dash(const char* format, double v) { return std::isfinite(v) ? fmt(format, v) : "-"; }

}  // namespace nvfp4
