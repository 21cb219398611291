// graph.cu — the "graph" optimization (gpu backend): capture one call's whole launch sequence
// into a CUDA graph once (stage `capture`) and replay it with a single cudaGraphLaunch per call.
//
// It wraps any plan whose base() is a GpuPlan (plain, fused, with or without autotune), so it
// composes: autotune (an inner wrapper, lower order) has chosen its candidate before capture;
// the fused variant derives from GpuPlan. Rules it relies on (gpu_plan.hpp): the inner enqueue()
// issues work only on the base plan's stream and allocates, synchronizes and queries nothing, so
// it is capturable. Before capture() (stage warmup) calls run eagerly; after it they replay.
// Changing the inner configuration after capture (select) is refused: the graph would replay the
// old one. New inputs (set_inputs) go into the inner plan's buffers, whose addresses the graph
// holds; the global scales alpha1 and alpha2, which the kernels take by value, are in the graph's
// kernel nodes, so after InputSet::All the graph is captured again into a scratch graph and the
// executable graph updated from it (cudaGraphExecUpdate; instantiated anew if the update is
// refused), outside any timed call.
#include <string>

#include "gpu_plan.hpp"
#include "registry.hpp"

namespace nvfp4::gpu {

namespace {

class GraphPlan final : public PlanWrapper {
 public:
  explicit GraphPlan(std::unique_ptr<Plan> inner) : PlanWrapper(std::move(inner)) {
    gpu_ = gpu_base(this->inner());
    if (!gpu_) throw std::logic_error("graph: the inner plan is not a GPU plan");
  }
  ~GraphPlan() override { release(); }

  std::string describe() const override {
    return inner().describe() + (exec_ ? " [CUDA graph replay, " + std::to_string(nodes_) + " nodes]"
                                       : " [CUDA graph, not captured yet]");
  }

  void capture() override {
    inner().capture();  // an inner wrapper with its own capture hook goes first
    release();
    // One eager call first: lazily loaded kernel modules and cuBLASLt's first-use setup then
    // happen outside the capture.
    inner().enqueue();
    inner().synchronize();
    cudaStream_t s = gpu_->stream();
    NVFP4_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      inner().enqueue();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(s, &broken);  // leaves the stream usable; the error is the caller's
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    NVFP4_CUDA_CHECK(cudaStreamEndCapture(s, &graph_));
    NVFP4_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
    NVFP4_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &nodes_));
    // Upload now so the first replay does not pay for it.
    NVFP4_CUDA_CHECK(cudaGraphUpload(exec_, s));
    inner().synchronize();
  }

  void set_inputs(const Problem& p, InputSet which) override {
    inner().set_inputs(p, which);
    if (exec_ && which == InputSet::All) update();
  }

  void enqueue() override {
    if (!exec_) {
      inner().enqueue();  // before capture: eager (warm-up calls)
      return;
    }
    NVFP4_CUDA_CHECK(cudaGraphLaunch(exec_, gpu_->stream()));
  }

  void select(size_t index) override {
    if (exec_)
      throw std::logic_error("graph: select() after capture would be ignored by the replay; "
                             "tune before capture");
    inner().select(index);
  }

 private:
  // Captures one call again and updates the executable graph's nodes from it (same topology,
  // new kernel arguments), or instantiates it anew when the update is refused.
  void update() {
    cudaStream_t s = gpu_->stream();
    cudaGraph_t fresh = nullptr;
    NVFP4_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      inner().enqueue();
    } catch (...) {
      cudaStreamEndCapture(s, &fresh);
      if (fresh) cudaGraphDestroy(fresh);
      throw;
    }
    NVFP4_CUDA_CHECK(cudaStreamEndCapture(s, &fresh));
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec_, fresh, &info) != cudaSuccess) {
      (void)cudaGetLastError();  // the refused update is not an error of the next call
      cudaGraphExec_t exec = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&exec, fresh, 0);
      if (e != cudaSuccess) {
        cudaGraphDestroy(fresh);
        NVFP4_CUDA_CHECK(e);
      }
      cudaGraphExecDestroy(exec_);
      exec_ = exec;
    }
    cudaGraphDestroy(graph_);
    graph_ = fresh;
    NVFP4_CUDA_CHECK(cudaGraphUpload(exec_, s));
    inner().synchronize();
  }

  void release() noexcept {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

  GpuPlan* gpu_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
};

const bool registered = register_listed(
    "gpu", "graph", nullptr,
    [](std::unique_ptr<Plan> inner, const PlanOptions&) -> std::unique_ptr<Plan> {
      return make_graph_plan(std::move(inner));
    },
    nullptr);

}  // namespace

std::unique_ptr<Plan> make_graph_plan(std::unique_ptr<Plan> inner) {
  return std::make_unique<GraphPlan>(std::move(inner));
}

}  // namespace nvfp4::gpu
