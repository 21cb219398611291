// pool.hpp — how a session runs a list of trials: workers or one process per trial (--isolate),
// how many at once (--jobs) and on which GPUs (--gpus); docs/design.md §4.
//
// --isolate worker (the default): one worker child (worker.hpp) runs the trials of one (backend,
// combination) one after another; a trial that does not end cleanly ends its worker and the
// group's next trial starts a fresh one. --isolate trial: one child per trial.
// --jobs N: N slots run at once, each its own worker (or its own one-trial children); the units a
// slot takes are the (backend, combination) groups of the list, split by case into more units
// when there are fewer groups than slots. Results are recorded and printed in the order of the
// list, whatever order they finish in. The default is one slot per GPU given with --gpus (or by
// ctest), else 1: a path may use the whole device (the GPU backend) or every core (the cpu
// backend's own threads), so several trials on one device do not finish sooner and make its
// stage times, and autotune's choices, depend on what runs beside it.
// --gpus LIST|all: slot k runs with CUDA_VISIBLE_DEVICES set to entry k mod |LIST|.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

enum class Isolation { Worker, Trial };
const char* isolation_name(Isolation i);  // "worker", "trial"
// "worker" or "trial"; InputError otherwise.
Isolation parse_isolation(const std::string& text);

struct RunPolicy {
  Isolation isolate = Isolation::Worker;
  int jobs = 1;
  std::vector<std::string> gpus;  // CUDA_VISIBLE_DEVICES of the slots, round-robin; empty: unchanged
  // The environment overrides of slot `slot` (CUDA_VISIBLE_DEVICES when gpus are given).
  EnvOverrides env(int slot) const;
};

// "0,1,3" (device indices) or GPU-/MIG- UUIDs as CUDA_VISIBLE_DEVICES takes them; no empty or
// repeated entries (InputError with the reason). "all" is not parsed here (count_gpus).
std::vector<std::string> parse_gpu_list(const std::string& text);
// The NVIDIA GPUs of this machine, counted without loading CUDA in this process: the entries of
// /proc/driver/nvidia/gpus/ (`proc_dir`), else the GPU lines of `nvidia-smi -L`; 0 when neither.
int count_gpus(const std::string& proc_dir = "/proc/driver/nvidia/gpus");
// The GPU ids ctest's resource allocation gave this test (CTEST_RESOURCE_GROUP_COUNT,
// CTEST_RESOURCE_GROUP_<i> naming the types, CTEST_RESOURCE_GROUP_<i>_GPUS = "id:0,slots:1;...")
// read through `getenv`; empty when ctest gave none. Malformed values: InputError.
std::vector<std::string> gpus_from_ctest(const std::function<const char*(const std::string&)>& getenv);

// The units the slots take: indices into `specs`, each unit one (backend, combination) in the
// order of `specs` (first-seen), split into consecutive runs of cases while there are fewer units
// than `jobs`. With Isolation::Trial every trial is its own unit.
std::vector<std::vector<size_t>> work_units(const std::vector<TrialSpec>& specs, Isolation isolate, int jobs);

}  // namespace nvfp4
