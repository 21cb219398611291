// fused_probe.cu — the timing probe behind docs/fused-kernel.md (not part of the product).
//
// Launches the v5 kernels of optimized/gpu/fused/v5_kernel.cuh directly on random packed data of
// the four benchmark shapes, each launch timed alone with one CUDA-event pair after a 256 MB write
// that leaves the L2 cold and dirty (as the harness's bench does between calls), median of 15.
//
//   fused_probe [time]    per shape: the 128-row and 256-row tiles, the split-K pair (where twice
//                         the 256-row tiles fit on the SMs), stream-K (where the 256-row tiles
//                         leave SMs idle), the 128 x 96 tiles (three consumer warpgroups) and
//                         their pairs (where they fit), µs, and a hash of each fp16 output (all
//                         but the 128-row tiles also compared element by element with the 256-row
//                         kernel)
//   fused_probe time3     the same for the 128 x 96 tiles and pairs only (and the 256-row
//                         kernel, the reference of the comparison)
//   fused_probe timeline  per shape, the default kernel's per-CTA event times (the Recording
//                         probe policy below: min / median / max over CTAs, µs from the first
//                         CTA's end of setup), after a memset of 256 MB, a read of 256 MB, or
//                         nothing
//   fused_probe timeline-sk  the same for stream-K wherever it is offered (after a memset only)
//   fused_probe silu      the v5 epilogue's silu·mul (RcpDivide) against the IEEE division on
//                         80 001 points of [-100, 100] and the special values
//
// The kernels timed are the product's instantiations (NoProbe); `timeline` instantiates them with
// the Recording policy, which writes stamps into the partials workspace (32 slots per CTA, slot =
// the Event's value, v5_probe.cuh).
//
// NVFP4_PROBE_SHAPES="MxNxK,..." runs those shapes instead of the four (K % 256 == 0; e.g. GPU
// MODE's test shapes, to see which candidate a shape's default should be).
// NVFP4_PROBE_ZERO_A=1 makes every activation zero (same kernels, same work): the main loops'
// clock under the power limit depends on the operands (docs/fused-kernel.md v5i).
//
// Build: `cmake --build build --target fused_probe` (with CUDA); run on the GPU machine. Measured
// numbers belong in docs/fused-kernel.md with the device and date, as every other measurement.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpu/fused/v5_kernel.cuh"
#include "probe_host.hpp"

using namespace nvfp4::gpu::fused;
namespace v5 = nvfp4::gpu::fused::v5;

namespace {


template <class T>
T* dalloc(size_t n) {
  T* p;
  CK(cudaMalloc(&p, n * sizeof(T)));
  CK(cudaMemset(p, 0, n * sizeof(T)));
  return p;
}

// Random packed E2M1 bytes, or E4M3 scale bytes in [0x18, 0x27] (2^-4 .. 2^-2 range, finite).
uint8_t* upload_random(size_t n, std::mt19937& g, bool scale) {
  std::vector<uint8_t> h(n);
  for (auto& x : h) x = scale ? uint8_t(0x18 + g() % 16) : uint8_t(g());
  uint8_t* d = dalloc<uint8_t>(n);
  CK(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));
  return d;
}

enum class Flush { Memset, Read, None };
Flush g_flush = Flush::Memset;
constexpr size_t kFlushBytes = size_t(256) << 20;

__global__ void read_flush_kernel(const uint4* p, size_t n, unsigned* sink) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    x ^= v.x ^ v.w;
  }
  if (x == 0x12345678u) *sink = x;  // keeps the loads
}

void flush_l2(void* buf, int r) {
  if (g_flush == Flush::Memset) CK(cudaMemsetAsync(buf, r, kFlushBytes));
  if (g_flush == Flush::Read)
    read_flush_kernel<<<264, 512>>>(static_cast<const uint4*>(buf), kFlushBytes / 16,
                                    static_cast<unsigned*>(buf));
}

