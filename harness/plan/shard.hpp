// shard.hpp — `--shard I/N`: the part of the suite one harness process runs when a scheduler (a CI
// matrix, a Slurm array, Bazel's shard_count) spreads `--verify` over N jobs (docs/design.md §4).
//
// The suite is split BY CASE: shard I runs every combination of the lattice on its cases, so the
// staged isolation (a combination runs only when its sub-combinations passed) keeps its meaning
// within each shard, and `harness --merge` (merge.hpp) rebuilds one report from the N reports.
//
// Assignment: the cases are ordered by their work (M*N*K*L, largest first; ties by name) and dealt
// round-robin, case j to shard j mod N. It depends only on the case list (the suite and its
// --shape/--dist/--seed narrowing), never on which backends are available, so every job of an
// array computes the same partition. Dealing the largest cases first spreads the expensive ones
// one per shard, which balances run time better than a hash of the name (a hash may put the two
// K = 7168 cases on one shard); shard sizes differ by at most one case.
//
// The scheduler variables GoogleTest defines (GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS; Bazel and
// ctest-based setups export them) select a shard when --shard is not given.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cases.hpp"

namespace nvfp4 {

struct ShardSpec {
  int index = 0;  // 0 <= index < count
  int count = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool operator==(const ShardSpec& o) const { return index == o.index && count == o.count; }
};

// Parses "I/N" (decimal, 0 <= I < N); InputError with the reason otherwise.
ShardSpec parse_shard(const std::string& text);

// The shard named by the values of GTEST_SHARD_INDEX and GTEST_TOTAL_SHARDS (nullptr: unset).
// Neither set: no shard. One without the other, or values that are not 0 <= I < N: InputError.
std::optional<ShardSpec> shard_from_env(const char* index, const char* total);

// The shard (0-based) that owns each case of `cases`, in the order of `cases` (see the header).
std::vector<int> shard_assignment(const std::vector<CaseSpec>& cases, int count);

// The cases of `cases` that `shard` owns, in their suite order.
std::vector<CaseSpec> shard_cases(const std::vector<CaseSpec>& cases, const ShardSpec& shard);

}  // namespace nvfp4
