// reference_store.hpp — exact references computed once, ever: a content-addressed on-disk store.
//
// Key: a 128-bit content hash (content_hash.hpp) of everything the reference is a function of —
// the six input arrays (A, B1, B2, SFA, SFB1, SFB2), the shape and both alphas — seeded with the
// store's format version (kReferenceStoreFormat) and a digest of the reference's sources (CMake
// hashes reference/* into NVFP4_REFERENCE_DIGEST), so a changed reference never reads an old
// entry. Value: the whole ReferenceResult the parent keeps per (case, input set, mode) (cases.hpp:
// G, U, C, the abs sums, the exponents the certificate uses; compute_reference with abs_sums),
// exactly, so a run served from the store judges every output as an uncached run does. The flags
// derived from it (degeneracy, suspicious scale bytes) are recomputed from C and the inputs.
//
// Entry file DIR/<32 hex digits of the key>.ref, native byte order (the store is a per-user
// cache; a byte-order field refuses another machine's entry):
//   header  magic "NVFP4REF", u32 format, u32 byte-order mark 0x01020304, u64 reference digest,
//           the key (2 x u64), shape L M N K (4 x i64), alpha1 alpha2 (2 x u32 bit patterns), the
//           two certification counts (2 x i64), the element counts of the 11 arrays (11 x u64), the
//           payload's content hash (2 x u64), and a u64 check of all the header bytes before it;
//   payload g, u (f64), c (u16), g_abs, u_abs (f64), q_a, q_b1, q_b2 (i32), qb_a, qb_b1, qb_b2 (u8),
//           each padded with zeros to a multiple of 8 bytes (so each is aligned in a mapped file).
// A reader trusts an entry only when every header field matches what it asked for (key, shape,
// alphas, format, digest, array sizes the shape implies), the file has exactly the size the
// header implies, and the payload hashes to the stored value; anything else — truncated, a
// flipped byte, another version, another problem under this name, not a regular file — is
// REJECTED: counted, its first reason kept for the report, then recomputed and rewritten.
//
// Concurrency (runs, --shard processes and threads sharing a directory): no locks. A writer
// writes a temporary file of its own in the same directory (".<key>.<pid>.<n>.tmp") and renames
// it over the entry's name: rename is atomic, so a reader opens a complete old entry, a complete
// new one, or none. Two runs that miss the same key at once both compute it; the last rename wins,
// and both entries are complete and equal. Unlinking (eviction, a user's `rm`) never disturbs a
// reader that has the file open. No fsync: after a power loss an entry may be torn, and the checks
// above reject it.
//
// Bound: at most max_bytes (kDefaultMaxBytes unless given) of entries, counted as they take on disk
// (a small entry fills a whole file-system block). Each run trims the store
// when it opens it and, if it wrote anything, when it ends: entries are removed least recently
// used first (a hit refreshes an entry's mtime), until the total is within the bound; temporary
// files older than an hour (a writer that was killed) go too. Only files named like entries or
// temporaries are ever touched, so a directory the user points at keeps its other files. Removing
// the whole directory at any time is safe (the next run recomputes what it needs).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "content_hash.hpp"
#include "problem.hpp"
#include "reference.hpp"

namespace nvfp4 {

// The store's format version. Bump it when the entry layout above changes, or when the
// reference's results change in a way the digest of reference/* cannot see (a change elsewhere
// that alters what compute_reference returns, or how the harness calls it: abs_sums).
constexpr uint32_t kReferenceStoreFormat = 1;

// The key of the reference of `p` (also a function of kReferenceStoreFormat and the digest).
Hash128 reference_key(const Problem& p);

struct ReferenceStoreStats {
  int64_t hits = 0;            // references read from the store
  int64_t computed = 0;        // computed because no entry was there (then written)
  int64_t rejected = 0;        // entries there but not trusted (see above): recomputed and rewritten
  int64_t write_failures = 0;  // entries that could not be written (a full disk, ...): the run goes on
  int64_t evicted = 0;         // entries removed by this run's trims
  std::string first_rejection; // "FILE: why", the first rejected entry's reason
};

class ReferenceStore {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(8) << 30;

  // Creates `dir` (and its parents) when missing and checks that a file can be created in it.
  // Returns nullptr and sets *why ("not a directory", the system's reason, ...) when it cannot be
  // used. Trims the store to max_bytes.
  static std::shared_ptr<ReferenceStore> open(const std::string& dir, std::string* why,
                                              uint64_t max_bytes = kDefaultMaxBytes);
  ~ReferenceStore();  // trims when this run wrote entries
  ReferenceStore(const ReferenceStore&) = delete;
  ReferenceStore& operator=(const ReferenceStore&) = delete;

  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // The entry file of `key`.
  std::string entry_path(const Hash128& key) const;

  enum class Lookup { Hit, Absent, Rejected };
  // The stored reference of `p`, whose key is `key`, into `out` (Hit); Absent when there is no
  // entry; Rejected when there is one that is not trusted (counted, first reason kept). Thread-safe.
  Lookup load(const Hash128& key, const Problem& p, ReferenceResult& out);
  // Writes the entry of `key` (atomically; see above); false (counted) when it could not.
  bool save(const Hash128& key, const Problem& p, const ReferenceResult& ref);
  // Counts a reference computed after a miss (Absent or Rejected).
  void note_computed(Lookup why);
  // Removes least recently used entries until at most max_bytes remain; returns how many.
  int64_t trim();

  ReferenceStoreStats stats() const;

 private:
  ReferenceStore(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  void reject(const std::string& path, const std::string& why);

  std::string dir_;
  uint64_t max_bytes_;
  std::atomic<int64_t> hits_{0}, computed_{0}, rejected_{0}, write_failures_{0}, evicted_{0}, written_{0};
  std::atomic<uint64_t> tmp_serial_{0};
  mutable std::mutex mu_;  // first_rejection_
  std::string first_rejection_;
};

// Where the store lives. Precedence: the option (--reference-cache DIR|off), else the environment
// variable NVFP4_REFERENCE_CACHE (DIR|off; empty counts as unset), else the user's cache
// directory: $XDG_CACHE_HOME/nvfp4-dual/references when XDG_CACHE_HOME is an absolute path, else
// $HOME/.cache/nvfp4-dual/references (off when neither is set). "off" disables the store.
struct ReferenceStoreChoice {
  std::string dir;     // empty: off
  std::string source;  // "--reference-cache", "NVFP4_REFERENCE_CACHE" or "default"
};
constexpr const char* kReferenceCacheEnv = "NVFP4_REFERENCE_CACHE";
// `option`: the option's value, nullptr when not given. An empty option value is an InputError.
ReferenceStoreChoice choose_reference_store(const std::string* option,
                                            const std::function<const char*(const char*)>& getenv);

}  // namespace nvfp4