// One problem and its workspace (zeroed once, as the plan does).
struct Problem {
  int M, N, K;
  v5::Args a{};
  v5::Maps maps128{}, maps256{}, maps128x3{};  // tiles 128x64, 256x64, 128x96
  void* flush = nullptr;
  int sms = 0;
};

// The recording probe policy (v5_probe.cuh): per-CTA stamps (64-bit global times, SM clocks, a
// count) in 32 slots per CTA of the partials workspace — from its start, or after stream-K's
// partials.
struct Recording {
  unsigned long long* slots = nullptr;
  unsigned long long t_entry = 0;
  __device__ void enter(bool first) {
    if (first) t_entry = ptx::gtimer();
  }
  template <class K>
  __device__ void setup_done(const K& k) {
    using Cfg = typename K::Cfg;
    const v5::Args& a = k.args;
    const int64_t after =
        K::kStream ? int64_t(a.L) * k.sched.tiles_per_l * a.splits * 2 * Cfg::BM * Cfg::kNT : 0;
    slots = reinterpret_cast<unsigned long long*>(a.partials + after) + v5::kProbeSlots * blockIdx.x;
    if (k.tid == 0) {
      const unsigned long long t = ptx::gtimer();
      slots[int(v5::Event::SetupDone)] = t;
      slots[int(v5::Event::Start)] = t;
      slots[int(v5::Event::Entry)] = t_entry;
    }
  }
  __device__ void time(bool when, v5::Event e) {
    if (when) slots[int(e)] = ptx::gtimer();
  }
  __device__ void clock(bool when, v5::Event e) {
    if (when) slots[int(e)] = clock64();
  }
  __device__ void count(bool when, v5::Event e) {
    if (when) slots[int(e)] += 1;
  }
  __device__ void time_at(bool when, int slot) {
    if (when) slots[slot] = ptx::gtimer();
  }
  // Lane 0 of the producer's third warp: when the start's packed chunks arrive by TMA on ld_bar
  // (the local start, or the batch alone fetched by TMA), the time they arrive, then the time the
  // first weight stage arrives.
  template <class K, class Plan>
  __device__ void watch_start(const K& k, const Plan& plan) {
    using Cfg = typename K::Cfg;
    int q, nb, nl;
    plan(q, nb, nl);
    const bool fetched = nl > 0 || (q < k.sched.chunks && !K::kLocalStart && nb <= Cfg::S &&
                                    nb * Cfg::BM <= 4 * Cfg::kConsumers);
    if (k.tid == Cfg::kConsumers + 64 && fetched) {
      ptx::mbar_wait(k.sm.ld_bar, 0);
      time(true, v5::Event::StartArrived);
      ptx::mbar_wait(k.sm.wfull_bar, 0);
      time(true, v5::Event::FirstWeightArrived);
    }
  }
};

// A kernel launch: threads, grid, cluster size, maps; returns the median of `reps` flushed
// launches (µs). `stamps_at` (the Recording policy) zeroes the stamp area first: 32 slots of 8
// bytes per CTA.
template <class Kern>
float time_launches(Kern kern, int threads, int smem, int grid, int cluster,
                    const v5::Maps& maps, const v5::Args& a, void* flush, int reps,
                    float* stamps_at = nullptr) {
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaLaunchConfig_t c{};
  cudaLaunchAttribute attr[1];
  c.blockDim = dim3(threads);
  c.dynamicSmemBytes = smem;
  c.gridDim = dim3(grid);
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  c.attrs = attr;
  c.numAttrs = cluster > 1 ? 1 : 0;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < reps + 2; ++r) {  // two untimed launches first
    if (stamps_at) CK(cudaMemset(stamps_at, 0, size_t(grid) * 8 * v5::kProbeSlots));
    flush_l2(flush, r);
    CK(cudaEventRecord(e0));
    CK(cudaLaunchKernelEx(&c, kern, maps, a));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) ts.push_back(ms * 1000);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// The kernels as fused.cu launches them (tile height BM, ring depth S, WG consumer warpgroups);
