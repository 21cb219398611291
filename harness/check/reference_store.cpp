// reference_store.cpp — the on-disk reference store (see reference_store.hpp for the format, the
// checks, concurrency and the bound).
#include "reference_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <type_traits>
#include <vector>

#include "errors.hpp"

#ifndef NVFP4_REFERENCE_DIGEST
#define NVFP4_REFERENCE_DIGEST "0"  // built without CMake's digest: kReferenceStoreFormat alone
#endif

namespace nvfp4 {

namespace {

constexpr char kMagic[8] = {'N', 'V', 'F', 'P', '4', 'R', 'E', 'F'};
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr int kArrays = 11;
// A temporary file older than this belongs to a writer that was killed.
constexpr int64_t kStaleTmpSeconds = 3600;

// The fixed-size header of an entry (the layout of reference_store.hpp); no padding anywhere.
struct Header {
  char magic[8];
  uint32_t format, byte_order;
  uint64_t digest;
  uint64_t key_lo, key_hi;
  int64_t dims[4];  // L, M, N, K
  uint32_t alpha_bits[2];
  int64_t certified_by_abs_gemm, integer_fallback;
  uint64_t counts[kArrays];
  uint64_t payload_lo, payload_hi;
  uint64_t check;  // content_hash of every byte above, .lo
};
static_assert(sizeof(Header) == 208 && std::is_trivially_copyable<Header>::value, "the entry header has no padding");

uint64_t reference_digest() {
  static const uint64_t d = std::strtoull(NVFP4_REFERENCE_DIGEST, nullptr, 16);
  return d;
}

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The 11 arrays of a reference in the payload's order (g, u, c, g_abs, u_abs, q_a, q_b1, q_b2,
// qb_a, qb_b1, qb_b2); `f` is called with each vector.
template <class R, class F>
void for_each_array(R& r, F f) {
  f(r.g), f(r.u), f(r.c), f(r.g_abs), f(r.u_abs);
  f(r.q_a), f(r.q_b1), f(r.q_b2), f(r.qb_a), f(r.qb_b1), f(r.qb_b2);
}

// The element counts the shape implies, in the payload's order. The exponent arrays (from index 5)
// may also be empty (a reference computed without them).
void expected_counts(const Shape& s, uint64_t out[kArrays]) {
  const uint64_t mn = uint64_t(s.c_elems()), am = uint64_t(s.L * s.M), bn = uint64_t(s.L * s.N);
  const uint64_t kb = uint64_t(s.K / 16);
  const uint64_t e[kArrays] = {mn, mn, mn, mn, mn, am, bn, bn, am * kb, bn * kb, bn * kb};
  std::copy(e, e + kArrays, out);
}

// Every array of the payload is padded with zeros to a multiple of 8 bytes (each starts aligned).
constexpr uint64_t padded(uint64_t bytes) { return (bytes + 7) / 8 * 8; }
constexpr char kZeros[8] = {};

bool read_full(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t got = ::read(fd, c, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    c += got;
    n -= size_t(got);
  }
  return true;
}

bool write_full(int fd, const void* p, size_t n, off_t at = -1) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t put = at < 0 ? ::write(fd, c, n) : ::pwrite(fd, c, n, at);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    c += put;
    n -= size_t(put);
    if (at >= 0) at += put;
  }
  return true;
}

bool is_hex(const std::string& s, size_t from, size_t n) {
  if (s.size() < from + n) return false;
  for (size_t i = from; i < from + n; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i])) || std::isupper(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
// "<32 hex>.ref"
bool is_entry_name(const std::string& n) { return n.size() == 36 && is_hex(n, 0, 32) && n.compare(32, 4, ".ref") == 0; }
// ".<32 hex>.<pid>.<serial>.tmp"
bool is_temp_name(const std::string& n) {
  return n.size() > 38 && n[0] == '.' && is_hex(n, 1, 32) && n[33] == '.' && n.compare(n.size() - 4, 4, ".tmp") == 0;
}

}  // namespace

Hash128 reference_key(const Problem& p) {
  ContentHasher h(uint64_t(kReferenceStoreFormat) * 0x9E3779B97F4A7C15ull ^ reference_digest());
  const int64_t dims[4] = {p.shape.L, p.shape.M, p.shape.N, p.shape.K};
  const uint32_t alphas[2] = {float_bits(p.alpha1), float_bits(p.alpha2)};
  h.update(dims, sizeof dims);
  h.update(alphas, sizeof alphas);
  // Each array's length before its bytes: the stream parses one way only.
  for (const auto* v : {&p.a, &p.b1, &p.b2, &p.sfa, &p.sfb1, &p.sfb2}) {
    const uint64_t n = v->size();
    h.update_value(n);
    h.update(v->data(), v->size());
  }
  return h.digest();
}

