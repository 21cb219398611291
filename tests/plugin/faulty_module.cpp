// faulty_module.cpp — a built-in backend module (harness/backends/modules.hpp) whose load-time work goes
// wrong, the C++ form of a Python submission's init-at-import gone bad. Built as
// libnvfp4_paths_gpu.so into a test paths folder next to the real cpu module
// (tests/plugin/CMakeLists.txt), one folder per defect:
//   FAULTY_LOAD_HANG   a static initializer that never returns (a hang at load)
//   FAULTY_LOAD_CRASH  a static initializer that raises SIGSEGV (a crash at load)
//   FAULTY_LOAD_SLOW   a static initializer that works for 3 s, then registers nothing
// test_builtin_load.cpp asserts that the harness starts at once, the cpu backend still runs, and
// the gpu backend's load is TIMEOUT, CRASH or ERROR in stage load.
#include <unistd.h>

#include <csignal>

namespace {
struct LoadTimeWork {
  LoadTimeWork() {
#if defined(FAULTY_LOAD_HANG)
    for (;;) pause();
#elif defined(FAULTY_LOAD_CRASH)
    std::raise(SIGSEGV);
#elif defined(FAULTY_LOAD_SLOW)
    sleep(3);
#endif
  }
};
const LoadTimeWork work;
}  // namespace
