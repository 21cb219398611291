// autotune.hpp — the autotune optimization (autotune.cpp): its registration entry for a backend's
// module, and where it keeps its on-disk cache (also for the harness's up-front check of
// --tune-cache, which must not link path code: hence inline).
#pragma once
#include <string>

#include "registry.hpp"

namespace nvfp4 {

// <dir>/autotune-cache.txt, a regular text file (one line per result; autotune.cpp).
inline std::string autotune_cache_file(const std::string& dir) { return dir + "/autotune-cache.txt"; }

// The autotune wrapper for `backend`: each backend's module registers it for itself (cpu/plain.cpp,
// gpu/plain.cu, nocuda/gpu_unavailable.cpp).
Optimization autotune_for(const char* backend);

}  // namespace nvfp4
