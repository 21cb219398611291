// pool.hpp — how a session runs its trials: workers or one process per trial (--isolate), how
// many at once (--jobs), on which GPUs (--gpus), and in what order (Schedule); docs/design.md §4.
//
// --isolate worker (the default): a worker child (worker.hpp) runs trials of one (backend,
// combination) one after another; a trial that does not end cleanly ends its worker and the next
// trial takes a fresh one. --isolate trial: one child per trial.
// A Schedule groups the trials by (backend, combination); a group may wait for other groups and
// runs only if none of them failed (the lattice: a combination after its sub-combinations), else
// its trials are BLOCKED. It starts as soon as those have finished, not when a whole level has.
// The slots take trials one at a time. A slot stays with its group while it has trials to hand
// out, then takes the runnable group with the fewest workers; it joins a group that already has
// workers (on any GPU) only while each would keep at least 16 trials to hand out, since a worker's
// start costs tens of trials (for the GPU backend the driver's initialization and the device's
// context, which the driver serializes across the whole host: more processes at once do not
// start faster), or where the group's trials have taken a second or more each and no worker of it
// runs on the slot's GPU. The bench, one slot per GPU and no spares, shares a group freely.
// A slot judges a trial (the comparisons against the references, host work as long as the child's
// run for a large output) on another thread while its worker runs the group's next trial; when the
// judged one fails, the next one's report is dropped and it runs again in a fresh worker, so no
// result comes from a process that ran a failing trial before it. The bench judges before it goes
// on (RunPolicy::overlap): host work beside a timed trial would disturb its times.
// Results are recorded and printed in the order of the schedule's list, whatever order they
// finish in.
// Spares: workers started ahead, each for a backend and a slot's environment, which have loaded
// the backend (module, availability, Backend::prepare) by the time a slot needs a fresh worker (a
// new group, or after a failure); with none ready, the slot's worker loads in its first trial. A run starts one per group (at most one per slot) while the
// parent gets the references, and replaces each one taken while groups no worker has started
// remain; a bisect keeps one per slot ready for its next step (RunPolicy::kept_spares). The bench starts none
// (RunPolicy::prestart): a worker initializing beside a timed trial would disturb its times.
// --jobs N: N slots at once. The default: on each GPU given (--gpus, or by ctest; else the one the
// driver picks) a quarter of the host's cores per GPU, from 1 to 4 slots, at most 8 in all but one
// per GPU (a trial child is mostly host work: reading its input sets, and the parent's comparison;
// its kernels take milliseconds; and a worker's start is serialized across the host).
// No check depends on a trial having the device alone, but in a verify run its stage times and
// autotune's choices are those of a shared device; --jobs 1 (or one per GPU) gives each trial the
// device alone, as the bench always does (bench_cli.cpp).
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
  bool prestart = true;  // spares started ahead (see above); off for the bench
  size_t kept_spares = 0;  // spares kept ready for the session's next run (bisect: one per slot)
  bool overlap = true;  // a trial judged while its worker runs the next one (see above); off for the bench
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

// The default --jobs: `per_gpu` slots on each of `gpus` devices (0: the one the driver picks), where
// per_gpu is a quarter of `cores` per device, from 1 to 4; at most 8 in all, but one per device.
int default_jobs(size_t gpus, unsigned cores);

// Trials to run, grouped (see above).
struct Schedule {
  std::vector<TrialSpec> specs;            // recorded and printed in this order
  std::vector<size_t> group;               // the group of specs[i]
  std::vector<std::vector<size_t>> needs;  // per group: the groups that must finish without a failure first
  // One group per (backend, combination), in first-seen order, none waiting for another.
  static Schedule of(std::vector<TrialSpec> specs);
};

}  // namespace nvfp4
