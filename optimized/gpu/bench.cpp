// bench.cpp — `harness --bench COMBO[,COMBO...]`: GPU timing of whole paths. Part of the gpu
// backend's module (optimized/CMakeLists.txt): the harness runs it in a child process that loads
// the module (harness/bench.hpp); the options are parsed there into a BenchRequest.
//
// Why one file of ~700 lines: it still carries its own stage lifecycle, watchdog and printer beside
// the trial machinery's; making bench a timed mode of the trials (the verification-speed issue) will
// remove those copies and split what is left, so it is not split by hand before then.
//
// For each shape (default: the four GPU MODE benchmark shapes, distribution `normal`, seed 1):
//   1. the exact reference (with abs sums, for the tolerance in compare.hpp);
//   2. the yardstick: the cuBLASLt bf16 GEMM alone over [B1;B2] on operands decoded ahead of time,
//      its best algorithm (every heuristic candidate timed), eager and graph-replayed; its G and U
//      are checked against the exact ones before it is timed;
//   3. plain's per-call kernels alone (A decode; silu*mul on a D computed at init), each from a
//      cold L2: where plain's time goes beyond the GEMM (not checked: parts of a checked path);
//   4. each combination: cold-start stages timed separately with the host clock after a device
//      synchronize (init = build_plan, tune, first call, warmup, capture), then the output checked
//      against the exact reference (first call, and again after capture, after timing) — a
//      combination whose output fails is reported FAIL and never timed — then the steady state.
// Fresh inputs (harness/cases.hpp): each shape has kBenchSets input sets (set 0 the shape's case,
// the others derived from it; --fresh activations|all says what changes) and the exact reference
// of each. Before every timed call of a combination the next set is written into the plan
// (Plan::set_inputs, outside the timed region, before the L2 flush), so consecutive calls never see
// the same inputs; after every batch of timed calls the last call's output is checked against
// the reference of its own set (the batches end on each set in turn), as are the back-to-back
// measurement (on a set written just before it) and the checks after capture and after timing.
// A path that skips work when its output is not poisoned, or returns a cached result, is FAIL
// and its time is not reported.
// Steady state ("median"): one CUDA-event pair per call on the plan's stream, with a write of
// twice the L2 size between calls (outside the timed region), so each call starts from cold
// caches; repeated until the median's relative standard error (1.2533 * 1.4826 * MAD / sqrt(n) /
// median) is below --bench-rse, or --bench-max-time seconds, or --bench-max-reps calls. Also
// reported: "b2b", the mean of back-to-back calls between one event pair with no flush (the GPU
// MODE style, where launch overhead overlaps the previous call).
// TFLOP/s = 4*M*N*K*L / median; % of peak uses an 8192^3 bf16 cuBLASLt GEMM timed in the same run.
// torch.compile figures are quoted from docs/gpu-target.md (PyTorch 2.11, same H100 model, measured
// 2026-11-20 by the project), not measured here; the JSON says so.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cases.hpp"
#include "compare.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "json.hpp"
#include "problem.hpp"
#include "reference.hpp"
#include "registry.hpp"

#include "gpu/gpu_plan.hpp"

