// fuzz_case_dir.cpp — libFuzzer target for case directories (reference/case_dir.cpp): the six
// input files, an optional c.npy, batch-first or batch-last, and special files where files belong.
//
// Input layout: byte 0 flags (bit 0: batch-last), byte 1 a special entry (bits 0-2: which file,
// 1..7 in the order a b1 b2 sfa sfb1 sfb2 c, 0 for none; bit 3: a FIFO, else a directory), then
// for each of the seven files in that order a u16 little-endian length and that many bytes (cut
// short where the input ends; a file whose length field is missing is not written).
// Properties, on any input:
//   - read_case_shape and load_case either succeed or throw nvfp4::InputError whose message
//     starts with the case directory's path (it names the directory or a file in it);
//   - load_case succeeds only where read_case_shape does, with the same shape, and returns a
//     problem whose arrays have exactly the sizes the shape implies;
//   - with a loaded case, load_output on c.npy returns L*M*N values or throws InputError naming c.npy;
//   - nothing blocks: a FIFO is refused, never opened for a blocking read.
// Any other exception (uncaught: std::terminate), a crash, a hang or a sanitizer report is a finding.
//
// `fuzz_case_dir -write_seeds=DIR` writes a small seed corpus (valid cases of each order, with and
// without c.npy, a FIFO, a disagreeing file) into DIR and exits; ctest does this before each run.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "case_dir.hpp"
#include "errors.hpp"
#include "npy_bytes.hpp"

