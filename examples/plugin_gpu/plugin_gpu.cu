// plugin_gpu.cu — an example C-ABI plugin (optimized/plugin/nvfp4_plugin.h) wrapping a simple CUDA
// kernel: the template for a user's own GPU kernel. Self-contained: it links only the CUDA runtime.
//
// The kernel: one thread per output element (l, m, n). It walks K, decodes the FP4 E2M1 codes
// and E4M3 scales of A, B1 and B2 from global memory exactly to fp32, accumulates both dot
// products in fp32, then evaluates silu(alpha1*g) * (alpha2*u) in fp32 and rounds once to fp16
// (__float2half_rn). Simple, not fast: a user replaces `dual_gemm_kernel` and keeps the rest.
//
// Layouts (nvfp4_plugin.h): A (L, M, K/2), B1/B2 (L, N, K/2) packed, element 2j in the low nibble;
// SFA (L, M, K/16), SFB1/SFB2 (L, N, K/16); C (L, M, N) fp16. All batch-outermost, on the device as
// on the host.
//
// Optimizations:
//   graph  adds stage capture: the kernel launch is captured once in a CUDA graph on the plan's
//          stream; later calls replay it. The graph reads the same device buffers, which
//          set_inputs() overwrites in place, so a replay sees new inputs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "nvfp4_plugin.h"

namespace {

__device__ float e2m1(uint32_t code) {
  const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = mag[code & 7];
  return (code & 8) ? -v : v;
}

// E4M3FN: bias 7, no inf, NaN at 0x7F / 0xFF, subnormals m/8 * 2^-6.
__device__ float e4m3(uint32_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  float v;
  if (e == 15 && m == 7) v = __int_as_float(0x7FC00000);
  else if (e == 0) v = ldexpf(float(m) / 8.0f, -6);
  else v = ldexpf(1.0f + float(m) / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}

__global__ void dual_gemm_kernel(const uint8_t* a, const uint8_t* b1, const uint8_t* b2, const uint8_t* sfa,
                                 const uint8_t* sfb1, const uint8_t* sfb2, const float* alphas, __half* c,
                                 int64_t M, int64_t N, int64_t K) {
  const int64_t n = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t m = blockIdx.y, l = blockIdx.z;
  if (n >= N) return;
  const int64_t M_rows = M;
  const uint8_t* pa = a + (l * M_rows + m) * (K / 2);
  const uint8_t* pb1 = b1 + (l * N + n) * (K / 2);
  const uint8_t* pb2 = b2 + (l * N + n) * (K / 2);
  const uint8_t* sa = sfa + (l * M_rows + m) * (K / 16);
  const uint8_t* s1 = sfb1 + (l * N + n) * (K / 16);
  const uint8_t* s2 = sfb2 + (l * N + n) * (K / 16);
  float g = 0.0f, u = 0.0f;
  for (int64_t kb = 0; kb < K / 16; ++kb) {
    const float xa = e4m3(sa[kb]), x1 = e4m3(s1[kb]), x2 = e4m3(s2[kb]);
    for (int j = 0; j < 8; ++j) {
      const uint32_t ba = pa[kb * 8 + j], bb1 = pb1[kb * 8 + j], bb2 = pb2[kb * 8 + j];
      const float a0 = e2m1(ba & 0xF) * xa, a1 = e2m1(ba >> 4) * xa;
      g = fmaf(a0, e2m1(bb1 & 0xF) * x1, g);
      g = fmaf(a1, e2m1(bb1 >> 4) * x1, g);
      u = fmaf(a0, e2m1(bb2 & 0xF) * x2, u);
      u = fmaf(a1, e2m1(bb2 >> 4) * x2, u);
    }
  }
  const float x = alphas[0] * g, y = alphas[1] * u;
  c[(l * M_rows + m) * N + n] = __float2half_rn(x / (1.0f + expf(-x)) * y);
#ifdef NVFP4_PLANTED_OOB_READ
  // Not part of the example: the test-only build tests/plugin makes with this macro reads one byte
  // past the end of A and discards it. The output stays right, so every output check passes; only a
  // sanitizer (harness --sanitize memcheck) sees the access.
  if (n == 0 && m == 0 && l == 0) {
    const volatile uint8_t* past = a + int64_t(gridDim.z) * M_rows * (K / 2);
    (void)*past;
  }
#endif
}

__global__ void fill_kernel(uint16_t* c, int64_t count, uint16_t bits) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) c[i] = bits;
}

void put(char* buf, size_t size, const std::string& text) {
  if (!buf || size == 0) return;
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

thread_local std::string create_error;

}  // namespace

struct nvfp4_plugin_handle {
  int64_t M = 0, N = 0, K = 0, L = 0;
  bool graph = false;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  uint8_t *a = nullptr, *b1 = nullptr, *b2 = nullptr, *sfa = nullptr, *sfb1 = nullptr, *sfb2 = nullptr;
  float* alphas = nullptr;  // device: alpha1, alpha2 (a graph replays with the current values)
  __half* c = nullptr;
  std::string error;