// Probe: NoProbe (the product's kernels) or Recording.
int n_tiles(const Problem& p, int nt) { return (p.N + nt - 1) / nt; }
const v5::Maps& maps_for(const Problem& p, int bm, int wg) {
  return wg == 3 ? p.maps128x3 : bm == 128 ? p.maps128 : p.maps256;
}
// The launch arguments of BM x 32*WG tiles with `splits` units per tile.
template <int BM, int WG>
v5::Args tile_args(const Problem& p, int splits) {
  v5::Args a = p.a;
  a.m_tiles = (p.M + BM - 1) / BM;
  a.n_tiles = n_tiles(p, 32 * WG);
  a.splits = splits;
  return a;
}
template <int BM, int S, int WG = 2, class Probe = v5::NoProbe>
float run_tiles(Problem& p, int reps, float* stamps = nullptr) {
  using Cfg = v5::Config<BM, S, WG>;
  const v5::Args a = tile_args<BM, WG>(p, 1);
  const int units = a.L * a.m_tiles * a.n_tiles;
  return time_launches(v5::dual_gemm_kernel<Cfg, v5::Split::Tiles, Probe>, Cfg::kThreads,
                       Cfg::kSmemBytes, std::min(units, p.sms), 1, maps_for(p, BM, WG), a,
                       p.flush, reps, stamps);
}
// Split-K pairs of BM x 32*WG tiles.
bool pair_offered(const Problem& p, int bm = 256, int wg = 2) {
  return p.K >= 512 && 2 * ((p.M + bm - 1) / bm) * n_tiles(p, 32 * wg) <= p.sms;
}
template <int BM = 256, int S = 4, int WG = 2, class Probe = v5::NoProbe>
float run_pair(Problem& p, int reps, float* stamps = nullptr) {
  using Cfg = v5::Config<BM, S, WG>;
  const v5::Args a = tile_args<BM, WG>(p, 2);
  return time_launches(v5::dual_gemm_kernel<Cfg, v5::Split::Pair, Probe>, Cfg::kThreads,
                       Cfg::kSmemBytes, 2 * a.L * a.m_tiles * a.n_tiles, 2, maps_for(p, BM, WG),
                       a, p.flush, reps, stamps);
}
bool stream_offered(const Problem& p) {
  return p.K >= 512 && p.M > 128 && ((p.M + 255) / 256) * p.a.n_tiles < p.sms;
}
// Stream-K: the launch shape fused.cu uses (stream_k_shape); the stamps go after the partials.
struct StreamShape {
  int grid, splits;
  int64_t stamp_offset;  // floats
};
StreamShape stream_shape(const Problem& p) {
  const int64_t tiles = int64_t((p.M + 255) / 256) * p.a.n_tiles * p.a.L;
  const v5::StreamK sk = v5::stream_k_shape(tiles, p.K / 256, p.sms);
  return {sk.grid, sk.parts, tiles * sk.parts * 2 * 256 * v5::Config<256, 4>::kNT};
}
template <class Probe = v5::NoProbe>
float run_stream(Problem& p, int reps, float* stamps = nullptr) {
  using Cfg = v5::Config<256, 4>;
  v5::Args a = p.a;
  a.m_tiles = (p.M + 255) / 256;
  const StreamShape s = stream_shape(p);
  a.splits = s.splits;
  return time_launches(v5::dual_gemm_kernel<Cfg, v5::Split::StreamK, Probe>, Cfg::kThreads,
                       Cfg::kSmemBytes, s.grid, 1, p.maps256, a, p.flush, reps, stamps);
}

