// test_reference_cache.hpp — included by every test main: no test writes into the user's cache
// directory. ctest gives every test NVFP4_REFERENCE_CACHE (a folder of the build tree,
// tests/CMakeLists.txt); a test binary run by hand gets a folder under /tmp, set before main() so
// that every harness the test starts inherits it. A test that needs a cache of its own names it
// with --reference-cache, which wins over the variable.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace nvfp4::test {
inline const bool kReferenceCacheSet = [] {
  const std::string dir = "/tmp/nvfp4-test-reference-cache-" + std::to_string(::getuid());
  return ::setenv("NVFP4_REFERENCE_CACHE", dir.c_str(), 0) == 0;  // 0: ctest's value stays
}();
}  // namespace nvfp4::test
