// broken_plugin.cpp — deliberately broken plugins for the loader's tests (tests/plugin/CMakeLists.txt
// builds this file once per defect, selected by BROKEN_<DEFECT>):
//   MISSING_SYMBOL     exports nvfp4_plugin_v2_get instead of nvfp4_plugin_v1_get
//   WRONG_ABI          abi_version 99
//   SMALL_TABLE        struct_size smaller than the version-1 table
//   NULL_ENTRY         enqueue is NULL
//   STAGE_WITHOUT_HOOK an optimization adds stage tune but tune is NULL
//   BAD_OPT_NAME       an optimization named "Fast Path"
//   CREATE_FAILS       create() returns ERROR with a reason
//   CREATE_FAILS_SILENTLY create() returns ERROR and last_error(NULL) returns NULL
//   CREATE_CRASHES     create() dereferences NULL (SIGSEGV in stage init)
//   LOAD_HANG          a static initializer sleeps forever (the load-stage watchdog's case)
//   WRITES_WEIGHTS     create() writes into the const b1 it is handed (repacks a byte in place)
//   WRITES_ACTIVATIONS set_inputs() writes into the const sfa it is handed
//   READS_NOTHING      read_output() returns OK without writing the caller's buffer
// Otherwise each is a minimal working plugin: output all zeros.
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <new>
#include <vector>

#include "nvfp4_plugin.h"

struct nvfp4_plugin_handle {
  std::vector<uint16_t> c;
};

namespace {

#ifdef BROKEN_LOAD_HANG
struct HangAtLoad {
  HangAtLoad() {
    for (;;) sleep(1);
  }
} hang_at_load;
#endif

int p_create(const nvfp4_plugin_shape* s, [[maybe_unused]] const nvfp4_plugin_arrays* arrays, const char*,
             nvfp4_plugin_handle** out) {
#ifdef BROKEN_WRITES_WEIGHTS
  auto* b1 = const_cast<uint8_t*>(arrays->b1);
  b1[1] = uint8_t((b1[1] << 4) | (b1[1] >> 4)) ^ 0x11;  // never equal to the byte it replaces
#endif
#if defined(BROKEN_CREATE_FAILS) || defined(BROKEN_CREATE_FAILS_SILENTLY)
  (void)s;
  *out = nullptr;
  return NVFP4_PLUGIN_ERROR;
#elif defined(BROKEN_CREATE_CRASHES)
  (void)s;
  *out = nullptr;
  std::raise(SIGSEGV);
  return NVFP4_PLUGIN_ERROR;
#else
  auto* h = new (std::nothrow) nvfp4_plugin_handle();
  if (!h) return NVFP4_PLUGIN_ERROR;
  h->c.assign(size_t(s->L * s->M * s->N), 0);
  *out = h;
  return NVFP4_PLUGIN_OK;
#endif
}

int p_set_inputs(nvfp4_plugin_handle*, int, [[maybe_unused]] const nvfp4_plugin_arrays* arrays) {
#ifdef BROKEN_WRITES_ACTIVATIONS
  const_cast<uint8_t*>(arrays->sfa)[0] ^= 0x01;
#endif
  return NVFP4_PLUGIN_OK;
}
[[maybe_unused]] int p_enqueue(nvfp4_plugin_handle*) { return NVFP4_PLUGIN_OK; }
int p_synchronize(nvfp4_plugin_handle*) { return NVFP4_PLUGIN_OK; }
int p_poison(nvfp4_plugin_handle* h, uint16_t bits) {
  for (auto& v : h->c) v = bits;
  return NVFP4_PLUGIN_OK;
}
int p_read_output([[maybe_unused]] nvfp4_plugin_handle* h, [[maybe_unused]] uint16_t* c) {
#ifndef BROKEN_READS_NOTHING
  std::memcpy(c, h->c.data(), h->c.size() * 2);
#endif
  return NVFP4_PLUGIN_OK;
}
int p_destroy(nvfp4_plugin_handle* h) {
  delete h;
  return NVFP4_PLUGIN_OK;
}
const char* p_last_error(nvfp4_plugin_handle* h) {
#ifdef BROKEN_CREATE_FAILS_SILENTLY
  if (!h) return nullptr;
#endif
  return h ? "no error" : "create refuses: this plugin is broken on purpose";
}

#if defined(BROKEN_STAGE_WITHOUT_HOOK)
const nvfp4_plugin_optimization kOpts[] = {{"tuned", "claims a tune stage", NVFP4_PLUGIN_STAGE_TUNE}};
#elif defined(BROKEN_BAD_OPT_NAME)
const nvfp4_plugin_optimization kOpts[] = {{"Fast Path", "a name the CLI cannot carry", 0}};
#else
const nvfp4_plugin_optimization kOpts[] = {{"noop", "does nothing", 0}};
#endif

const nvfp4_plugin_v1 kPlugin = {
#ifdef BROKEN_WRONG_ABI
    99,
#else
    NVFP4_PLUGIN_ABI_VERSION,
#endif
#ifdef BROKEN_SMALL_TABLE
    sizeof(nvfp4_plugin_v1) / 2,
#else
    sizeof(nvfp4_plugin_v1),
#endif
    "broken",
    "a broken plugin for tests",
    1,
    kOpts,
    nullptr,
    nullptr,
    p_create,
    nullptr,
    nullptr,
    p_set_inputs,
#ifdef BROKEN_NULL_ENTRY
    nullptr,
#else
    p_enqueue,
#endif
    p_synchronize,
    p_poison,
    p_read_output,
    nullptr,
    nullptr,
    p_destroy,
    p_last_error,
};

}  // namespace

#ifdef BROKEN_MISSING_SYMBOL
extern "C" __attribute__((visibility("default"))) const nvfp4_plugin_v1* nvfp4_plugin_v2_get(void) { return &kPlugin; }
#else
extern "C" __attribute__((visibility("default"))) const nvfp4_plugin_v1* nvfp4_plugin_v1_get(void) { return &kPlugin; }
#endif
