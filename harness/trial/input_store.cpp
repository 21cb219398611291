// input_store.cpp — the parent's input sets for trial children (input_store.hpp).
//
// File: "NVFP4SET2\n", the key (u32 length, bytes: case name, set, mode), shape L M N K (4 x i64),
// alpha1 alpha2 (2 x f32), then a, b1, b2, sfa, sfb1, sfb2, each as u64 length and bytes. A set
// k > 0 in mode activations holds set 0's weights (cases.hpp): its file stores b1, b2, sfb1, sfb2
// with length 0 and the reader takes them from set 0 (a quarter of the bytes for the GPU MODE
// shapes, written by the parent and read by every trial of the case). Native byte order: the file
// never leaves the machine (parent and child are the same binary). The child maps the file
// (read_stored_set) and takes it only when every field matches its own spec and the file ends
// exactly after the last array.
#include "input_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <functional>

namespace nvfp4 {

namespace {
constexpr char kMagic[] = "NVFP4SET2\n";

// Whether the file of this set leaves the weights out (they are set 0's).
bool weights_shared(int set, InputSet mode) { return set > 0 && mode == InputSet::Activations; }

std::string key_of(const CaseSpec& c, int set, InputSet mode) {
  return c.name() + "|set " + std::to_string(set) + "|" + (set == 0 ? "case" : input_set_name(mode));
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

bool write_all(FILE* f, const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, f) == n; }
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
  const bool shared = weights_shared(set, mode);
  const size_t size =
      p.a.size() + p.sfa.size() + (shared ? 0 : p.b1.size() + p.b2.size() + p.sfb1.size() + p.sfb2.size());
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
    const bool weight = v != &p.a && v != &p.sfa;
    const uint64_t n = shared && weight ? 0 : v->size();
    ok = ok && write_all(f, &n, sizeof n) && write_all(f, v->data(), size_t(n));
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    bytes_.fetch_sub(size);
  }
}

bool read_stored_set(const std::string& dir, const CaseSpec& c, int set, InputSet mode, Problem& p,
                     const Problem* base) {
  if (dir.empty() || c.from_dir()) return false;
  const bool shared = weights_shared(set, mode);
  Problem own_base;
  if (shared && !base) {  // the weights come from set 0: the caller's, else the store's
    if (!read_stored_set(dir, c, 0, InputSet::Activations, own_base)) return false;
    base = &own_base;
  }
  if (shared && !(base->shape == c.shape)) return false;
  // Memory-mapped: the header is checked in place and each array copied once, straight from the
  // page cache into its vector (a stream would zero-fill the vectors first, then copy through read).
  const int fd = ::open(stored_set_path(dir, c, set, mode).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  void* map = regular ? ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const auto* at = static_cast<const unsigned char*>(map);
  const auto* end = at + st.st_size;
  // Takes n bytes from the mapping (false when fewer are left).
  auto take = [&](void* out, size_t n) {
    if (size_t(end - at) < n) return false;
    std::memcpy(out, at, n);
    at += n;
    return true;
  };
  const std::string want = key_of(c, set, mode);
  char magic[sizeof kMagic - 1];
  uint32_t klen = 0;
  bool ok = take(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0 && take(&klen, sizeof klen) &&
            klen == want.size() && size_t(end - at) >= klen && std::memcmp(at, want.data(), klen) == 0;
  if (ok) at += klen;
  int64_t dims[4] = {0, 0, 0, 0};
  float alphas[2] = {1, 1};
  ok = ok && take(dims, sizeof dims) && take(alphas, sizeof alphas) && dims[0] == c.shape.L && dims[1] == c.shape.M &&
       dims[2] == c.shape.N && dims[3] == c.shape.K;
  Problem q;
  q.shape = c.shape;
  const int64_t sizes[6] = {c.shape.a_bytes(), c.shape.b_bytes(), c.shape.b_bytes(),
                            c.shape.sfa_bytes(), c.shape.sfb_bytes(), c.shape.sfb_bytes()};
  int i = 0;
  for (auto* v : {&q.a, &q.b1, &q.b2, &q.sfa, &q.sfb1, &q.sfb2}) {
    const bool weight = v != &q.a && v != &q.sfa;
    const uint64_t want_n = shared && weight ? 0 : uint64_t(sizes[i]);
    ++i;
    uint64_t n = 0;
    ok = ok && take(&n, sizeof n) && n == want_n && size_t(end - at) >= n;
    if (!ok) break;
    v->assign(at, at + n);
    at += n;
  }
  if (ok && shared) {
    q.b1 = base->b1, q.b2 = base->b2, q.sfb1 = base->sfb1, q.sfb2 = base->sfb2;
  }
  ok = ok && at == end;  // nothing after the last array
  ::munmap(map, size_t(st.st_size));
  if (!ok) return false;
  q.alpha1 = alphas[0];
  q.alpha2 = alphas[1];
  p = std::move(q);
  return true;
}

}  // namespace nvfp4
