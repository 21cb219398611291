// gpu_skip.hpp — a GPU test case that cannot run here says so instead of passing: skip() prints the
// reason, and the test executable (support/gpu_main.cpp) then exits 125, which ctest reports as SKIP,
// unless a test failed. Use it as `if (!have_x()) return nvfp4::test::skip("why");`.
#pragma once
#include <string>

namespace nvfp4::test {
void skip(const std::string& why);
}  // namespace nvfp4::test