namespace nvfp4 {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Stats {
  int checks = 0;        // outputs checked during the measurement (with fresh inputs)
  std::string failure;   // the first failing check, or empty
  int reps = 0;
  double median = NAN, min = NAN, mean = NAN, stdev = NAN, rse = NAN;  // seconds; rse relative
  double b2b = NAN;  // back-to-back mean, seconds
};

struct BenchConfig {
  double rse = 0.005, max_time = 2.0;
  int min_reps = 50, max_reps = 5000, warmup = 3;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Robust relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, sigma from
// the median absolute deviation (1.4826 * MAD), so that a few slow outliers do not keep it high.
double median_rse(const std::vector<double>& v, double med) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  const double sigma = 1.4826 * median_of(dev);
  return 1.2533 * sigma / std::sqrt(double(v.size())) / med;
}

// Input sets per shape. With batches of 10 timed calls, 3 sets make the checked (last) call of
// successive batches use sets 0, 1, 2, 0, ...
constexpr int kBenchSets = 3;
constexpr int kBatch = 10;

// Fresh inputs for the timed calls of a checked path: `write(i)` writes the inputs of timed call
// i (outside the timed region); `check(i)` checks the output of call i against its own inputs'
// reference and returns "" or the failure.
struct Fresh {
  std::function<void(int)> write;
  std::function<std::string(int)> check;
};

// Times `call` (issued on gp's stream) with the stopping rule of the file header; with `fresh`,
// rotates input sets and checks outputs as described there (a failure stops the measurement and
// is returned in Stats::failure).
Stats measure(gpu::GpuPlan& gp, const std::function<void()>& call, const BenchConfig& cfg,
              const Fresh* fresh = nullptr) {
  std::vector<std::unique_ptr<gpu::Event>> start, stop;
  for (int i = 0; i < kBatch; ++i) {
    start.push_back(std::make_unique<gpu::Event>());
    stop.push_back(std::make_unique<gpu::Event>());
  }
  std::vector<double> t;
  const auto t0 = Clock::now();
  Stats s;
  while (true) {
    const int first = int(t.size());
    for (int i = 0; i < kBatch; ++i) {
      if (fresh) fresh->write(first + i);
      gp.flush_l2();
      start[i]->record(gp.stream());
      call();
      stop[i]->record(gp.stream());
    }
    gp.synchronize();
    if (fresh) {
      ++s.checks;
      s.failure = fresh->check(first + kBatch - 1);
      if (!s.failure.empty()) return s;
    }
    for (int i = 0; i < kBatch; ++i) t.push_back(double(stop[i]->ms_since(*start[i])) * 1e-3);
    const int n = int(t.size());
    if (n >= cfg.min_reps) {
      const double med = median_of(t);
      if (median_rse(t, med) < cfg.rse || since(t0) > cfg.max_time || n >= cfg.max_reps) break;
    }
  }
  s.reps = int(t.size());
  s.median = median_of(t);
  s.min = *std::min_element(t.begin(), t.end());
  double sum = 0, sq = 0;
  for (double x : t) sum += x;
  s.mean = sum / s.reps;
  for (double x : t) sq += (x - s.mean) * (x - s.mean);
  s.stdev = s.reps > 1 ? std::sqrt(sq / (s.reps - 1)) : 0.0;
  s.rse = median_rse(t, s.median);
  // Back-to-back: enough calls for about 20 ms (at least 10), one event pair, no flushing, on
  // inputs no timed call just used (then its output is checked).
  const int n_b2b = std::max(10, std::min(2000, int(0.02 / s.median)));
  gpu::Event b0, b1;
  const int b2b_call = s.reps;  // the index whose inputs the back-to-back calls run on
  if (fresh) fresh->write(b2b_call);
  call();  // one untimed call so the first timed one does not start on a flushed L2
  b0.record(gp.stream());
  for (int i = 0; i < n_b2b; ++i) call();
  b1.record(gp.stream());
  gp.synchronize();
  s.b2b = double(b1.ms_since(b0)) * 1e-3 / n_b2b;
  if (fresh) {
    ++s.checks;
    s.failure = fresh->check(b2b_call);
    if (!s.failure.empty()) s.failure += " (back-to-back calls)";
  }
  return s;
}

// Quick median of `reps` flushed calls (for choosing the yardstick's algorithm).
double quick_median(gpu::GpuPlan& gp, const std::function<void()>& call, int reps) {
  gpu::Event a, b;
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    gp.flush_l2();
    a.record(gp.stream());
    call();
    b.record(gp.stream());
    t.push_back(double(b.ms_since(a)) * 1e-3);
  }
  return median_of(t);
}