std::vector<uint16_t> take_output(const Problem& p) {  // C, then C is poisoned for the next run
  std::vector<uint16_t> v(size_t(p.M) * p.N);
  CK(cudaMemcpy(v.data(), p.a.c, v.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemset(p.a.c, 0xFF, v.size() * 2));
  return v;
}
unsigned long long hash_of(const std::vector<uint16_t>& v) {  // FNV-1a over the fp16 words
  unsigned long long h = 1469598103934665603ull;
  for (uint16_t x : v) {
    h ^= x;
    h *= 1099511628211ull;
  }
  return h & 0xFFFFFF;
}
long words_differing(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y) {
  long d = 0;
  for (size_t i = 0; i < x.size(); ++i) d += x[i] != y[i];
  return d;
}

void print_stamps(const float* at, int grid, const char* name) {
  std::vector<unsigned long long> h(size_t(grid) * 32);
  CK(cudaMemcpy(h.data(), at, h.size() * 8, cudaMemcpyDeviceToHost));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < grid; ++b)
    if (h[32 * b]) t0 = std::min(t0, h[32 * b]);
  // Slot meanings: v5::Event (v5_probe.cuh).
  struct Ev {
    int slot;
    const char* name;
  };
  const Ev evs[] = {{24, "entry"},          {25, "q-known"},      {10, "A-arrived"},
                    {11, "W0-arrived"},     {9, "decoded"},       {14, "ph0-st-issued"},
                    {15, "ph0-st-done"},    {1, "ph0-published"}, {2, "prod-first-ready"},
                    {3, "first-wgmma"},     {4, "unit0-done"},    {12, "sk-counted"},
                    {13, "unit1-done"},     {29, "csync1|sk-waited"}, {30, "csync2|sk-summed"},
                    {31, "epi-sync"},       {7, "staged"},        {28, "last-staged"},
                    {5, "end"}};
  std::printf("  %s (µs from the first CTA's end of setup: min/median/max over CTAs):", name);
  for (const Ev& e : evs) {
    std::vector<double> v;
    for (int b = 0; b < grid; ++b) {
      const unsigned long long x = h[32 * b + e.slot];
      if (x != 0) v.push_back((double(x) - double(t0)) * 1e-3);  // (entry: before t0)
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf(" %s %.1f/%.1f/%.1f", e.name, v.front(), v[v.size() / 2], v.back());
  }
  std::vector<double> setup, skew, ghz;  // entry -> end of setup; spread of the warps' main-loop
                                         // ends; SM clock over the first unit's main loop
  for (int b = 0; b < grid; ++b) {
    const unsigned long long* x = &h[32 * b];
    if (x[24] && x[0] >= x[24]) setup.push_back((x[0] - x[24]) * 1e-3);
    if (x[3] && x[4] > x[3] && x[27] > x[26])
      ghz.push_back(double(x[27] - x[26]) / double(x[4] - x[3]));
    unsigned long long lo = ~0ull, hi = 0;
    for (int w = 0; w < 8; ++w)
      if (x[16 + w]) lo = std::min(lo, x[16 + w]), hi = std::max(hi, x[16 + w]);
    if (hi) skew.push_back((hi - lo) * 1e-3);
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  unsigned long long steals = 0;  // slot 6: phase-0 batches decoded by a producer warp
  for (int b = 0; b < grid; ++b) steals += h[32 * b + 6];
  std::printf(" | setup %.2f, warp skew %.2f, main-loop clock %.3f GHz (medians), %llu batches "
              "stolen\n", med(setup), med(skew), med(ghz), steals);
  // The three CTAs that end last: their own stamps (0: not recorded).
  std::vector<int> order(size_t(grid), 0);
  for (int b = 0; b < grid; ++b) order[size_t(b)] = b;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return h[32 * x + 5] > h[32 * y + 5]; });
  for (int r = 0; r < std::min(3, grid); ++r) {
    const int b = order[size_t(r)];
    std::printf("    CTA %d:", b);
    for (const Ev& e : evs) {
      const unsigned long long x = h[32 * b + e.slot];
      if (x != 0) std::printf(" %s %.1f", e.name, (double(x) - double(t0)) * 1e-3);
    }
    std::printf("\n");
  }
}

