// fuzz_npy.cpp — libFuzzer target for nvfp4::parse_npy (reference/npy.cpp).
//
// Property: on any bytes, parse_npy either returns an array whose shape has 1..3 dimensions and
// whose data size is exactly count * element size, or throws nvfp4::InputError. Any other
// exception, a crash, or a sanitizer report (ASan/UBSan) is a finding.
//
// `fuzz_npy -write_seeds=DIR` writes the tiny seed corpus (valid files of each version, dtype and
// order, and a few broken ones) into DIR and exits; ctest does this before each fuzz run, so no
// binary seed files are kept in the repository.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "errors.hpp"
#include "npy.hpp"
#include "npy_bytes.hpp"

namespace {

using fuzz::make_npy;

void write_seeds(const std::string& dir) {
  struct Seed {
    const char* name;
    std::vector<uint8_t> bytes;
  };
  std::vector<Seed> seeds = {
      {"u8_2d_v1", make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 4), }", 12)},
      {"u8_3d_v2", make_npy(2, "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 2, 8), }", 32)},
      {"f2_fortran_v3", make_npy(3, "{'descr': '<f2', 'fortran_order': True, 'shape': (2, 3, 2), }", 24)},
      {"f4_1d", make_npy(1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (5,)}", 20)},
      {"f8_2d_fortran", make_npy(1, "{'shape': (2, 2), 'fortran_order': True, 'descr': '<f8'}", 32)},
      {"empty_dim", make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }", 0)},
      {"truncated", make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (30, 4), }", 12)},
      {"big_endian", make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)},
      {"bad_dict", make_npy(1, "{'descr': '|u1', 'fortran_order': Maybe, 'shape': (2,), }", 2)},
      {"huge_shape", make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999, 99999999, 99999999), }", 8)},
      {"unpadded", make_npy(1, "{'descr':'|u1','fortran_order':False,'shape':(2,)}", 2, false)},
  };
  for (const auto& s : seeds) {
    const std::string path = dir + "/" + s.name + ".npy";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(s.bytes.data(), 1, s.bytes.size(), f) != s.bytes.size()) {
      std::fprintf(stderr, "fuzz_npy: cannot write %s\n", path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
  std::printf("fuzz_npy: wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const char* flag = "-write_seeds=";
    if (std::strncmp((*argv)[i], flag, std::strlen(flag)) == 0) {
      write_seeds((*argv)[i] + std::strlen(flag));
      std::exit(0);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nvfp4::NpyArray a = nvfp4::parse_npy(data, size, "fuzz-input");
    if (a.shape.empty() || a.shape.size() > 3) std::abort();
    size_t n = nvfp4::npy_type_size(a.type);
    for (int64_t d : a.shape) {
      if (d < 0) std::abort();
      n *= size_t(d);
    }
    if (n != a.data.size() || n > size) std::abort();
  } catch (const nvfp4::InputError& e) {
    // Expected for malformed input; the message must name the file.
    if (std::strncmp(e.what(), "fuzz-input: ", 12) != 0) std::abort();
  }
  return 0;
}