  int64_t a_bytes() const { return L * M * (K / 2); }
  int64_t b_bytes() const { return L * N * (K / 2); }
  int64_t sfa_bytes() const { return L * M * (K / 16); }
  int64_t sfb_bytes() const { return L * N * (K / 16); }
  int64_t c_elems() const { return L * M * N; }

  void launch() {
    const dim3 block(128), grid(unsigned((N + 127) / 128), unsigned(M), unsigned(L));
    dual_gemm_kernel<<<grid, block, 0, stream>>>(a, b1, b2, sfa, sfb1, sfb2, alphas, c, M, N, K);
  }
};

namespace {

// Records a CUDA failure: the status for the entry point to return.
int fail(nvfp4_plugin_handle* h, const std::string& why) {
  (h ? h->error : create_error) = why;
  return NVFP4_PLUGIN_ERROR;
}

#define CHECK_CUDA(h, call)                                                       \
  do {                                                                            \
    const cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) return fail((h), std::string(#call) + ": " + cudaGetErrorString(err_)); \
  } while (0)

int p_available(char* reason, size_t size) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    put(reason, size, std::string("no CUDA device (") + (err != cudaSuccess ? cudaGetErrorString(err) : "count 0") + ")");
    return NVFP4_PLUGIN_UNSUPPORTED;
  }
  return NVFP4_PLUGIN_OK;
}

// The grid puts M and L in its y and z dimensions (at most 65535 each).
int p_supports(const nvfp4_plugin_shape* s, const char*, char* reason, size_t size) {
  if (s->M > 65535 || s->L > 65535) {
    put(reason, size, "M and L must be at most 65535 (grid dimensions of the example kernel)");
    return NVFP4_PLUGIN_UNSUPPORTED;
  }
  return NVFP4_PLUGIN_OK;
}

int copy_inputs(nvfp4_plugin_handle* h, int which, const nvfp4_plugin_arrays* x) {
  CHECK_CUDA(h, cudaMemcpy(h->a, x->a, size_t(h->a_bytes()), cudaMemcpyHostToDevice));
  CHECK_CUDA(h, cudaMemcpy(h->sfa, x->sfa, size_t(h->sfa_bytes()), cudaMemcpyHostToDevice));
  if (which == NVFP4_PLUGIN_INPUTS_ALL) {
    CHECK_CUDA(h, cudaMemcpy(h->b1, x->b1, size_t(h->b_bytes()), cudaMemcpyHostToDevice));
    CHECK_CUDA(h, cudaMemcpy(h->b2, x->b2, size_t(h->b_bytes()), cudaMemcpyHostToDevice));
    CHECK_CUDA(h, cudaMemcpy(h->sfb1, x->sfb1, size_t(h->sfb_bytes()), cudaMemcpyHostToDevice));
    CHECK_CUDA(h, cudaMemcpy(h->sfb2, x->sfb2, size_t(h->sfb_bytes()), cudaMemcpyHostToDevice));
    const float alphas[2] = {x->alpha1, x->alpha2};
    CHECK_CUDA(h, cudaMemcpy(h->alphas, alphas, sizeof alphas, cudaMemcpyHostToDevice));
  }
  return NVFP4_PLUGIN_OK;
}

int p_destroy(nvfp4_plugin_handle* h) {
  if (h->exec) cudaGraphExecDestroy(h->exec);
  for (void* p : {(void*)h->a, (void*)h->b1, (void*)h->b2, (void*)h->sfa, (void*)h->sfb1, (void*)h->sfb2,
                  (void*)h->alphas, (void*)h->c})
    if (p) cudaFree(p);
  if (h->stream) cudaStreamDestroy(h->stream);
  delete h;
  return NVFP4_PLUGIN_OK;
}

