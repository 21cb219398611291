// plugin_cpu.cpp — an example C-ABI plugin (optimized/plugin/nvfp4_plugin.h): the NVFP4 dual GEMM
// on the CPU, self-contained (it links nothing of this project), meant to be copied as a template.
//
// Arithmetic, as the harness's tolerance assumes for a path (docs/design.md §4): FP4 E2M1 and E4M3
// scales decode exactly to fp32 (e2m1 * e4m3 has at most 6 significant bits), both GEMMs
// accumulate in fp32, silu(alpha1*g) * (alpha2*u) is evaluated in fp32 and rounded once to fp16
// (round to nearest even).
//
// Layouts (nvfp4_plugin.h): A (L, M, K/2), B1/B2 (L, N, K/2) packed, element 2j in the low nibble;
// SFA (L, M, K/16), SFB1/SFB2 (L, N, K/16); C (L, M, N) fp16 bits. All batch-outermost.
//
// Optimizations (toggles):
//   threads  split the rows of C over std::thread::hardware_concurrency() threads
//   blocked  decode A one block of rows at a time and apply the epilogue per block (G and U are
//            never kept whole, so read_intermediates is UNSUPPORTED); adds stage tune, which times
//            the block heights 4, 16, 64 and keeps the fastest
// Plain (no toggle): decode everything, keep G and U (fp32) whole, then the epilogue.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "nvfp4_plugin.h"

namespace {

// --- formats -------------------------------------------------------------------------------

float e2m1(uint8_t code) {
  static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8) ? -mag[code & 7] : mag[code & 7];
}

// E4M3FN: bias 7, no inf, NaN at 0x7F and 0xFF, subnormals m/8 * 2^-6.
float e4m3(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  float v;
  if (e == 15 && m == 7) v = NAN;
  else if (e == 0) v = std::ldexp(float(m) / 8.0f, -6);
  else v = std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}

// fp32 -> fp16 bits, round to nearest even; beyond the range +-inf; NaN stays a quiet NaN.
uint16_t to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) return uint16_t(sign | 0x7E00);
  if (ax >= 0x477FF000) return uint16_t(sign | 0x7C00);  // >= 65520 rounds to inf
  if (ax < 0x38800000) {                                  // below 2^-14: an fp16 subnormal
    float v;
    std::memcpy(&v, &ax, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(v * 16777216.0f)));  // exact scaling, RNE
  }
  const uint32_t rounded = ax + 0xFFF + ((ax >> 13) & 1);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

// Decodes `rows` rows of packed (rows, K/2) E2M1 with (rows, K/16) scales into (rows, K) fp32.
void decode(const uint8_t* packed, const uint8_t* sf, int64_t rows, int64_t K, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; k += 2) {
      const uint8_t byte = packed[r * (K / 2) + k / 2];
      const float s = e4m3(sf[r * (K / 16) + k / 16]);
      out[r * K + k] = e2m1(byte & 0xF) * s;
      out[r * K + k + 1] = e2m1(byte >> 4) * s;
    }
}

float dot(const float* a, const float* b, int64_t K) {
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k) acc += a[k] * b[k];
  return acc;
}

uint16_t epilogue(float g, float u, float alpha1, float alpha2) {
  const float x = alpha1 * g, y = alpha2 * u;
  return to_fp16(x / (1.0f + std::exp(-x)) * y);
}

// --- the handle ----------------------------------------------------------------------------

void put(char* buf, size_t size, const std::string& text) {
  if (!buf || size == 0) return;
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

thread_local std::string create_error;  // last_error(NULL)

}  // namespace

struct nvfp4_plugin_handle {
  int64_t M, N, K, L;
  bool threads = false, blocked = false;
  int64_t block_rows = 16;
  std::vector<uint8_t> a, b1, b2, sfa, sfb1, sfb2;
  float alpha1 = 1, alpha2 = 1;
  std::vector<float> g, u;        // plain only: (L, M, N)
  std::vector<uint16_t> c;        // (L, M, N)
  std::vector<float> db1, db2;    // decoded B1, B2 of one batch, (N, K)
  std::string error;

