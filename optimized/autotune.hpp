// autotune.hpp — where the autotune optimization (autotune.cpp) keeps its on-disk cache, for the
// harness's up-front check of --tune-cache.
#pragma once
#include <string>

namespace nvfp4 {

// <dir>/autotune-cache.txt, a regular text file (one line per result; autotune.cpp).
std::string autotune_cache_file(const std::string& dir);

}  // namespace nvfp4