// torch.compile (default mode) medians on the H100, from docs/gpu-target.md (not measured here).
double torch_compile_us(const Shape& s) {
  static const std::map<std::string, double> table = {{"256x4096x7168", 197},
                                                      {"512x4096x7168", 188},
                                                      {"256x3072x4096", 164},
                                                      {"512x3072x7168", 324}};
  auto it = table.find(s.str());
  return it == table.end() ? NAN : it->second;
}

struct Row {
  std::string shape, combo, describe, outcome = "PASS", message;
  Stats st;
  double init_s = NAN, tune_s = NAN, first_call_s = NAN, warmup_s = NAN, capture_s = NAN;
  int64_t max_ulp = -1;
  int64_t gpumode_mismatch = -1;
  std::string check;  // "PASS (3 checks, max 2 ulp)" etc.
};

void write_stats(JsonWriter& j, const Stats& s) {
  j.key("reps").value(s.reps);
  j.key("median_us").value(s.median * 1e6);
  j.key("min_us").value(s.min * 1e6);
  j.key("mean_us").value(s.mean * 1e6);
  j.key("stdev_us").value(s.stdev * 1e6);
  j.key("median_rse").value(s.rse);
  j.key("b2b_us").value(s.b2b * 1e6);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int run_bench(const BenchRequest& rq) {
  const std::vector<std::string>& combo_texts = rq.combos;
  // ---- arguments ----
  std::vector<Combo> combos;
  std::vector<Shape> shapes;
  BenchConfig cfg;
  try {
    for (const auto& t : combo_texts) {
      Combo c = Combo::parse(t);
      check_combo("gpu", c);
      combos.push_back(c);
    }
    if (combos.empty()) throw InputError("--bench needs at least one combination");
    for (const auto& t : split_commas(rq.shapes)) {
      Shape s = Shape::parse(t);
      s.validate();
      shapes.push_back(s);
    }
    cfg.rse = rq.rse;
    cfg.max_time = rq.max_time;
    cfg.min_reps = std::max(3, rq.min_reps);
    cfg.max_reps = std::max(cfg.min_reps, rq.max_reps);
    cfg.warmup = std::max(0, rq.warmup);
    const double budget = rq.budget;
    if (!(budget > 0) || !std::isfinite(budget))
      throw InputError("--bench-budget must be a positive number of seconds");
  } catch (const InputError& e) {
    std::fprintf(stderr, "harness --bench: %s\n", e.what());
    return 2;
  }
  const std::string dist = rq.dist;
  const uint64_t seed = rq.seed;
  const InputSet fresh_mode =
      rq.fresh_all ? InputSet::All : InputSet::Activations;
  const int peak_size = rq.peak_size;
  const bool yardstick = rq.yardstick;

  BenchWatchdog watchdog(rq.budget);
  // ---- device ----
  watchdog.step("GPU availability check and context creation");
  const Backend* be = Registry::instance().backend("gpu");
  const Support avail = be ? be->available() : Support::no("no gpu backend registered");
  if (!avail.ok) {
    std::printf("SKIP: %s\n", avail.reason.c_str());
    return 125;
  }
  const auto t_ctx = Clock::now();
  NVFP4_CUDA_CHECK(cudaFree(nullptr));  // creates the context
  const gpu::DeviceInfo& dev = gpu::device_info();
  const double context_s = since(t_ctx);
  std::printf("bench: %s (cc %d.%d, %d SMs, L2 %zu MB), driver %d, runtime %d, cuBLASLt %zu\n",
              dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count, dev.l2_bytes >> 20,
              dev.driver_version, dev.runtime_version, dev.cublaslt_version);
  std::printf("bench: context creation %.3f s; stopping rule: median rse < %.2f%%, %d..%d calls, "
              "%.1f s cap; L2 flushed between timed calls\n",
              context_s, cfg.rse * 100, cfg.min_reps, cfg.max_reps, cfg.max_time);
  double peak = NAN;
  if (peak_size > 0) {
    watchdog.step("the bf16 peak measurement (cuBLASLt " + std::to_string(peak_size) + "^3)");
    peak = gpu::measure_bf16_peak_flops(peak_size, peak_size, peak_size, 20);
    std::printf("bench: bf16 peak (cuBLASLt %d^3, best of 4 algorithms, median of 20): %.1f TFLOP/s\n",
                peak_size, peak * 1e-12);
  }
  std::fflush(stdout);

  struct ShapeResult {
    Shape shape;
    double reference_s = 0;
    std::string degenerate;
    Row yard_plain, yard_graph;
    bool yard_ok = false;
    std::vector<Row> parts;  // plain's kernels alone
    std::vector<Row> rows;
  };
  std::vector<ShapeResult> results;
  bool any_fail = false;

  for (const Shape& shape : shapes) {
    ShapeResult sr;
    sr.shape = shape;
    std::printf("\n== %s (%s, seed %llu) ==\n", shape.str().c_str(), dist.c_str(),
                (unsigned long long)seed);
    std::fflush(stdout);
    watchdog.step(shape.str() + ": inputs and the exact references of " + std::to_string(kBenchSets) +
                  " input sets");
    CaseSpec bench_case;
    bench_case.shape = shape;
    bench_case.dist = dist;
    bench_case.seed = seed;
    std::vector<Problem> sets = {bench_case.make()};
    for (int k = 1; k < kBenchSets; ++k) sets.push_back(make_input_set(bench_case, sets[0], k, fresh_mode));
    const Problem& p = sets[0];
    const auto t_ref = Clock::now();
    ReferenceOptions ro;
    ro.abs_sums = true;
    std::vector<ReferenceResult> refs;
    for (const Problem& q : sets) {
      refs.push_back(compute_reference(q, ro));
      const Degeneracy deg = assess_reference(refs.back().c);
      if (deg.degenerate() && sr.degenerate.empty())
        sr.degenerate = "input set " + std::to_string(refs.size() - 1) + ": " + deg.describe();
    }
    sr.reference_s = since(t_ref);
    const ReferenceResult& ref = refs[0];

    // ---- yardstick ----
    if (yardstick) {
      sr.yard_plain.shape = sr.yard_graph.shape = shape.str();
      sr.yard_plain.combo = "cublasLt-gemm-alone";
      sr.yard_graph.combo = "cublasLt-gemm-alone+graph";
      watchdog.step(shape.str() + ": the cuBLASLt GEMM-alone yardstick");
      try {
        const auto t0 = Clock::now();
        std::unique_ptr<gpu::GpuPlan> y = gpu::make_gemm_yardstick(p);
        y->synchronize();
        sr.yard_plain.init_s = since(t0);
        // Its G and U must be right before it is timed (the GEMM bound of compare.hpp).
        y->enqueue();
        std::vector<float> g, u;
        y->read_intermediates(g, u);
        const Tolerance tol(shape.K, p.alpha1, p.alpha2);
        int64_t bad = 0;
        for (size_t i = 0; i < g.size(); ++i) {
          const double eg = std::fabs(double(g[i]) - ref.g[i]), eu = std::fabs(double(u[i]) - ref.u[i]);
          if (!(eg <= tol.gemm_bound(ref.g_abs[i])) || !(eu <= tol.gemm_bound(ref.u_abs[i]))) ++bad;
        }
        if (bad) throw std::runtime_error("yardstick G/U out of the fp32 GEMM bound at " +
                                          std::to_string(bad) + " elements");
        // Best algorithm: every candidate, 15 flushed calls each.
        const auto cands = y->candidates();
        size_t best = 0;
        double best_t = INFINITY;
        const auto t_tune = Clock::now();
        for (size_t i = 0; i < cands.size(); ++i) {
          y->select(i);
          y->enqueue();
          const double t = quick_median(*y, [&] { y->enqueue(); }, 15);
          if (t < best_t) best_t = t, best = i;
        }
        y->select(best);
        sr.yard_plain.tune_s = since(t_tune);
        sr.yard_plain.describe = y->describe();
        gpu::GpuPlan* yp = y.get();
        sr.yard_plain.st = measure(*yp, [&] { yp->enqueue(); }, cfg);
        sr.yard_plain.check = "G/U within the fp32 GEMM bound";
        std::unique_ptr<Plan> yg = gpu::make_graph_plan(std::move(y));
        const auto t_cap = Clock::now();
        yg->capture();
        sr.yard_graph.capture_s = since(t_cap);
        sr.yard_graph.describe = yg->describe();
        sr.yard_graph.st = measure(*yp, [&] { yg->enqueue(); }, cfg);
        sr.yard_graph.check = sr.yard_plain.check;
        sr.yard_ok = true;
      } catch (const std::exception& e) {
        sr.yard_plain.outcome = sr.yard_graph.outcome = "ERROR";
        sr.yard_plain.message = sr.yard_graph.message = e.what();
      }
      for (const Row* r : {&sr.yard_plain, &sr.yard_graph})
        std::printf("  %-28s %s median %s us  min %s  b2b %s  (%d reps)  %s\n", r->combo.c_str(),
                    r->outcome.c_str(), fmt("%.1f", r->st.median * 1e6).c_str(),
                    fmt("%.1f", r->st.min * 1e6).c_str(), fmt("%.1f", r->st.b2b * 1e6).c_str(),
                    r->st.reps, r->message.c_str());
      std::fflush(stdout);
    }

    // ---- where plain's time goes: its per-call kernels alone (each from a cold L2) ----
    for (const auto part : {gpu::PlainPart::DecodeA, gpu::PlainPart::Epilogue}) {
      Row r;
      r.shape = shape.str();
      r.combo = part == gpu::PlainPart::DecodeA ? "part:decode-A" : "part:silu-mul";
      watchdog.step(shape.str() + " " + r.combo);
      try {
        std::unique_ptr<gpu::GpuPlan> pp = gpu::make_plain_part(p, part);
        r.describe = pp->describe();
        gpu::GpuPlan* ptr = pp.get();
        r.st = measure(*ptr, [&] { ptr->enqueue(); }, cfg);
        r.check = "not checked (a part of plain; plain's output is checked)";
      } catch (const std::exception& e) {
        r.outcome = "ERROR";
        r.message = e.what();
      }
      std::printf("  %-28s %s median %s us  min %s  b2b %s  (%d reps)  %s\n", r.combo.c_str(),
                  r.outcome.c_str(), fmt("%.1f", r.st.median * 1e6).c_str(),
                  fmt("%.1f", r.st.min * 1e6).c_str(), fmt("%.1f", r.st.b2b * 1e6).c_str(),
                  r.st.reps, r.message.c_str());
      sr.parts.push_back(std::move(r));
    }

    // ---- combinations ----
    for (const Combo& combo : combos) {
      Row row;
      row.shape = shape.str();
      row.combo = combo.str();
      PlanOptions opts;  // in-process tune cache only: the tune stage is measured, not skipped
      // Runs the stages; returns early with row.outcome / row.message set on SKIP or FAIL.
      const std::string where = shape.str() + " " + combo.str() + ": stage ";
      auto bench_one = [&]() {
        watchdog.step(where + "init");
        const Support sup = combo_supports("gpu", combo, shape);
        if (!sup.ok) {
          row.outcome = "SKIP";
          row.message = sup.reason;
          return;
        }
        auto t0 = Clock::now();
        std::unique_ptr<Plan> plan = build_plan("gpu", combo, p, opts);
        plan->synchronize();
        row.init_s = since(t0);
        gpu::GpuPlan* gp = gpu::gpu_base(*plan);
        if (!gp) throw std::runtime_error("not a GPU plan");
        if (combo_has_stage("gpu", combo, Stage::Tune)) {
          watchdog.step(where + "tune");
          t0 = Clock::now();
          plan->tune();
          plan->synchronize();
          row.tune_s = since(t0);
        }
        watchdog.step(where + "first call");
        plan->poison_output(kPoisonBits);
        plan->synchronize();
        t0 = Clock::now();
        plan->enqueue();
        plan->synchronize();
        row.first_call_s = since(t0);
        int checks = 0;
        uint32_t max_ulp = 0;
        int64_t gm = 0;
        // Checks the plan's current output against input set `set`'s reference: "" or the failure.
        std::vector<uint16_t> out(size_t(shape.c_elems()));
        auto check_set = [&](int set) -> std::string {
          plan->read_output(out.data());
          std::vector<float> g, u;
          const bool inter = plan->read_intermediates(g, u);
          const Problem& q = sets[size_t(set)];
          const Comparison c = compare_output(refs[size_t(set)], q.alpha1, q.alpha2, out.data(),
                                              inter ? &g : nullptr, inter ? &u : nullptr);
          ++checks;
          max_ulp = std::max(max_ulp, c.max_ulp);
          gm = std::max(gm, c.gpumode_mismatch);
          if (c.pass()) return "";
          std::string why = "input set " + std::to_string(set) + ": " + std::to_string(c.over_tolerance) +
                            " elements over, " + std::to_string(c.poisoned) + " unwritten, max ulp " +
                            std::to_string(c.max_ulp);
          for (int other = 0; other < kBenchSets; ++other) {
            const Problem& o = sets[size_t(other)];
            if (other != set &&
                compare_output(refs[size_t(other)], o.alpha1, o.alpha2, out.data(), nullptr, nullptr).pass()) {
              why += "; the output matches the reference of input set " + std::to_string(other) +
                     ": stale inputs or a cached result?";
              break;
            }
          }
          return why;
        };
        auto verify = [&](const char* when, int set) {
          const std::string why = check_set(set);
          if (why.empty()) return true;
          row.outcome = "FAIL";
          row.message = std::string("output out of tolerance (") + when + ", " + why + "); not timed";
          return false;
        };
        if (!verify("first call", 0)) return;
        watchdog.step(where + "warmup");
        t0 = Clock::now();
        for (int i = 0; i < cfg.warmup; ++i) plan->enqueue();
        plan->synchronize();
        row.warmup_s = since(t0);
        if (combo_has_stage("gpu", combo, Stage::Capture)) {
          watchdog.step(where + "capture");
          t0 = Clock::now();
          plan->capture();
          plan->synchronize();
          row.capture_s = since(t0);
          plan->set_inputs(sets[1], fresh_mode);
          plan->poison_output(kPoisonBits);
          plan->enqueue();
          if (!verify("first replay, on new inputs", 1)) return;
        }
        row.describe = plan->describe();
        watchdog.step(where + "run (timed calls)");
        // Timed call i runs on input set i % kBenchSets.
        const Fresh rotate{[&](int i) { plan->set_inputs(sets[size_t(i % kBenchSets)], fresh_mode); },
                           [&](int i) { return check_set(i % kBenchSets); }};
        row.st = measure(*gp, [&] { plan->enqueue(); }, cfg, &rotate);
        if (!row.st.failure.empty()) {
          row.outcome = "FAIL";
          row.message = "output of a timed call out of tolerance (" + row.st.failure +
                        "); its time is not reported";
          row.st = Stats{};  // a time for a wrong result is never reported
          return;
        }
        const int last_set = (row.st.reps + 1) % kBenchSets;  // neither the b2b nor the last timed set
        plan->set_inputs(sets[size_t(last_set)], fresh_mode);
        plan->poison_output(kPoisonBits);
        plan->enqueue();
        if (!verify("after timing", last_set)) {
          row.st = Stats{};  // a time for a wrong result is never reported
          return;
        }
        row.max_ulp = max_ulp;
        row.gpumode_mismatch = gm;
        row.check = "PASS (" + std::to_string(checks) + " checks on " + std::to_string(kBenchSets) +
                    " input sets rotated between timed calls, fresh " + input_set_name(fresh_mode) +
                    ", max " + std::to_string(max_ulp) + " ulp, GPU MODE check mismatches " +
                    std::to_string(gm) + ")";
      };
      try {
        bench_one();
      } catch (const std::exception& e) {
        row.outcome = "ERROR";
        row.message = e.what();
        row.st = Stats{};
      }
      if (row.outcome == "FAIL" || row.outcome == "ERROR") any_fail = true;
      if (row.outcome == "PASS")
        std::printf("  %-28s PASS median %.1f us  min %.1f  b2b %.1f  (%d reps, rse %.2f%%)  "
                    "init %.3f s%s%s  first call %.4f s\n",
                    row.combo.c_str(), row.st.median * 1e6, row.st.min * 1e6, row.st.b2b * 1e6,
                    row.st.reps, row.st.rse * 100, row.init_s,
                    std::isfinite(row.tune_s) ? ("  tune " + fmt("%.3f", row.tune_s) + " s").c_str() : "",
                    std::isfinite(row.capture_s) ? ("  capture " + fmt("%.4f", row.capture_s) + " s").c_str() : "",
                    row.first_call_s);
      else
        std::printf("  %-28s %s %s\n", row.combo.c_str(), row.outcome.c_str(), row.message.c_str());
      std::fflush(stdout);
      sr.rows.push_back(std::move(row));
    }
    results.push_back(std::move(sr));
  }
  watchdog.idle();

  // ---- summary table ----
  std::printf("\nSummary (medians of L2-flushed calls; x-yard = time / cuBLASLt GEMM alone, graph "
              "vs graph; torch.compile figures from docs/gpu-target.md)\n");
  std::printf("%-15s %-22s %6s %9s %9s %8s %7s %7s %8s %8s\n", "shape", "combo", "result",
              "median_us", "b2b_us", "TFLOP/s", "%peak", "x-yard", "x-torchc", "tune_s");
  auto print_row = [&](const Shape& shape, const Row& r, double yard) {
    const double tf = shape.flops() / r.st.median;
    std::printf("%-15s %-22s %6s %9s %9s %8s %7s %7s %8s %8s\n", r.shape.c_str(), r.combo.c_str(),
                r.outcome.c_str(), fmt("%.1f", r.st.median * 1e6).c_str(),
                fmt("%.1f", r.st.b2b * 1e6).c_str(), fmt("%.1f", tf * 1e-12).c_str(),
                fmt("%.1f", 100 * tf / peak).c_str(), fmt("%.2f", r.st.median / yard).c_str(),
                fmt("%.2f", torch_compile_us(shape) * 1e-6 / r.st.median).c_str(),
                fmt("%.3f", r.tune_s).c_str());
  };
  for (const auto& sr : results) {
    const double yard = sr.yard_ok ? sr.yard_graph.st.median : NAN;
    if (yardstick) {
      print_row(sr.shape, sr.yard_plain, yard);
      print_row(sr.shape, sr.yard_graph, yard);
    }
    for (const auto& r : sr.rows) print_row(sr.shape, r, yard);
  }

  // ---- JSON ----
  if (!rq.json.empty()) {
    const std::string path = rq.json;
    std::ofstream os(path);
    if (!os) {
      std::fprintf(stderr, "harness --bench: cannot write %s\n", path.c_str());
      return 2;
    }
    JsonWriter j(os);
    j.begin_object();
    j.key("mode").value("bench");
    j.key("device").begin_object();
    j.key("name").value(dev.name);
    j.key("cc").value(std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
    j.key("sm_count").value(dev.sm_count);
    j.key("l2_bytes").value(uint64_t(dev.l2_bytes));
    j.key("driver_version").value(dev.driver_version);
    j.key("runtime_version").value(dev.runtime_version);
    j.key("cublaslt_version").value(uint64_t(dev.cublaslt_version));
    j.end_object();
    j.key("method").begin_object();
    j.key("timing").value("CUDA events per call on the plan's stream; 2x L2 written between calls");
    j.key("stopping_rule_rse").value(cfg.rse);
    j.key("min_reps").value(cfg.min_reps);
    j.key("max_reps").value(cfg.max_reps);
    j.key("max_time_s").value(cfg.max_time);
    j.key("warmup").value(cfg.warmup);
    j.key("distribution").value(dist);
    j.key("seed").value(seed);
    j.key("input_sets").value(kBenchSets);
    j.key("fresh").value(input_set_name(fresh_mode));
    j.key("fresh_inputs").value("a new input set written before every timed call (outside the timed region); "
                                "the last call of every batch of 10 checked against its own set's reference");
    j.key("flops").value("4*M*N*K*L per call");
    j.key("per_call").value("gpu plain: decode A + GEMM + silu*mul; B1/B2 decoded at init");
    j.key("torch_compile_source").value("docs/gpu-target.md (PyTorch 2.11 default mode, not this run)");
    j.end_object();
    j.key("context_s").value(context_s);
    j.key("peak_bf16_tflops").value(peak * 1e-12);
    j.key("peak_size").value(peak_size);
    j.key("shapes").begin_array();
    for (const auto& sr : results) {
      const double yard = sr.yard_ok ? sr.yard_graph.st.median : NAN;
      const double yard_eager = sr.yard_ok ? sr.yard_plain.st.median : NAN;
      j.begin_object();
      j.key("shape").value(sr.shape.str());
      j.key("reference_s").value(sr.reference_s);
      j.key("degenerate").value(sr.degenerate);
      j.key("torch_compile_us").value(torch_compile_us(sr.shape));
      auto row_json = [&](const Row& r) {
        j.begin_object();
        j.key("combo").value(r.combo);
        j.key("outcome").value(r.outcome);
        j.key("message").value(r.message);
        j.key("describe").value(r.describe);
        j.key("check").value(r.check);
        j.key("max_ulp").value(r.max_ulp);
        j.key("gpumode_mismatch").value(r.gpumode_mismatch);
        j.key("stages_s").begin_object();
        j.key("init").value(r.init_s);
        j.key("tune").value(r.tune_s);
        j.key("first_call").value(r.first_call_s);
        j.key("warmup").value(r.warmup_s);
        j.key("capture").value(r.capture_s);
        j.end_object();
        write_stats(j, r.st);
        const double tf = sr.shape.flops() / r.st.median;
        j.key("tflops").value(tf * 1e-12);
        j.key("pct_peak").value(100 * tf / peak);
        j.key("x_yardstick_graph").value(r.st.median / yard);
        j.key("x_yardstick_eager").value(r.st.median / yard_eager);
        j.key("speedup_vs_torch_compile").value(torch_compile_us(sr.shape) * 1e-6 / r.st.median);
        j.end_object();
      };
      j.key("yardstick").begin_array();
      if (yardstick) {
        row_json(sr.yard_plain);
        row_json(sr.yard_graph);
      }
      j.end_array();
      j.key("plain_parts").begin_array();
      for (const auto& r : sr.parts) row_json(r);
      j.end_array();
      j.key("combos").begin_array();
      for (const auto& r : sr.rows) row_json(r);
      j.end_array();
      j.end_object();
    }
    j.end_array();
    j.end_object();
    os << "\n";
  }
  return any_fail ? 1 : 0;
}

}  // namespace
}  // namespace nvfp4

// The module's bench entry point (bench.hpp): looked up by name in the bench child.
extern "C" int nvfp4_gpu_bench(const nvfp4::BenchRequest* request) { return nvfp4::run_bench(*request); }
