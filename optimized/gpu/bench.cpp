// bench.cpp — the bench mode's GPU extras (harness/cli/bench.hpp): the measurements that are not paths,
// so not bench trials. Part of the gpu backend's module; the harness's extras child calls
// nvfp4_gpu_bench_extras, which writes one JSON file the parent merges into the bench table:
//   device     the device, driver, runtime and cuBLASLt versions; context_s (context creation)
//   peak       the bf16 peak: a cubic cuBLASLt GEMM of --bench-peak-size (TFLOP/s)
//   per shape (case: --bench-shapes, --bench-dist, --bench-seed, set 0 as the bench trials')
//     yardstick    the cuBLASLt bf16 GEMM alone over [B1;B2] on operands decoded ahead of time,
//                  its best algorithm (every candidate, 15 flushed calls each), eager and graph-
//                  replayed; its G and U are checked against the exact reference's before it is
//                  timed (a yardstick out of the fp32 GEMM bound is an ERROR row, never timed)
//     plain_parts  plain's per-call kernels alone (A decode; silu*mul on a D computed at init):
//                  where plain's time goes beyond the GEMM; parts of a checked path, not checked
// Every figure is timed with the one timing helper (optimized/plan.hpp measure_calls over
// GpuPlan::timed_calls: CUDA events, L2 flushed before each call) under the bench's stopping
// rule, and back-to-back as the bench trials' stage time does. The parent's watchdog bounds the
// whole child (bench.hpp); a failure of one measurement is an ERROR row, the others still run.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "bench.hpp"
#include "bench_row.hpp"
#include "cases.hpp"
#include "compare.hpp"
#include "errors.hpp"
#include "reference.hpp"
#include "registry.hpp"

#include "gpu/gpu_plan.hpp"

namespace nvfp4 {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Row {
  std::string combo, outcome = "PASS", message, describe, check;
  double init_s = NAN, tune_s = NAN, capture_s = NAN;
  Timing t;
  double b2b = NAN;
};

// The steady state and the back-to-back figure of `plan` (the bench trials' stage time, without
// input rotation: these are not checked paths).
void time_row(Plan& plan, const TimingRule& rule, Row& r) {
  r.t = measure_calls(plan, rule);
  const int n = back_to_back_calls(r.t.median);
  r.b2b = plan.back_to_back(plan, n);
}

Json row_json(const Row& r) {
  Json j = {{"combo", r.combo},
            {"outcome", r.outcome},
            {"message", r.message},
            {"describe", r.describe},
            {"check", r.check},
            {"stages_s", {{"init", r.init_s}, {"tune", r.tune_s}, {"capture", r.capture_s}}}};
  add_timing_members(j, r.t, r.b2b);
  return j;
}

// The yardstick rows (eager, graph) of one shape.
void yardstick(const Problem& p, const ReferenceResult& ref, const TimingRule& rule, Row& eager, Row& graph) {
  eager.combo = "cublasLt-gemm-alone";
  graph.combo = "cublasLt-gemm-alone+graph";
  try {
    const auto t0 = Clock::now();
    std::unique_ptr<gpu::GpuPlan> y = gpu::make_gemm_yardstick(p);
    y->synchronize();
    eager.init_s = since(t0);
    y->enqueue();
    std::vector<float> g, u;
    y->read_intermediates(g, u);
    const Tolerance tol(p.shape.K, p.alpha1, p.alpha2);
    int64_t bad = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const double eg = std::fabs(double(g[i]) - ref.g[i]), eu = std::fabs(double(u[i]) - ref.u[i]);
      if (!(eg <= tol.gemm_bound(ref.g_abs[i])) || !(eu <= tol.gemm_bound(ref.u_abs[i]))) ++bad;
    }
    if (bad)
      throw std::runtime_error("yardstick G/U out of the fp32 GEMM bound at " + std::to_string(bad) + " elements");
    const auto cands = y->candidates();
    size_t best = 0;
    double best_t = INFINITY;
    const auto t_tune = Clock::now();
    for (size_t i = 0; i < cands.size(); ++i) {
      y->select(i);
      y->enqueue();
      const double t = seconds_per_call(*y, 15);
      if (t < best_t) best_t = t, best = i;
    }
    y->select(best);
    eager.tune_s = since(t_tune);
    eager.describe = y->describe();
    eager.check = graph.check = "G/U within the fp32 GEMM bound";
    time_row(*y, rule, eager);
    std::unique_ptr<Plan> yg = gpu::make_graph_plan(std::move(y));
    const auto t_cap = Clock::now();
    yg->capture();
    yg->synchronize();
    graph.capture_s = since(t_cap);
    graph.describe = yg->describe();
    time_row(*yg, rule, graph);
  } catch (const std::exception& e) {
    for (Row* r : {&eager, &graph}) {
      r->outcome = "ERROR";
      r->message = e.what();
      r->t = Timing{};
      r->b2b = NAN;
    }
  }
}