std::shared_ptr<ReferenceStore> ReferenceStore::open(const std::string& dir, std::string* why, uint64_t max_bytes) {
  auto fail = [&](const std::string& reason) -> std::shared_ptr<ReferenceStore> {
    if (why) *why = reason;
    return nullptr;
  };
  if (dir.empty()) return fail("no directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return fail("cannot create it: " + (ec ? ec.message() : std::string(std::strerror(errno))));
  if (!S_ISDIR(st.st_mode)) return fail("not a directory");
  // Writable in fact (a read-only mount, permissions, a full inode table): create a file.
  const std::string probe = dir + "/." + std::string(32, '0') + "." + std::to_string(::getpid()) + ".probe.tmp";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot write in it: ") + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  std::shared_ptr<ReferenceStore> s(new ReferenceStore(dir, max_bytes));
  s->trim();
  s->evicted_ = 0;  // the report counts what this run's own writes pushed out
  return s;
}

ReferenceStore::~ReferenceStore() {
  if (written_ > 0) trim();
}

std::string ReferenceStore::entry_path(const Hash128& key) const { return dir_ + "/" + key.hex() + ".ref"; }

void ReferenceStore::reject(const std::string& path, const std::string& why) {
  ++rejected_;
  std::lock_guard<std::mutex> lock(mu_);
  if (first_rejection_.empty()) first_rejection_ = path + ": " + why;
}

ReferenceStore::Lookup ReferenceStore::load(const Hash128& key, const Problem& p, ReferenceResult& out) {
  const std::string path = entry_path(key);
  // Non-blocking and not through a link: a FIFO or a link under an entry's name is rejected below,
  // never waited on or followed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return Lookup::Absent;
    reject(path, std::string("cannot open: ") + std::strerror(errno));
    return Lookup::Rejected;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto bad = [&](const std::string& why) {
    reject(path, why);
    return Lookup::Rejected;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return bad("not a regular file");
  Header h;
  if (uint64_t(st.st_size) < sizeof h || !read_full(fd, &h, sizeof h))
    return bad("truncated (" + std::to_string(st.st_size) + " bytes, shorter than the header)");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return bad("not a reference entry (bad magic)");
  if (h.byte_order != kByteOrderMark) return bad("written on a machine of another byte order");
  if (h.format != kReferenceStoreFormat)
    return bad("format version " + std::to_string(h.format) + ", this harness reads " +
               std::to_string(kReferenceStoreFormat));
  if (h.digest != reference_digest()) return bad("written by another version of the reference");
  if (content_hash(&h, offsetof(Header, check)).lo != h.check) return bad("header checksum mismatch");
  if (h.key_lo != key.lo || h.key_hi != key.hi) return bad("holds another key");
  const Shape& s = p.shape;
  if (h.dims[0] != s.L || h.dims[1] != s.M || h.dims[2] != s.N || h.dims[3] != s.K ||
      h.alpha_bits[0] != float_bits(p.alpha1) || h.alpha_bits[1] != float_bits(p.alpha2))
    return bad("holds the reference of another problem (shape or alphas differ)");
  uint64_t want[kArrays];
  expected_counts(s, want);
  uint64_t payload = 0;
  int index = 0;
  bool counts_ok = true;
  for_each_array(out, [&](auto& v) {
    const uint64_t n = h.counts[index];
    counts_ok = counts_ok && (n == want[index] || (index >= 5 && n == 0));
    if (counts_ok) payload += padded(n * sizeof(v[0]));  // sizes bounded by the shape: no overflow
    ++index;
  });
  if (!counts_ok) return bad("array sizes do not match the shape");
  if (uint64_t(st.st_size) != sizeof h + payload)
    return bad("truncated or extended: " + std::to_string(st.st_size) + " bytes, the header implies " +
               std::to_string(sizeof h + payload));
  // The payload, mapped: checked in place, then each array copied once into its vector (reading
  // would zero-fill the vectors first). The file's size was checked against the header above, and
  // no writer changes a file in place (they rename new ones over it), so it does not shrink under
  // the mapping. The payload is never empty (G alone has L*M*N >= 1 elements).
  void* map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) return bad(std::string("cannot map: ") + std::strerror(errno));
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size_t(st.st_size)};
  const unsigned char* at = static_cast<const unsigned char*>(map) + sizeof h;
  const Hash128 got = content_hash(at, size_t(payload), key.lo);
  if (got.lo != h.payload_lo || got.hi != h.payload_hi) return bad("payload checksum mismatch");
  ReferenceResult r;
  r.shape = s;
  r.certified_by_abs_gemm = h.certified_by_abs_gemm;
  r.integer_fallback = h.integer_fallback;
  index = 0;
  for_each_array(r, [&](auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    const size_t n = size_t(h.counts[index++]);
    // Aligned: the mapping starts on a page, the header and every array before this one take a
    // multiple of 8 bytes. Copied straight into the vector, which is not zero-filled first.
    const T* first = reinterpret_cast<const T*>(at);
    v.assign(first, first + n);
    at += padded(n * sizeof(T));
  });
  ::futimens(fd, nullptr);  // last use: eviction goes least recently used first
  out = std::move(r);
  ++hits_;
  return Lookup::Hit;
}