namespace {

const char* const kFiles[7] = {"a.npy", "b1.npy", "b2.npy", "sfa.npy", "sfb1.npy", "sfb2.npy", "c.npy"};

std::string& case_dir() {
  static std::string dir;
  return dir;
}

void put_u16(std::vector<uint8_t>& out, size_t n) {
  out.push_back(uint8_t(n & 0xFF));
  out.push_back(uint8_t(n >> 8));
}

// One fuzz input from seven files (an empty vector: a zero-length file).
std::vector<uint8_t> pack(uint8_t flags, uint8_t special, const std::vector<std::vector<uint8_t>>& files) {
  std::vector<uint8_t> out = {flags, special};
  for (const auto& f : files) {
    put_u16(out, f.size());
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

std::string u8(const std::string& shape) { return "{'descr': '|u1', 'fortran_order': False, 'shape': " + shape + ", }"; }
std::string f2(const std::string& shape) { return "{'descr': '<f2', 'fortran_order': False, 'shape': " + shape + ", }"; }

void write_seeds(const std::string& dir) {
  using fuzz::make_npy;
  // M = 4, N = 8, K = 32 (16 bytes and 2 scales per row).
  const std::vector<std::vector<uint8_t>> l1 = {
      make_npy(1, u8("(4, 16)"), 64), make_npy(1, u8("(8, 16)"), 128), make_npy(1, u8("(8, 16)"), 128),
      make_npy(1, u8("(4, 2)"), 8),   make_npy(1, u8("(8, 2)"), 16),   make_npy(1, u8("(8, 2)"), 16),
      make_npy(1, f2("(4, 8)"), 64)};
  const std::vector<std::vector<uint8_t>> l2_first = {
      make_npy(1, u8("(2, 4, 16)"), 128), make_npy(1, u8("(2, 8, 16)"), 256), make_npy(1, u8("(2, 8, 16)"), 256),
      make_npy(1, u8("(2, 4, 2)"), 16),   make_npy(1, u8("(2, 8, 2)"), 32),   make_npy(1, u8("(2, 8, 2)"), 32),
      make_npy(1, f2("(2, 4, 8)"), 128)};
  const std::vector<std::vector<uint8_t>> l2_last = {
      make_npy(1, u8("(4, 16, 2)"), 128), make_npy(1, u8("(8, 16, 2)"), 256), make_npy(1, u8("(8, 16, 2)"), 256),
      make_npy(1, u8("(4, 2, 2)"), 16),   make_npy(1, u8("(8, 2, 2)"), 32),   make_npy(1, u8("(8, 2, 2)"), 32),
      make_npy(1, f2("(4, 8, 2)"), 128)};
  std::vector<std::vector<uint8_t>> k_mismatch = l1;
  k_mismatch[1] = make_npy(1, u8("(8, 8)"), 64);
  std::vector<std::vector<uint8_t>> no_c = l1;
  no_c.pop_back();
  struct Seed {
    const char* name;
    std::vector<uint8_t> bytes;
  };
  const std::vector<Seed> seeds = {
      {"l1", pack(0, 0, l1)},
      {"l1_no_c", pack(0, 0, no_c)},
      {"l2_first", pack(0, 0, l2_first)},
      {"l2_last", pack(1, 0, l2_last)},
      {"l2_last_read_first", pack(0, 0, l2_last)},
      {"b1_fifo", pack(0, 2 | 8, l1)},
      {"c_dir", pack(0, 7, l1)},
      {"k_mismatch", pack(0, 0, k_mismatch)},
  };
  for (const auto& s : seeds) {
    const std::string path = dir + "/" + s.name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(s.bytes.data(), 1, s.bytes.size(), f) != s.bytes.size()) {
      std::fprintf(stderr, "fuzz_case_dir: cannot write %s\n", path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
  std::printf("fuzz_case_dir: wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

void remove_dir_at_exit() {
  std::error_code ec;
  std::filesystem::remove_all(case_dir(), ec);
}

// The message of every refusal names the case directory or a file in it.
void check_names(const nvfp4::InputError& e, const std::string& prefix) {
  if (std::strncmp(e.what(), prefix.c_str(), prefix.size()) != 0) {
    std::fprintf(stderr, "message does not start with %s: %s\n", prefix.c_str(), e.what());
    std::abort();
  }
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
  char tmpl[] = "/tmp/fuzz_case_dir_XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("fuzz_case_dir: mkdtemp");
    std::exit(1);
  }
  case_dir() = tmpl;
  std::atexit(remove_dir_at_exit);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string& dir = case_dir();
  const bool batch_last = data[0] & 1;
  const int special = data[1] & 7;
  const bool fifo = data[1] & 8;
  std::error_code ec;
  for (const char* f : kFiles) std::filesystem::remove_all(dir + "/" + f, ec);

  bool have_c = false;
  size_t pos = 2;
  for (int i = 0; i < 7 && pos + 2 <= size; ++i) {
    size_t n = size_t(data[pos]) | (size_t(data[pos + 1]) << 8);
    pos += 2;
    n = std::min(n, size - pos);
    const std::string path = dir + "/" + kFiles[i];
    if (special == i + 1) {
      if (fifo ? mkfifo(path.c_str(), 0600) != 0 : mkdir(path.c_str(), 0700) != 0) std::abort();
    } else {
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f || (n && std::fwrite(data + pos, 1, n, f) != n)) std::abort();
      std::fclose(f);
    }
    have_c |= i == 6;
    pos += n;
  }

  const std::string prefix = dir;  // "<dir>: ..." or "<dir>/a.npy: ..."
  nvfp4::Shape shape;
  bool shape_ok = false, load_ok = false;
  try {
    shape = nvfp4::read_case_shape(dir, batch_last);
    shape_ok = true;
  } catch (const nvfp4::InputError& e) {
    check_names(e, prefix);
  }
  nvfp4::Problem p;
  try {
    p = nvfp4::load_case(dir, batch_last);
    load_ok = true;
  } catch (const nvfp4::InputError& e) {
    check_names(e, prefix);
  }
  if (load_ok && (!shape_ok || !(shape == p.shape))) std::abort();
  if (!load_ok) return 0;
  const nvfp4::Shape& s = p.shape;
  if (int64_t(p.a.size()) != s.a_bytes() || int64_t(p.b1.size()) != s.b_bytes() ||
      int64_t(p.b2.size()) != s.b_bytes() || int64_t(p.sfa.size()) != s.sfa_bytes() ||
      int64_t(p.sfb1.size()) != s.sfb_bytes() || int64_t(p.sfb2.size()) != s.sfb_bytes())
    std::abort();
  if (have_c) {
    try {
      const std::vector<uint16_t> c = nvfp4::load_output(dir + "/c.npy", s, batch_last);
      if (int64_t(c.size()) != s.c_elems()) std::abort();
    } catch (const nvfp4::InputError& e) {
      check_names(e, dir + "/c.npy: ");
    }
  }
  return 0;
}