  int nthreads() const {
    return threads ? int(std::max(1u, std::thread::hardware_concurrency())) : 1;
  }

  // Runs rows(m0, m1) for the rows [0, M) of one batch, split over the threads.
  template <class F>
  void for_rows(F&& rows) {
    const int n = int(std::min<int64_t>(nthreads(), M));
    if (n <= 1) return rows(0, M);
    std::vector<std::thread> pool;
    for (int t = 0; t < n; ++t) pool.emplace_back([&, t] { rows(M * t / n, M * (t + 1) / n); });
    for (auto& th : pool) th.join();
  }

  void call() {
    db1.resize(size_t(N * K));
    db2.resize(size_t(N * K));
    for (int64_t l = 0; l < L; ++l) {
      decode(b1.data() + l * N * (K / 2), sfb1.data() + l * N * (K / 16), N, K, db1.data());
      decode(b2.data() + l * N * (K / 2), sfb2.data() + l * N * (K / 16), N, K, db2.data());
      for_rows([&](int64_t m0, int64_t m1) {
        const int64_t step = blocked ? block_rows : (m1 - m0);
        std::vector<float> arows(size_t(std::max<int64_t>(step, 1) * K));
        for (int64_t r0 = m0; r0 < m1; r0 += step) {
          const int64_t rows = std::min(step, m1 - r0);
          decode(a.data() + (l * M + r0) * (K / 2), sfa.data() + (l * M + r0) * (K / 16), rows, K, arows.data());
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t at = (l * M + r0 + i) * N;
            for (int64_t n = 0; n < N; ++n) {
              const float gv = dot(arows.data() + i * K, db1.data() + n * K, K);
              const float uv = dot(arows.data() + i * K, db2.data() + n * K, K);
              if (!blocked) {
                g[size_t(at + n)] = gv;
                u[size_t(at + n)] = uv;
              }
              c[size_t(at + n)] = epilogue(gv, uv, alpha1, alpha2);
            }
          }
        }
      });
    }
  }

  void copy_inputs(int which, const nvfp4_plugin_arrays* x) {
    a.assign(x->a, x->a + L * M * (K / 2));
    sfa.assign(x->sfa, x->sfa + L * M * (K / 16));
    if (which == NVFP4_PLUGIN_INPUTS_ALL) {
      b1.assign(x->b1, x->b1 + L * N * (K / 2));
      b2.assign(x->b2, x->b2 + L * N * (K / 2));
      sfb1.assign(x->sfb1, x->sfb1 + L * N * (K / 16));
      sfb2.assign(x->sfb2, x->sfb2 + L * N * (K / 16));
      alpha1 = x->alpha1;
      alpha2 = x->alpha2;
    }
  }
};

namespace {

int fail(nvfp4_plugin_handle* h, const std::string& why) {
  (h ? h->error : create_error) = why;
  return NVFP4_PLUGIN_ERROR;
}

int p_create(const nvfp4_plugin_shape* s, const nvfp4_plugin_arrays* x, const char* opts,
             nvfp4_plugin_handle** out) {
  *out = nullptr;
  if (s->M < 1 || s->N < 1 || s->L < 1 || s->K < 16 || s->K % 16 != 0)
    return fail(nullptr, "bad shape: need M, N, L >= 1 and K a positive multiple of 16");
  nvfp4_plugin_handle* h = new (std::nothrow) nvfp4_plugin_handle();
  if (!h) return fail(nullptr, "out of memory");
  h->M = s->M, h->N = s->N, h->K = s->K, h->L = s->L;
  const std::string list = opts ? opts : "";
  for (size_t pos = 0; pos < list.size();) {
    size_t end = list.find('+', pos);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(pos, end - pos);
    if (name == "threads") h->threads = true;
    else if (name == "blocked") h->blocked = true;
    else {
      delete h;
      return fail(nullptr, "unknown optimization '" + name + "'");
    }
    pos = end + 1;
  }
  try {
    h->copy_inputs(NVFP4_PLUGIN_INPUTS_ALL, x);
    h->c.assign(size_t(h->L * h->M * h->N), 0);
    if (!h->blocked) {
      h->g.assign(h->c.size(), 0.0f);
      h->u.assign(h->c.size(), 0.0f);
    }
  } catch (const std::exception& e) {
    delete h;
    return fail(nullptr, std::string("create: ") + e.what());
  }
  *out = h;
  return NVFP4_PLUGIN_OK;
}

int p_tune(nvfp4_plugin_handle* h) {
  if (!h->blocked) return NVFP4_PLUGIN_OK;
  double best = 1e300;
  int64_t best_rows = h->block_rows;
  for (int64_t rows : {4, 16, 64}) {
    h->block_rows = rows;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2; ++i) h->call();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt < best) best = dt, best_rows = rows;
  }
  h->block_rows = best_rows;
  return NVFP4_PLUGIN_OK;
}

