// content_hash.hpp — a fast 128-bit non-cryptographic hash of byte streams: the key and the payload
// checksum of the on-disk reference store (reference_store.hpp).
//
// Construction (written for this project): two independent families of four 64-bit lanes. Every
// 32-byte stripe of the stream gives words w0..w3 (native byte order); lane i of family F takes
//   lane = rotl(lane + w_i * P_F1, R_F) * P_F2
// which, for a fixed word, is a bijection of the lane (odd multipliers, a rotation): a stream that
// differs from another in one word always leaves a different state. The tail is zero-padded into
// one last stripe and the stream's length is mixed in at the end, so padding is unambiguous. Each
// family folds its lanes into 64 bits and ends with a full-avalanche finalizer; the two 64-bit
// results are the digest.
//
// Collision risk (what the store relies on): the inputs are not chosen by an adversary, and the
// store also compares the shape and both alphas stored in an entry's header, so two problems share
// an entry only when their 128-bit digests collide AND they have the same shape and alphas. Under
// the usual model of a good mixing function (each family a random 64-bit function, the families
// independent: different multipliers, rotations and seeds), two different streams collide with
// probability about 2^-128; a store of n entries has a collision with probability about
// n^2 / 2^129 (1e-26 for a million entries). A weaker family would still leave 2^-64 per pair.
//
// Speed: 4 multiplies per 8 bytes in 8 independent chains; several GB/s on one core, negligible
// next to the reference (docs/design.md §2) of the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nvfp4 {

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  bool operator==(const Hash128& o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const Hash128& o) const { return !(*this == o); }
  // 32 lowercase hex digits, hi first.
  std::string hex() const;
};

// Incremental: update() any number of times, then digest() (which does not change the state, so
// more updates may follow). The digest depends only on the concatenated bytes and the seed, not
// on how they were split into updates.
class ContentHasher {
 public:
  explicit ContentHasher(uint64_t seed = 0);
  void update(const void* data, size_t n);
  template <class T>
  void update_value(const T& v) {
    update(&v, sizeof v);
  }
  Hash128 digest() const;

 private:
  void stripe(const unsigned char* p);
  uint64_t a_[4], b_[4];        // the two families' lanes
  unsigned char buf_[32];       // a partial stripe
  size_t buffered_ = 0;
  uint64_t length_ = 0;         // bytes so far
  uint64_t seed_;
};

// One call: the digest of `n` bytes.
Hash128 content_hash(const void* data, size_t n, uint64_t seed = 0);

}  // namespace nvfp4
