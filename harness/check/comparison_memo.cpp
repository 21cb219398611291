// comparison_memo.cpp — remembered comparisons (see comparison_memo.hpp).
#include "comparison_memo.hpp"

#include <cstring>

#include "cases.hpp"

namespace nvfp4 {

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The remembered comparison as compare_output would have written it for `call`: every element
// report it filled (call != 0; an unset one keeps 0) names the new call.
Comparison renumbered(Comparison c, int call) {
  auto one = [&](ElementReport& e) {
    if (e.call != 0) e.call = call;
  };
  one(c.max_abs_at);
  one(c.max_rel_at);
  for (auto* v : {&c.worst, &c.first_poisoned, &c.unexplained_at, &c.cert_at})
    for (auto& e : *v) one(e);
  return c;
}

}  // namespace

Comparison ComparisonMemo::compare(const CaseInfo& info, const uint16_t* got, int call, int threads) {
  const bool keyed = info.key != Hash128{};
  Key key;
  if (keyed) {
    const Hash128 out = content_hash(got, sizeof(uint16_t) * size_t(info.ref.shape.c_elems()));
    key = Key{info.key.lo, info.key.hi, bits(info.alpha1), bits(info.alpha2), out.lo, out.hi};
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++reused_;
      return renumbered(it->second->second, call);
    }
  }
  Comparison c = compare_output(info.ref, info.alpha1, info.alpha2, got, nullptr, nullptr, call, threads);
  std::lock_guard<std::mutex> lock(mu_);
  ++scanned_;
  if (!keyed || index_.count(key)) return c;
  lru_.emplace_front(key, c);
  index_[key] = lru_.begin();
  if (lru_.size() > max_entries_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return c;
}

}  // namespace nvfp4