bool ReferenceStore::save(const Hash128& key, const Problem& p, const ReferenceResult& ref) {
  const std::string path = entry_path(key);
  const std::string tmp = dir_ + "/." + key.hex() + "." + std::to_string(::getpid()) + "." +
                          std::to_string(tmp_serial_++) + ".tmp";
  Header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kReferenceStoreFormat;
  h.byte_order = kByteOrderMark;
  h.digest = reference_digest();
  h.key_lo = key.lo;
  h.key_hi = key.hi;
  const int64_t dims[4] = {p.shape.L, p.shape.M, p.shape.N, p.shape.K};
  std::copy(dims, dims + 4, h.dims);
  h.alpha_bits[0] = float_bits(p.alpha1);
  h.alpha_bits[1] = float_bits(p.alpha2);
  h.certified_by_abs_gemm = ref.certified_by_abs_gemm;
  h.integer_fallback = ref.integer_fallback;
  int index = 0;
  for_each_array(ref, [&](const auto& v) { h.counts[index++] = v.size(); });
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    ++write_failures_;
    return false;
  }
  // The payload first, hashed as it goes; the header last, at offset 0, once the hash is known.
  ContentHasher ph(key.lo);
  bool ok = ::lseek(fd, off_t(sizeof h), SEEK_SET) == off_t(sizeof h);
  for_each_array(ref, [&](const auto& v) {
    const size_t bytes = v.size() * sizeof(v[0]), pad = padded(bytes) - bytes;
    ph.update(v.data(), bytes);
    ph.update(kZeros, pad);
    ok = ok && write_full(fd, v.data(), bytes) && write_full(fd, kZeros, pad);
  });
  const Hash128 d = ph.digest();
  h.payload_lo = d.lo;
  h.payload_hi = d.hi;
  h.check = content_hash(&h, offsetof(Header, check)).lo;
  ok = ok && write_full(fd, &h, sizeof h, 0);
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    ++write_failures_;
    return false;
  }
  ++written_;
  return true;
}

void ReferenceStore::note_computed(Lookup why) {
  if (why != Lookup::Hit) ++computed_;
}

int64_t ReferenceStore::trim() {
  struct Entry {
    int64_t mtime_ns;
    uint64_t bytes;
    std::string path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const int64_t now = int64_t(std::time(nullptr));
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool entry = is_entry_name(name), temp = !entry && is_temp_name(name);
    if (!entry && !temp) continue;  // never touch a file the store did not write
    const std::string path = dir_ + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (temp) {
      if (now - int64_t(st.st_mtime) > kStaleTmpSeconds) ::unlink(path.c_str());
      continue;
    }
    // What the entry takes on disk: a small one still fills a whole block.
    const uint64_t bytes = std::max<uint64_t>(uint64_t(st.st_size), uint64_t(st.st_blocks) * 512);
    entries.push_back({int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, bytes, path});
    total += bytes;
  }
  ::closedir(d);
  if (total <= max_bytes_) return 0;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  int64_t removed = 0;
  for (const auto& e : entries) {
    if (total <= max_bytes_) break;
    if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) {  // ENOENT: another run removed it first
      total -= e.bytes;
      ++removed;
    }
  }
  evicted_ += removed;
  return removed;
}

ReferenceStoreStats ReferenceStore::stats() const {
  ReferenceStoreStats s;
  s.hits = hits_;
  s.computed = computed_;
  s.rejected = rejected_;
  s.write_failures = write_failures_;
  s.evicted = evicted_;
  std::lock_guard<std::mutex> lock(mu_);
  s.first_rejection = first_rejection_;
  return s;
}

ReferenceStoreChoice choose_reference_store(const std::string* option,
                                            const std::function<const char*(const char*)>& getenv) {
  auto chosen = [](const std::string& value, const char* source) {
    return ReferenceStoreChoice{value == "off" ? "" : value, source};
  };
  if (option) {
    if (option->empty()) throw InputError("--reference-cache: give a directory, or 'off'");
    return chosen(*option, "--reference-cache");
  }
  if (const char* env = getenv(kReferenceCacheEnv); env && *env) return chosen(env, kReferenceCacheEnv);
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  // The XDG base directory specification: a relative XDG_CACHE_HOME is invalid and ignored.
  if (xdg && xdg[0] == '/') return {std::string(xdg) + "/nvfp4-dual/references", "default"};
  if (home && *home) return {std::string(home) + "/.cache/nvfp4-dual/references", "default"};
  return {"", "default"};
}

}  // namespace nvfp4