void mode_time(Problem& p, bool wg3_only) {
  std::printf("%dx%dx%d", p.M, p.N, p.K);
  if (!wg3_only) {
    std::printf(" | BM128 %.1f", run_tiles<128, 8>(p, 15));
    std::printf(" #%06llx", hash_of(take_output(p)));
  }
  std::printf(" | BM256 %.1f", run_tiles<256, 4>(p, 15));
  const std::vector<uint16_t> ref = take_output(p);
  std::printf(" #%06llx", hash_of(ref));
  if (pair_offered(p) && !wg3_only) {
    std::printf(" | pair %.1f", run_pair(p, 15));
    const std::vector<uint16_t> c = take_output(p);
    std::printf(" #%06llx (%ld words differ from BM256)", hash_of(c), words_differing(c, ref));
  }
  if (stream_offered(p) && !wg3_only) {
    std::printf(" | stream-K %.1f", run_stream(p, 15));
    const std::vector<uint16_t> c = take_output(p);
    std::printf(" #%06llx (%ld words differ from BM256)", hash_of(c), words_differing(c, ref));
  }
  std::printf(" | 128x96 %.1f", run_tiles<128, 7, 3>(p, 15));
  {
    const std::vector<uint16_t> c = take_output(p);
    std::printf(" #%06llx (%ld words differ from BM256)", hash_of(c), words_differing(c, ref));
  }
  if (pair_offered(p, 128, 3)) {
    std::printf(" | 128x96 pair %.1f", run_pair<128, 7, 3>(p, 15));
    const std::vector<uint16_t> c = take_output(p);
    std::printf(" #%06llx (%ld words differ from BM256)", hash_of(c), words_differing(c, ref));
  }
  std::printf("\n");
}

// `stream_k`: stream-K's timeline wherever it is offered (after a memset only), whatever the default.
void mode_timeline(Problem& p, bool stream_k) {
  float* st = p.a.partials;
  if (stream_k) {
    if (!stream_offered(p)) return;
    g_flush = Flush::Memset;
    const StreamShape s = stream_shape(p);
    run_stream<Recording>(p, 1, p.a.partials + s.stamp_offset);
    char name[96];
    std::snprintf(name, sizeof name, "%dx%dx%d stream-K, flush memset", p.M, p.N, p.K);
    print_stamps(p.a.partials + s.stamp_offset, s.grid, name);
    return;
  }
  for (Flush f : {Flush::Memset, Flush::Read, Flush::None}) {
    g_flush = f;
    const char* fl = f == Flush::Memset ? "memset" : f == Flush::Read ? "read" : "none";
    char name[96];
    // The default's choice (candidates.hpp, default_candidate): the 128 x 96 tiles, else their
    // pairs, where one wave of them fills 3/4 to all of the SMs; else the 256 x 64 kernels.
    const int tiles3 = ((p.M + 127) / 128) * n_tiles(p, 96);
    auto fills = [&](int ctas) { return 4 * ctas >= 3 * p.sms && ctas <= p.sms; };
    if (fills(tiles3)) {
      run_tiles<128, 7, 3, Recording>(p, 1, st);
      std::snprintf(name, sizeof name, "%dx%dx%d 128x96, flush %s", p.M, p.N, p.K, fl);
      print_stamps(st, tiles3, name);
    } else if (fills(2 * tiles3) && p.K >= 512) {
      run_pair<128, 7, 3, Recording>(p, 1, st);
      std::snprintf(name, sizeof name, "%dx%dx%d 128x96 pair, flush %s", p.M, p.N, p.K, fl);
      print_stamps(st, 2 * tiles3, name);
    } else if (p.M <= 256 && pair_offered(p)) {
      run_pair<256, 4, 2, Recording>(p, 1, st);
      std::snprintf(name, sizeof name, "%dx%dx%d pair, flush %s", p.M, p.N, p.K, fl);
      print_stamps(st, 2 * ((p.M + 255) / 256) * p.a.n_tiles, name);
    } else if (stream_offered(p) && 4 * ((p.M + 255) / 256) * p.a.n_tiles <= 3 * p.sms) {
      const StreamShape s = stream_shape(p);
      run_stream<Recording>(p, 1, p.a.partials + s.stamp_offset);
      std::snprintf(name, sizeof name, "%dx%dx%d stream-K, flush %s", p.M, p.N, p.K, fl);
      print_stamps(p.a.partials + s.stamp_offset, s.grid, name);
    } else {
      run_tiles<256, 4, 2, Recording>(p, 1, st);
      std::snprintf(name, sizeof name, "%dx%dx%d BM256, flush %s", p.M, p.N, p.K, fl);
      print_stamps(st, std::min(((p.M + 255) / 256) * p.a.n_tiles, p.sms), name);
    }
  }
  g_flush = Flush::Memset;
}