int p_set_inputs(nvfp4_plugin_handle* h, int which, const nvfp4_plugin_arrays* x) {
  if (which != NVFP4_PLUGIN_INPUTS_ACTIVATIONS && which != NVFP4_PLUGIN_INPUTS_ALL)
    return fail(h, "set_inputs: unknown input set " + std::to_string(which));
  try {
    h->copy_inputs(which, x);
  } catch (const std::exception& e) {
    return fail(h, std::string("set_inputs: ") + e.what());
  }
  return NVFP4_PLUGIN_OK;
}

int p_enqueue(nvfp4_plugin_handle* h) {
  try {
    h->call();
  } catch (const std::exception& e) {
    return fail(h, std::string("enqueue: ") + e.what());
  }
  return NVFP4_PLUGIN_OK;
}

int p_synchronize(nvfp4_plugin_handle*) { return NVFP4_PLUGIN_OK; }  // calls finish in enqueue

int p_poison(nvfp4_plugin_handle* h, uint16_t bits) {
  std::fill(h->c.begin(), h->c.end(), bits);
  return NVFP4_PLUGIN_OK;
}

int p_read_output(nvfp4_plugin_handle* h, uint16_t* c) {
  std::copy(h->c.begin(), h->c.end(), c);
  return NVFP4_PLUGIN_OK;
}

int p_read_intermediates(nvfp4_plugin_handle* h, float* g, float* u) {
  if (h->blocked) return NVFP4_PLUGIN_UNSUPPORTED;
  std::copy(h->g.begin(), h->g.end(), g);
  std::copy(h->u.begin(), h->u.end(), u);
  return NVFP4_PLUGIN_OK;
}

int p_describe(nvfp4_plugin_handle* h, char* text, size_t size) {
  std::string d = "cpu example plugin: exact decode, fp32 dot products, fp32 epilogue";
  if (h->blocked) d += ", blocks of " + std::to_string(h->block_rows) + " rows";
  d += ", " + std::to_string(h->nthreads()) + " thread(s)";
  put(text, size, d);
  return NVFP4_PLUGIN_OK;
}

int p_destroy(nvfp4_plugin_handle* h) {
  delete h;
  return NVFP4_PLUGIN_OK;
}

const char* p_last_error(nvfp4_plugin_handle* h) { return h ? h->error.c_str() : create_error.c_str(); }

const nvfp4_plugin_optimization kOptimizations[] = {
    {"threads", "split the rows of C over all hardware threads", 0},
    {"blocked", "decode A per block of rows, epilogue per block; tunes the block height",
     NVFP4_PLUGIN_STAGE_TUNE},
};

const nvfp4_plugin_v1 kPlugin = {
    NVFP4_PLUGIN_ABI_VERSION,
    sizeof(nvfp4_plugin_v1),
    "cpu-example",
    "example plugin: the dual GEMM on the CPU (examples/plugin_cpu)",
    2,
    kOptimizations,
    nullptr,  // available: always
    nullptr,  // supports: every valid shape
    p_create,
    p_tune,
    nullptr,  // capture: no optimization adds it
    p_set_inputs,
    p_enqueue,
    p_synchronize,
    p_poison,
    p_read_output,
    p_read_intermediates,
    p_describe,
    p_destroy,
    p_last_error,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const nvfp4_plugin_v1* nvfp4_plugin_v1_get(void) {
  return &kPlugin;
}
