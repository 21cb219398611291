// v5_probe.cuh — the v5 kernel's probe policy: the points where the timing probe
// (tools/fused_probe.cu, `fused_probe timeline`) records per-CTA event times.
//
// The kernel takes the policy as a template parameter and calls it at each event below. The
// product's policy, NoProbe, has empty inline members: its calls, and the conditions and values
// passed to them, compile to nothing (tools/cubin_text_compare.py compares the machine code).
// A recording policy (tools/fused_probe.cu) writes 64-bit stamps into 32 slots per CTA; the slot
// of each event is its value here.
#pragma once

namespace nvfp4::gpu::fused::v5 {

enum class Event : int {
  Start = 0,                // setup done (the stamps' time origin)
  Published = 1,            // the consumers' phase-0 batch is published
  ProducerFirstReady = 2,   // the activation producer sees its first chunk ready
  FirstWgmma = 3,           // the first wgmma is issued
  FirstUnitDone = 4,        // the first unit's main loop is done
  End = 5,                  // thread 0 (a consumer) is done
  Steal = 6,                // (a count) phase-0 batches decoded by the producer warp
  Staged = 7,               // the first unit's silu·mul is staged
  SetupDone = 8,            // the setup barrier is passed
  Decoded = 9,              // the phase-0 batch is decoded (and, without the local start, stored)
  StartArrived = 10,        // the start's packed activation chunks arrived
  FirstWeightArrived = 11,  // the first weight stage arrived
  StreamKCounted = 12,      // stream-K: the first unit's partial is written and counted
  LaterUnitDone = 13,       // a later unit's main loop is done
  LocalStoresIssued = 14,   // the local start's phase-0 TMA stores are issued
  LocalStoresDone = 15,     // ... and complete
  WarpLoopDone = 16,        // + w: consumer warp w's (w < 8) first main loop is done
  Entry = 24,               // kernel entry
  LastStaged = 28,          // the last unit's silu·mul is staged (any unit: the CTA's last stamp wins)
  QueueKnown = 25,          // thread 0 has the generation and the phase-0 batch
  FirstWgmmaClock = 26,     // the SM clock (clock64) at FirstWgmma
  FirstUnitDoneClock = 27,  // the SM clock at FirstUnitDone
  ClusterSync1 = 29,        // the pair's first cluster barrier is passed
  ClusterSync2 = 30,        // the pair's second cluster barrier is passed
  StreamKWaited = 29,       // stream-K (never a pair): the summing part has every other part's flag
  StreamKSummed = 30,       // ... and has added their partials
  EpilogueSync = 31,        // the epilogue's first consumer barrier is passed
};
constexpr int kProbeSlots = 32;

// The product's policy: records nothing.
struct NoProbe {
  // At kernel entry, by every thread (`first`: the thread that records).
  __device__ __forceinline__ void enter(bool first) { (void)first; }
  // After the setup barrier; `k` is the kernel's context (v5_kernel.cuh).
  template <class K>
  __device__ __forceinline__ void setup_done(const K& k) { (void)k; }
  // The global time of `e` (when `when`), the SM clock of `e`, or one more count of `e`.
  __device__ __forceinline__ void time(bool when, Event e) { (void)when, (void)e; }
  __device__ __forceinline__ void clock(bool when, Event e) { (void)when, (void)e; }
  __device__ __forceinline__ void count(bool when, Event e) { (void)when, (void)e; }
  __device__ __forceinline__ void time_at(bool when, int slot) { (void)when, (void)slot; }
  // Run by the producer warpgroup's third warp (idle but for stream-K's helper, which follows):
  // may wait on the start's barriers to time them. `plan` is the kernel's reader of this CTA's
  // phase-0 plan (q, nb, nl).
  template <class K, class Plan>
  __device__ __forceinline__ void watch_start(const K& k, const Plan& plan) {
    (void)k, (void)plan;
  }
};

}  // namespace nvfp4::gpu::fused::v5
