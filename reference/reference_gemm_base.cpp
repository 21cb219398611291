// reference_gemm_base.cpp — the GEMM kernels at the build's baseline ISA, and the run-time choice
// among the per-ISA copies (reference_gemm.hpp explains the scheme).
#define NVFP4_GEMM_FN gemm_kernels_baseline
#define NVFP4_GEMM_ISA_NAME "baseline"
#define NVFP4_EIGEN_NS Eigen_nvfp4_baseline
#include "reference_gemm.inc"

#include "errors.hpp"

namespace nvfp4 {
namespace detail {

namespace {
bool cpu_has(const char* isa) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider register state (XCR0).
  if (std::string(isa) == "x86-64-v3")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
  if (std::string(isa) == "x86-64-v4")
    return cpu_has("x86-64-v3") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#endif
  return std::string(isa) == "baseline";
}
}  // namespace

std::vector<const GemmKernels*> usable_gemm_kernels() {
  std::vector<const GemmKernels*> v;
  for (const GemmKernels* k : {gemm_kernels_x86v4(), gemm_kernels_x86v3(), gemm_kernels_baseline()})
    if (k && cpu_has(k->isa)) v.push_back(k);
  return v;
}

const GemmKernels& gemm_kernels(const std::string& isa) {
  static const std::vector<const GemmKernels*> usable = usable_gemm_kernels();
  if (isa.empty()) return *usable.front();
  std::string names;
  for (const GemmKernels* k : usable) {
    if (isa == k->isa) return *k;
    names += (names.empty() ? "" : ", ") + std::string(k->isa);
  }
  throw InputError("GEMM kernels for ISA '" + isa + "' are not available on this CPU/build (usable: " +
                   names + ")");
}

}  // namespace detail
}  // namespace nvfp4
