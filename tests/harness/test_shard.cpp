// test_shard.cpp — `harness --shard I/N` (harness/plan/shard.hpp): the partition of the suite by case is
// disjoint, covering, balanced and deterministic; the real binary's shard runs together are the
// unsharded run trial for trial; GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS select the same shard as
// --shard and GTEST_SHARD_STATUS_FILE is touched; bad shard specifications are exit 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "errors.hpp"
#include "harness_cli.hpp"
#include "json_read.hpp"
#include "shard.hpp"
#include "suite.hpp"

using namespace nvfp4;
using harness_cli::has;

namespace {

// A narrowed cpu suite: 6 cases, 24 trials; quick.
const std::string kRun = "--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal,edge,ones ";

double work(const CaseSpec& c) { return double(c.shape.M) * c.shape.N * c.shape.K * c.shape.L; }

// (backend, combo, case) -> outcome of every trial of a report.
std::map<std::string, std::string> outcomes(const JsonValue& report) {
  std::map<std::string, std::string> out;
  for (const auto& t : report.at("trials").items()) {
    const std::string key = t.at("backend").str() + " " + t.at("combo").str() + " " + trial_case_name(t);
    CHECK_MESSAGE(out.emplace(key, t.at("outcome").str()).second, "trial twice: " << key);
  }
  return out;
}

// Runs the harness with environment variables set for that one call.
harness_cli::Result run_with_env(const std::vector<std::pair<const char*, std::string>>& env,
                                 const std::string& args) {
  for (const auto& kv : env) setenv(kv.first, kv.second.c_str(), 1);
  auto r = harness_cli::run(args);
  for (const auto& kv : env) unsetenv(kv.first);
  return r;
}

}  // namespace

TEST_CASE("shard: the partition of the default suites is disjoint, covering, balanced, deterministic") {
  for (const std::string backend : {"cpu", "gpu"}) {
    const auto suite = default_suite(backend);
    REQUIRE(suite.size() > 10);
    for (int n = 1; n <= 8; ++n) {
      CAPTURE(backend);
      CAPTURE(n);
      std::multiset<std::string> all;
      size_t smallest = suite.size(), largest = 0;
      for (int i = 0; i < n; ++i) {
        const auto part = shard_cases(suite, ShardSpec{i, n});
        CHECK(part == shard_cases(suite, ShardSpec{i, n}));  // deterministic
        smallest = std::min(smallest, part.size());
        largest = std::max(largest, part.size());
        for (const auto& c : part) all.insert(c.name());
        // Suite order is kept within a shard.
        for (size_t j = 1; j < part.size(); ++j)
          CHECK(std::find(suite.begin(), suite.end(), part[j - 1]) < std::find(suite.begin(), suite.end(), part[j]));
      }
      CHECK(all.size() == suite.size());  // nothing twice
      for (const auto& c : suite) CHECK(all.count(c.name()) == 1);  // everything once
      CHECK(largest - smallest <= 1);
      // The n most expensive cases land on n different shards (cost balance).
      std::vector<size_t> idx(suite.size());
      for (size_t j = 0; j < idx.size(); ++j) idx[j] = j;
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {  // the documented order: work, then name
        if (work(suite[a]) != work(suite[b])) return work(suite[a]) > work(suite[b]);
        return suite[a].name() < suite[b].name();
      });
      const auto owner = shard_assignment(suite, n);
      std::set<int> heavy;
      for (int j = 0; j < n && j < int(idx.size()); ++j) heavy.insert(owner[idx[size_t(j)]]);
      CHECK(int(heavy.size()) == std::min(n, int(idx.size())));
    }
  }
}

TEST_CASE("shard: assignment depends on the case list only, not on its order") {
  auto suite = default_suite("cpu");
  const auto owner = shard_assignment(suite, 4);
  std::map<std::string, int> by_name;
  for (size_t i = 0; i < suite.size(); ++i) by_name[suite[i].name()] = owner[i];
  std::reverse(suite.begin(), suite.end());
  const auto reversed = shard_assignment(suite, 4);
  for (size_t i = 0; i < suite.size(); ++i) CHECK(reversed[i] == by_name[suite[i].name()]);
}

TEST_CASE("shard: I/N and the GTEST variables are parsed and validated") {
  CHECK(parse_shard("0/1") == ShardSpec{0, 1});
  CHECK(parse_shard("3/4") == ShardSpec{3, 4});
  for (const char* bad : {"4/4", "1/0", "-1/3", "1", "a/3", "1/b", "1/3/4", "", "/3", "1/", " 1/3", "1/ 3"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_shard(bad), InputError);
  }
  CHECK(!shard_from_env(nullptr, nullptr));
  CHECK(*shard_from_env("2", "5") == ShardSpec{2, 5});
  CHECK_THROWS_AS(shard_from_env("1", nullptr), InputError);
  CHECK_THROWS_AS(shard_from_env(nullptr, "3"), InputError);
  CHECK_THROWS_AS(shard_from_env("3", "3"), InputError);
  CHECK_THROWS_AS(shard_from_env("x", "3"), InputError);
}