int p_create(const nvfp4_plugin_shape* s, const nvfp4_plugin_arrays* x, const char* opts,
             nvfp4_plugin_handle** out) {
  *out = nullptr;
  if (s->M < 1 || s->N < 1 || s->L < 1 || s->K < 16 || s->K % 16 != 0)
    return fail(nullptr, "bad shape: need M, N, L >= 1 and K a positive multiple of 16");
  if (s->M > 65535 || s->L > 65535) return fail(nullptr, "M and L must be at most 65535 (grid dimensions)");
  const std::string list = opts ? opts : "";
  bool graph = false;
  if (list == "graph") graph = true;
  else if (!list.empty()) return fail(nullptr, "unknown optimization combination '" + list + "'");
  auto* h = new (std::nothrow) nvfp4_plugin_handle();
  if (!h) return fail(nullptr, "out of memory");
  h->M = s->M, h->N = s->N, h->K = s->K, h->L = s->L;
  h->graph = graph;
  int st = NVFP4_PLUGIN_OK;
  auto alloc = [&](void** p, int64_t bytes) {
    if (st != NVFP4_PLUGIN_OK) return;
    const cudaError_t err = cudaMalloc(p, size_t(bytes));
    if (err != cudaSuccess) st = fail(nullptr, std::string("cudaMalloc: ") + cudaGetErrorString(err));
  };
  alloc((void**)&h->a, h->a_bytes());
  alloc((void**)&h->b1, h->b_bytes());
  alloc((void**)&h->b2, h->b_bytes());
  alloc((void**)&h->sfa, h->sfa_bytes());
  alloc((void**)&h->sfb1, h->sfb_bytes());
  alloc((void**)&h->sfb2, h->sfb_bytes());
  alloc((void**)&h->alphas, 2 * sizeof(float));
  alloc((void**)&h->c, h->c_elems() * 2);
  if (st == NVFP4_PLUGIN_OK) {
    const cudaError_t err = cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) st = fail(nullptr, std::string("cudaStreamCreate: ") + cudaGetErrorString(err));
  }
  if (st == NVFP4_PLUGIN_OK && copy_inputs(h, NVFP4_PLUGIN_INPUTS_ALL, x) != NVFP4_PLUGIN_OK)
    st = fail(nullptr, h->error);
  if (st != NVFP4_PLUGIN_OK) {
    p_destroy(h);
    return st;
  }
  *out = h;
  return NVFP4_PLUGIN_OK;
}

int p_capture(nvfp4_plugin_handle* h) {
  if (!h->graph) return NVFP4_PLUGIN_OK;
  cudaGraph_t g = nullptr;
  CHECK_CUDA(h, cudaStreamBeginCapture(h->stream, cudaStreamCaptureModeThreadLocal));
  h->launch();
  CHECK_CUDA(h, cudaStreamEndCapture(h->stream, &g));
  const cudaError_t err = cudaGraphInstantiate(&h->exec, g, 0);
  cudaGraphDestroy(g);
  CHECK_CUDA(h, err);
  return NVFP4_PLUGIN_OK;
}

int p_set_inputs(nvfp4_plugin_handle* h, int which, const nvfp4_plugin_arrays* x) {
  CHECK_CUDA(h, cudaStreamSynchronize(h->stream));  // never while a call is in flight
  return copy_inputs(h, which, x);
}

int p_enqueue(nvfp4_plugin_handle* h) {
  if (h->exec) {
    CHECK_CUDA(h, cudaGraphLaunch(h->exec, h->stream));
  } else {
    h->launch();
    CHECK_CUDA(h, cudaGetLastError());
  }
  return NVFP4_PLUGIN_OK;
}

int p_synchronize(nvfp4_plugin_handle* h) {
  CHECK_CUDA(h, cudaStreamSynchronize(h->stream));
  return NVFP4_PLUGIN_OK;
}

int p_poison(nvfp4_plugin_handle* h, uint16_t bits) {
  const int64_t n = h->c_elems();
  fill_kernel<<<unsigned((n + 255) / 256), 256, 0, h->stream>>>(reinterpret_cast<uint16_t*>(h->c), n, bits);
  CHECK_CUDA(h, cudaGetLastError());
  CHECK_CUDA(h, cudaStreamSynchronize(h->stream));
  return NVFP4_PLUGIN_OK;
}

int p_read_output(nvfp4_plugin_handle* h, uint16_t* c) {
  CHECK_CUDA(h, cudaStreamSynchronize(h->stream));
  CHECK_CUDA(h, cudaMemcpy(c, h->c, size_t(h->c_elems()) * 2, cudaMemcpyDeviceToHost));
  return NVFP4_PLUGIN_OK;
}

int p_describe(nvfp4_plugin_handle* h, char* text, size_t size) {
  put(text, size, std::string("gpu example plugin: one thread per output, fp32 accumulate") +
                      (h->graph ? (h->exec ? ", replaying a CUDA graph" : ", graph not captured yet") : ""));
  return NVFP4_PLUGIN_OK;
}

const char* p_last_error(nvfp4_plugin_handle* h) { return h ? h->error.c_str() : create_error.c_str(); }

const nvfp4_plugin_optimization kOptimizations[] = {
    {"graph", "capture the launch once in a CUDA graph, replay it", NVFP4_PLUGIN_STAGE_CAPTURE},
};

const nvfp4_plugin_v1 kPlugin = {
    NVFP4_PLUGIN_ABI_VERSION,
    sizeof(nvfp4_plugin_v1),
    "gpu-example",
    "example plugin: a simple CUDA kernel (examples/plugin_gpu)",
    1,
    kOptimizations,
    p_available,
    p_supports,
    p_create,
    nullptr,  // tune: no optimization adds it
    p_capture,
    p_set_inputs,
    p_enqueue,
    p_synchronize,
    p_poison,
    p_read_output,
    nullptr,  // read_intermediates: not kept
    p_describe,
    p_destroy,
    p_last_error,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const nvfp4_plugin_v1* nvfp4_plugin_v1_get(void) {
  return &kPlugin;
}
