// overrun_plugin.cpp — the CPU example plugin (examples/plugin_cpu/plugin_cpu.cpp, compiled into
// this file unchanged) with a planted out-of-bounds write in read_output: it copies C in 16-byte
// vectors and rounds the element count up to a multiple of 8, so where L·M·N is not a multiple of 8
// it writes up to 7 elements past the end of the caller's buffer. Its outputs are right; only the
// harness's guard zone behind the buffer it hands read_output (harness/trial/stages.cpp) tells.
// tests/plugin/CMakeLists.txt builds it as broken/libplanted_read_overrun.so (backend
// plugin:cpu-overrun).
#include <cstring>
#include <vector>

// The example's entry point under another name: this file exports its own table below.
#define nvfp4_plugin_v1_get example_nvfp4_plugin_v1_get
#include "../../examples/plugin_cpu/plugin_cpu.cpp"
#undef nvfp4_plugin_v1_get

namespace {

int overrun_read_output(nvfp4_plugin_handle* h, uint16_t* c) {
  const size_t n = h->c.size(), padded = (n + 7) / 8 * 8;
  std::vector<uint16_t> staged(padded, 0);
  std::copy(h->c.begin(), h->c.end(), staged.begin());
  for (size_t i = 0; i < padded; i += 8) std::memcpy(c + i, staged.data() + i, 16);  // the last block overruns
  return NVFP4_PLUGIN_OK;
}

nvfp4_plugin_v1 overrun_table() {
  nvfp4_plugin_v1 t = kPlugin;
  t.name = "cpu-overrun";
  t.summary = "the CPU example plugin whose read_output writes past L*M*N on ragged shapes (a planted bug)";
  t.read_output = overrun_read_output;
  return t;
}

const nvfp4_plugin_v1 kOverrun = overrun_table();

}  // namespace

extern "C" __attribute__((visibility("default"))) const nvfp4_plugin_v1* nvfp4_plugin_v1_get(void) {
  return &kOverrun;
}