TEST_CASE("shard: the real shard runs together are the unsharded run, trial for trial") {
  const std::string dir = harness_cli::temp_dir();
  const auto full = harness_cli::run(kRun + "--json " + dir + "/full.json");
  REQUIRE(full.rc == 0);
  const auto expect = outcomes(read_json_file(dir + "/full.json"));
  REQUIRE(expect.size() == 24);
  std::map<std::string, std::string> got;
  std::set<std::string> owned_all;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const std::string json = dir + "/s" + std::to_string(i) + ".json";
    const auto r = harness_cli::run(kRun + "--shard " + std::to_string(i) + "/3 --json " + json);
    REQUIRE(r.rc == 0);
    CHECK(has(r.out, "shard " + std::to_string(i) + "/3 (by case): cpu 2 of 6 cases"));
    const JsonValue report = read_json_file(json);
    const JsonValue& rec = report.at("shard");
    CHECK(rec.at("index").number() == i);
    CHECK(rec.at("count").number() == 3);
    CHECK(rec.at("verify").str() == "all");
    REQUIRE(rec.at("backends").items().size() == 1);
    const JsonValue& b = rec.at("backends").items()[0];
    CHECK(b.at("name").str() == "cpu");
    CHECK(b.at("suite").items().size() == 6);
    std::set<std::string> owned;
    for (const auto& c : b.at("cases").items()) owned.insert(c.str());
    CHECK(owned.size() == 2);
    for (const auto& c : owned) CHECK(owned_all.insert(c).second);  // no case in two shards
    for (const auto& kv : outcomes(report)) {
      // Every trial is on a case this shard owns, and every shard runs the whole lattice.
      CHECK(owned.count(kv.first.substr(kv.first.find(' ', 4) + 1)) == 1);
      CHECK(got.emplace(kv).second);
    }
  }
  CHECK(owned_all.size() == 6);
  CHECK(got == expect);
}

TEST_CASE("shard: GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS select the shard --shard selects; the status file is touched") {
  const std::string dir = harness_cli::temp_dir();
  const auto flag = harness_cli::run(kRun + "--shard 1/3 --json " + dir + "/flag.json");
  REQUIRE(flag.rc == 0);
  const std::string status = dir + "/status";
  const auto env = run_with_env({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "3"}, {"GTEST_SHARD_STATUS_FILE", status}},
                                kRun + "--json " + dir + "/env.json");
  REQUIRE(env.rc == 0);
  CHECK(has(env.out, "shard 1/3 (by case)"));
  CHECK(std::filesystem::exists(status));
  const JsonValue a = read_json_file(dir + "/flag.json"), b = read_json_file(dir + "/env.json");
  CHECK(outcomes(a) == outcomes(b));
  CHECK(a.at("shard").text() == b.at("shard").text());
  // --shard wins over the variables.
  const auto both = run_with_env({{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "3"}},
                                 kRun + "--shard 2/3 --json " + dir + "/both.json");
  REQUIRE(both.rc == 0);
  CHECK(read_json_file(dir + "/both.json").at("shard").at("index").number() == 2);
}

TEST_CASE("shard: bad shard specifications are exit 2 with the reason, before anything runs") {
  struct Bad {
    std::vector<std::pair<const char*, std::string>> env;
    std::string args, says;
  };
  for (const auto& b : std::vector<Bad>{
           {{}, "--shard 3/3", "shard index 3 is not below the count 3"},
           {{}, "--shard 1-3", "expected I/N"},
           {{}, "--shard 0/0", "the shard count must be at least 1"},
           {{{"GTEST_SHARD_INDEX", "1"}}, "", "GTEST_SHARD_INDEX is set but GTEST_TOTAL_SHARDS is not"},
           {{{"GTEST_SHARD_INDEX", "5"}, {"GTEST_TOTAL_SHARDS", "2"}}, "", "shard index 5 is not below the count 2"},
       }) {
    CAPTURE(b.args);
    const auto r = run_with_env(b.env, kRun + b.args);
    CHECK(r.rc == 2);
    CHECK(has(r.out, b.says));
    CHECK(!has(r.out, "PASS"));
  }
  const auto bisect = harness_cli::run("--bisect fused --backend cpu --shape 7x13x48 --shard 0/2");
  CHECK(bisect.rc == 2);
  CHECK(has(bisect.out, "--shard is not an option of harness bisect"));
}