__global__ void silu_kernel(const float* x, float* nb, float* ieee, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  nb[i] = nvfp4::silu_mul<v5::RcpDivide>(x[i], 1.0f, 1.0f, 1.0f);
  ieee[i] = nvfp4::silu_mul(x[i], 1.0f, 1.0f, 1.0f);
}

int mode_silu() {
  std::vector<float> x;
  for (int i = -40000; i <= 40000; ++i) x.push_back(float(i) * 0.0025f);
  for (float v : {INFINITY, -INFINITY, NAN, 1e30f, -1e30f, -87.0f, -87.5f, -88.0f, -88.5f, -88.72f,
                  -89.0f, -103.0f, 1e-30f, -1e-30f, 0.0f, -0.0f, 3.4e38f, -3.4e38f})
    x.push_back(v);
  const int n = int(x.size());
  float *dx = dalloc<float>(n), *dn = dalloc<float>(n), *di = dalloc<float>(n);
  CK(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice));
  silu_kernel<<<(n + 255) / 256, 256>>>(dx, dn, di, n);
  std::vector<float> a(n), b(n);
  CK(cudaMemcpy(a.data(), dn, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), di, n * 4, cudaMemcpyDeviceToHost));
  int bad = 0, diff = 0;
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    bool ok;
    if (std::isnan(v)) ok = std::isnan(a[i]);
    else if (std::isinf(v) || std::fabs(v) >= 1e29f) ok = v > 0 ? a[i] == v : (a[i] == 0 && std::signbit(a[i]));
    else ok = std::fabs(a[i] - b[i]) <= std::fabs(std::nextafter(b[i], INFINITY) - b[i]);
    diff += a[i] != b[i];
    if (!ok && bad++ < 5) std::printf("silu: x=%g got %g, IEEE division %g\n", v, a[i], b[i]);
  }
  std::printf("silu: %d points, %d differ from the IEEE division, %d beyond 1 ulp\n", n, diff, bad);
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "time";
  if (mode == "silu") return mode_silu();
  if (mode != "time" && mode != "time3" && mode != "timeline" && mode != "timeline-sk") {
    std::fprintf(stderr, "usage: fused_probe [time|time3|timeline|timeline-sk|silu]\n");
    return 2;
  }
  int dev = 0, major = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major != 9) {
    std::fprintf(stderr, "fused_probe: the v5 kernels need sm_90a (this GPU is sm_%d x)\n", major);
    return 125;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  void* flush = dalloc<uint8_t>(kFlushBytes);
  std::vector<std::array<int, 3>> shapes = {
      {256, 4096, 7168}, {512, 4096, 7168}, {256, 3072, 4096}, {512, 3072, 7168}};
  // NVFP4_PROBE_SHAPES="MxNxK,...": other shapes instead (K a multiple of 256, L = 1).
  if (const char* env = std::getenv("NVFP4_PROBE_SHAPES")) {
    shapes.clear();
    std::string list = env;
    for (size_t at = 0; at < list.size();) {
      const size_t end = std::min(list.find(',', at), list.size());
      std::array<int, 3> sh{};
      if (std::sscanf(list.substr(at, end - at).c_str(), "%dx%dx%d", &sh[0], &sh[1], &sh[2]) != 3 ||
          sh[0] <= 0 || sh[1] <= 0 || sh[2] <= 0 || sh[2] % 256 != 0) {
        std::fprintf(stderr, "fused_probe: NVFP4_PROBE_SHAPES: '%s' is not MxNxK with K %% 256 == 0\n",
                     list.substr(at, end - at).c_str());
        return 2;
      }
      shapes.push_back(sh);
      at = end + 1;
    }
  }
  std::mt19937 g(1);
  for (const auto& sh : shapes) {
    Problem p;
    p.M = sh[0], p.N = sh[1], p.K = sh[2];
    p.sms = sms;
    p.flush = flush;
    v5::Args& a = p.a;
    a.a = upload_random(size_t(p.M) * p.K / 2, g, false);
    // NVFP4_PROBE_ZERO_A=1: all activations zero (the same work on zero operands; the SM clock
    // under the power limit depends on the operands' bits, docs/fused-kernel.md v5i).
    if (const char* z = std::getenv("NVFP4_PROBE_ZERO_A"); z && std::string(z) == "1")
      CK(cudaMemset(const_cast<uint8_t*>(a.a), 0, size_t(p.M) * p.K / 2));
    a.sfa = upload_random(size_t(p.M) * p.K / 16, g, true);
    const uint8_t* b1 = upload_random(size_t(p.N) * p.K / 2, g, false);
    const uint8_t* b2 = upload_random(size_t(p.N) * p.K / 2, g, false);
    const uint8_t* s1 = upload_random(size_t(p.N) * p.K / 16, g, true);
    const uint8_t* s2 = upload_random(size_t(p.N) * p.K / 16, g, true);
    a.act = dalloc<uint16_t>(size_t(p.M) * p.K);
    a.chunk_state = dalloc<unsigned long long>(size_t(p.K / 64) * ((p.M + 127) / 128));
    a.sync = dalloc<v5::SyncState>(1);
    // Partials: stream-K's parts (at most 3 here) and the stamps after them; also enough for the
    // stamps at the start of the buffer.
    a.partials = dalloc<float>(size_t(16) << 20);
    a.tile_count = dalloc<unsigned>(4096);
    a.ready = dalloc<unsigned long long>(4096);
    a.c = dalloc<__half>(size_t(p.M) * p.N);
    a.M = p.M, a.N = p.N, a.K = p.K, a.L = 1;
    a.m_tiles = (p.M + 127) / 128;
    a.n_tiles = n_tiles(p, 64);  // (each launch sets its own)
    a.splits = 1;
    a.alpha1 = a.alpha2 = 1.0f;
    p.maps128 = v5::make_maps(a, b1, b2, s1, s2, 128, 64);
    p.maps256 = v5::make_maps(a, b1, b2, s1, s2, 256, 64);
    p.maps128x3 = v5::make_maps(a, b1, b2, s1, s2, 128, 96);
    if (mode == "time" || mode == "time3") mode_time(p, mode == "time3");
    if (mode == "timeline" || mode == "timeline-sk") mode_timeline(p, mode == "timeline-sk");
    for (const void* q : {static_cast<const void*>(a.a), static_cast<const void*>(a.sfa),
                          static_cast<const void*>(b1), static_cast<const void*>(b2),
                          static_cast<const void*>(s1), static_cast<const void*>(s2),
                          static_cast<const void*>(a.act), static_cast<const void*>(a.chunk_state),
                          static_cast<const void*>(a.sync), static_cast<const void*>(a.partials),
                          static_cast<const void*>(a.tile_count), static_cast<const void*>(a.ready),
                          static_cast<const void*>(a.c)})
      CK(cudaFree(const_cast<void*>(q)));
  }
  CK(cudaFree(flush));
  return 0;
}