int run_extras(const BenchExtrasRequest& rq) {
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
  double peak = NAN;
  if (rq.peak_size > 0) peak = gpu::measure_bf16_peak_flops(rq.peak_size, rq.peak_size, rq.peak_size, 20);

  std::ofstream os(rq.out);
  if (!os) throw std::runtime_error("cannot write " + rq.out);
  Json j;
  j["device"] = {{"name", dev.name},
                 {"cc", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor)},
                 {"sm_count", dev.sm_count},
                 {"l2_bytes", uint64_t(dev.l2_bytes)},
                 {"driver_version", dev.driver_version},
                 {"runtime_version", dev.runtime_version},
                 {"cublaslt_version", uint64_t(dev.cublaslt_version)}};
  j["context_s"] = context_s;
  j["peak_bf16_tflops"] = peak * 1e-12;
  Json shapes = Json::array();
  for (const auto& text : split_commas(rq.shapes)) {
    CaseSpec c;
    c.shape = Shape::parse(text);
    c.dist = rq.dist;
    c.seed = rq.seed;
    const Problem p = c.make();
    Json yard = Json::array();
    if (rq.yardstick) {
      ReferenceOptions ro;
      ro.abs_sums = true;
      const ReferenceResult ref = compute_reference(p, ro);
      Row eager, graph;
      yardstick(p, ref, rq.rule, eager, graph);
      yard.push_back(row_json(eager));
      yard.push_back(row_json(graph));
    }
    Json parts = Json::array();
    if (rq.parts)
      for (const auto part : {gpu::PlainPart::DecodeA, gpu::PlainPart::Epilogue}) {
        Row r;
        r.combo = part == gpu::PlainPart::DecodeA ? "part:decode-A" : "part:silu-mul";
        r.check = "not checked (a part of plain; plain's output is checked)";
        try {
          std::unique_ptr<gpu::GpuPlan> pp = gpu::make_plain_part(p, part);
          r.describe = pp->describe();
          time_row(*pp, rq.rule, r);
        } catch (const std::exception& e) {
          r.outcome = "ERROR";
          r.message = e.what();
          r.t = Timing{};
          r.b2b = NAN;
        }
        parts.push_back(row_json(r));
      }
    shapes.push_back(Json{{"shape", c.shape.str()}, {"yardstick", std::move(yard)}, {"plain_parts", std::move(parts)}});
  }
  j["shapes"] = std::move(shapes);
  os << json_text(j) << "\n";
  return os ? 0 : 1;
}

}  // namespace
}  // namespace nvfp4

// The module's extras entry point (harness/cli/bench.hpp): looked up by name in the extras child.
extern "C" int nvfp4_gpu_bench_extras(const nvfp4::BenchExtrasRequest* request) {
  try {
    return nvfp4::run_extras(*request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu bench extras: %s\n", e.what());
    return 1;
  }
}
