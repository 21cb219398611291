// content_hash.cpp — the 128-bit content hash (see content_hash.hpp for the construction).
#include "content_hash.hpp"

#include <cstdio>
#include <cstring>

namespace nvfp4 {

namespace {

// Odd multipliers (a lane update must be a bijection), different per family, and rotations that
// move high product bits down to where the next multiply spreads them.
constexpr uint64_t kA1 = 0x9E3779B97F4A7C15ull, kA2 = 0xC4CEB9FE1A85EC53ull;
constexpr uint64_t kB1 = 0xD6E8FEB86659FD93ull, kB2 = 0xFF51AFD7ED558CCDull;
constexpr int kRotA = 31, kRotB = 27;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Full-avalanche finalizers (each output bit depends on every input bit), one per family.
inline uint64_t avalanche_a(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint64_t avalanche_b(uint64_t z) {
  z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDull;
  z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return z ^ (z >> 33);
}

inline uint64_t load64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

std::string Hash128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
  return buf;
}

ContentHasher::ContentHasher(uint64_t seed) : seed_(seed) {
  for (int i = 0; i < 4; ++i) {
    a_[i] = avalanche_a(seed + uint64_t(i) * kA1);
    b_[i] = avalanche_b(~seed + uint64_t(i + 4) * kB1);
  }
}

inline void ContentHasher::stripe(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) {
    const uint64_t w = load64(p + 8 * i);
    a_[i] = rotl(a_[i] + w * kA1, kRotA) * kA2;
    b_[i] = rotl(b_[i] + w * kB1, kRotB) * kB2;
  }
}

void ContentHasher::update(const void* data, size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  length_ += n;
  if (buffered_) {
    const size_t take = n < 32 - buffered_ ? n : 32 - buffered_;
    std::memcpy(buf_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < 32) return;
    stripe(buf_);
    buffered_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) stripe(p);
  std::memcpy(buf_, p, n);
  buffered_ = n;
}

Hash128 ContentHasher::digest() const {
  ContentHasher h = *this;  // the tail stripe goes into a copy: digest() leaves the state alone
  if (h.buffered_) {
    std::memset(h.buf_ + h.buffered_, 0, 32 - h.buffered_);
    h.stripe(h.buf_);
  }
  // The length separates a zero-padded tail from real zero bytes.
  uint64_t x = avalanche_a(seed_ ^ length_), y = avalanche_b(~seed_ + length_ * kB2);
  for (int i = 0; i < 4; ++i) {
    x = rotl(x ^ avalanche_a(h.a_[i] + uint64_t(i)), 23) * kA1;
    y = rotl(y ^ avalanche_b(h.b_[i] + uint64_t(i)), 29) * kB1;
  }
  Hash128 d;
  d.lo = avalanche_a(x ^ length_);
  d.hi = avalanche_b(y + length_);
  return d;
}

Hash128 content_hash(const void* data, size_t n, uint64_t seed) {
  ContentHasher h(seed);
  h.update(data, n);
  return h.digest();
}

}  // namespace nvfp4
