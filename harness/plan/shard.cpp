// shard.cpp — shard selection (see shard.hpp).
#include "shard.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "errors.hpp"

namespace nvfp4 {

namespace {

// A non-negative decimal integer below 2^31, or nullopt.
std::optional<int> parse_count(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stoi(s);
}

ShardSpec checked(std::optional<int> index, std::optional<int> count, const std::string& what) {
  if (!index || !count) throw InputError(what + ": index and count must be non-negative integers");
  if (*count < 1) throw InputError(what + ": the shard count must be at least 1");
  if (*index >= *count)
    throw InputError(what + ": shard index " + std::to_string(*index) + " is not below the count " +
                     std::to_string(*count) + " (shards are numbered 0 to N-1)");
  return ShardSpec{*index, *count};
}

}  // namespace

ShardSpec parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw InputError("--shard " + text + ": expected I/N, e.g. --shard 0/4");
  return checked(parse_count(text.substr(0, slash)), parse_count(text.substr(slash + 1)), "--shard " + text);
}

std::optional<ShardSpec> shard_from_env(const char* index, const char* total) {
  if (!index && !total) return std::nullopt;
  if (!index || !total)
    throw InputError(std::string(index ? "GTEST_SHARD_INDEX is set but GTEST_TOTAL_SHARDS is not"
                                       : "GTEST_TOTAL_SHARDS is set but GTEST_SHARD_INDEX is not"));
  return checked(parse_count(index), parse_count(total),
                 "GTEST_SHARD_INDEX=" + std::string(index) + " GTEST_TOTAL_SHARDS=" + total);
}

std::vector<int> shard_assignment(const std::vector<CaseSpec>& cases, int count) {
  if (count < 1) throw InputError("the shard count must be at least 1");
  std::vector<size_t> order(cases.size());
  std::iota(order.begin(), order.end(), size_t(0));
  auto work = [&](size_t i) {
    const Shape& s = cases[i].shape;  // zero for a case directory (not loaded here)
    return double(s.M) * double(s.N) * double(s.K) * double(s.L);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (work(a) != work(b)) return work(a) > work(b);
    return cases[a].name() < cases[b].name();
  });
  std::vector<int> owner(cases.size());
  for (size_t j = 0; j < order.size(); ++j) owner[order[j]] = int(j % size_t(count));
  return owner;
}

std::vector<CaseSpec> shard_cases(const std::vector<CaseSpec>& cases, const ShardSpec& shard) {
  const std::vector<int> owner = shard_assignment(cases, shard.count);
  std::vector<CaseSpec> out;
  for (size_t i = 0; i < cases.size(); ++i)
    if (owner[i] == shard.index) out.push_back(cases[i]);
  return out;
}

}  // namespace nvfp4
