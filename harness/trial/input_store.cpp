// input_store.cpp — the parent's input sets for trial children (input_store.hpp).
//
// File: "NVFP4SET1\n", the key (u32 length, bytes: case name, set, mode), shape L M N K (4 x i64),
// alpha1 alpha2 (2 x f32), then a, b1, b2, sfa, sfb1, sfb2, each as u64 length and bytes. Native
// byte order: the file never leaves the machine (parent and child are the same binary).
#include "input_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <functional>

namespace nvfp4 {

namespace {
constexpr char kMagic[] = "NVFP4SET1\n";

std::string key_of(const CaseSpec& c, int set, InputSet mode) {
  return c.name() + "|set " + std::to_string(set) + "|" + (set == 0 ? "case" : input_set_name(mode));
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

bool write_all(FILE* f, const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, f) == n; }
bool read_all(FILE* f, void* p, size_t n) { return n == 0 || std::fread(p, 1, n, f) == n; }
}  // namespace

std::string stored_set_path(const std::string& dir, const CaseSpec& c, int set, InputSet mode) {
  char name[40];
  std::snprintf(name, sizeof name, "/%016llx.set", (unsigned long long)fnv1a(key_of(c, set, mode)));
  return dir + name;
}

InputStore::InputStore(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  if (!dir_.empty() && ::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) dir_.clear();
}

void InputStore::put(const CaseSpec& c, int set, InputSet mode, const Problem& p) {
  if (dir_.empty() || c.from_dir()) return;
  const size_t size = p.a.size() + p.b1.size() + p.b2.size() + p.sfa.size() + p.sfb1.size() + p.sfb2.size();
  if (bytes_.fetch_add(size) + size > max_bytes_) {
    bytes_.fetch_sub(size);
    return;
  }
  const std::string path = stored_set_path(dir_, c, set, mode);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    bytes_.fetch_sub(size);
    return;
  }
  // Written under a name of its own, then renamed: a child sees the whole file or none.
  const std::string tmp = path + ".tmp" + std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    bytes_.fetch_sub(size);
    return;
  }
  const std::string key = key_of(c, set, mode);
  const uint32_t klen = uint32_t(key.size());
  const int64_t dims[4] = {p.shape.L, p.shape.M, p.shape.N, p.shape.K};
  const float alphas[2] = {p.alpha1, p.alpha2};
  bool ok = write_all(f, kMagic, sizeof kMagic - 1) && write_all(f, &klen, sizeof klen) &&
            write_all(f, key.data(), key.size()) && write_all(f, dims, sizeof dims) &&
            write_all(f, alphas, sizeof alphas);
  for (const auto* v : {&p.a, &p.b1, &p.b2, &p.sfa, &p.sfb1, &p.sfb2}) {
    const uint64_t n = v->size();
    ok = ok && write_all(f, &n, sizeof n) && write_all(f, v->data(), v->size());
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    bytes_.fetch_sub(size);
  }
}

bool read_stored_set(const std::string& dir, const CaseSpec& c, int set, InputSet mode, Problem& p) {
  if (dir.empty() || c.from_dir()) return false;
  FILE* f = std::fopen(stored_set_path(dir, c, set, mode).c_str(), "rb");
  if (!f) return false;
  const std::string want = key_of(c, set, mode);
  bool ok = true;
  char magic[sizeof kMagic - 1];
  uint32_t klen = 0;
  ok = read_all(f, magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0 &&
       read_all(f, &klen, sizeof klen) && klen == want.size();
  std::string key(ok ? klen : 0, '\0');
  int64_t dims[4] = {0, 0, 0, 0};
  float alphas[2] = {1, 1};
  ok = ok && read_all(f, &key[0], key.size()) && key == want && read_all(f, dims, sizeof dims) &&
       read_all(f, alphas, sizeof alphas) && dims[0] == c.shape.L && dims[1] == c.shape.M &&
       dims[2] == c.shape.N && dims[3] == c.shape.K;
  Problem q;
  if (ok) {
    try {
      q = Problem::zeros(c.shape);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  for (auto* v : {&q.a, &q.b1, &q.b2, &q.sfa, &q.sfb1, &q.sfb2}) {
    uint64_t n = 0;
    ok = ok && read_all(f, &n, sizeof n) && n == v->size() && read_all(f, v->data(), v->size());
  }
  ok = ok && std::fgetc(f) == EOF;
  std::fclose(f);
  if (!ok) return false;
  q.alpha1 = alphas[0];
  q.alpha2 = alphas[1];
  p = std::move(q);
  return true;
}

}  // namespace nvfp4
