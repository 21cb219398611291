// test_reference_store.cpp — references computed once, ever (harness/check/reference_store.hpp), the
// content hash it is keyed by (content_hash.hpp), the comparison memo (comparison_memo.hpp), and the
// CLI around them (--reference-cache DIR|off, NVFP4_REFERENCE_CACHE, the report's counters).
//
// Library level: the hash's properties; an entry read back exactly; every kind of damage (a flipped
// byte, truncation, another format version, another problem's entry under the name, a foreign file,
// a FIFO) rejected with its reason and recomputed; threads writing and reading the same entries at
// once never read a torn entry; the bound evicts least recently used entries and never a foreign
// file; the location's precedence. The real binary: a second run computes no reference; a damaged
// entry is counted and recomputed with the outcome unchanged; two runs at once on one empty
// directory; off; unusable directories (exit 2 when named by the option, a warning otherwise); and
// every trial's outcome and metrics identical with the cache warm, cold and off. (About 620 lines,
// over the project's ~600: the library and the binary levels share the damage helpers above the
// cases; a split would copy them.)
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "cases.hpp"
#include "check_report.hpp"
#include "comparison_memo.hpp"
#include "content_hash.hpp"
#include "errors.hpp"
#include "harness_cli.hpp"
#include "json_read.hpp"
#include "reference_store.hpp"

using namespace nvfp4;
using harness_cli::has;
namespace fs = std::filesystem;

namespace {

CaseSpec small_case(const char* shape = "33x65x160", const char* dist = "normal", uint64_t seed = 7) {
  CaseSpec c;
  c.shape = Shape::parse(shape);
  c.dist = dist;
  c.seed = seed;
  return c;
}

// Bit for bit (NaN where a NaN scale is touched compares equal to itself here).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool same_reference(const ReferenceResult& a, const ReferenceResult& b) {
  return a.shape == b.shape && same_bits(a.g, b.g) && same_bits(a.u, b.u) && same_bits(a.c, b.c) &&
         same_bits(a.g_abs, b.g_abs) && same_bits(a.u_abs, b.u_abs) && same_bits(a.q_a, b.q_a) &&
         same_bits(a.q_b1, b.q_b1) && same_bits(a.q_b2, b.q_b2) && same_bits(a.qb_a, b.qb_a) &&
         same_bits(a.qb_b1, b.qb_b1) && same_bits(a.qb_b2, b.qb_b2) &&
         a.certified_by_abs_gemm == b.certified_by_abs_gemm && a.integer_fallback == b.integer_fallback;
}

ReferenceResult reference_of(const Problem& p) {
  ReferenceOptions o;
  o.abs_sums = true;
  return compute_reference(p, o);
}

std::shared_ptr<ReferenceStore> open_store(const std::string& dir, uint64_t max_bytes = ReferenceStore::kDefaultMaxBytes) {
  std::string why;
  auto s = ReferenceStore::open(dir, &why, max_bytes);
  INFO(why);
  REQUIRE(s);
  return s;
}

// Overwrites `n` bytes at `offset` of a file.
void patch(const std::string& path, long offset, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(static_cast<const char*>(bytes), std::streamsize(n));
}

// Sets an environment variable for one scope (and restores what was there).
struct EnvGuard {
  std::string name, old;
  bool had;
  EnvGuard(const char* n, const char* value) : name(n), had(std::getenv(n) != nullptr) {
    if (had) old = std::getenv(n);
    if (value) ::setenv(n, value, 1);
    else ::unsetenv(n);
  }
  ~EnvGuard() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// The report's top-level "reference_cache" object.
JsonValue cache_counters(const std::string& json_path) {
  return JsonValue::parse(harness_cli::read_text(json_path)).at("reference_cache");
}

// Every trial of a report, keyed by (backend, combination, case), as JSON text without what may
// differ between two correct runs: times, the child's pid, the index, the reproducer and which
// trials loaded their worker's backend.
std::map<std::string, std::string> stable_trials(const std::string& json_path) {
  std::map<std::string, std::string> out;
  const JsonValue r = JsonValue::parse(harness_cli::read_text(json_path));
  for (const auto& t : r.at("trials").items()) {
    std::string text;
    for (const auto& [k, v] : t.members()) {
      if (k == "wall_s" || k == "overhead_s" || k == "child_pid" || k == "index" || k == "stage_elapsed_s" ||
          k == "reproducer" || k == "started_s" || k == "judged_s")
        continue;
      if (k == "stages") {
        // Stage load is the first trial's of a worker: which trials those are depends on the slots.
        for (const auto& s : v.items())
          if (s.str_or("stage", "?") != "load") text += s.str_or("stage", "?") + ",";
        continue;
      }
      text += k + "=" + v.text() + ";";
    }
    out[t.str_or("backend", "?") + " " + t.str_or("combo", "?") + " " + t.at("case").str_or("name", "?")] = text;
  }
  return out;
}

const char* kSmallRun = "--backend cpu --verify plain,fused --shape 33x65x160,7x13x48x2 --dist normal,edge --seed 5 ";

}  // namespace

// ---- the content hash ------------------------------------------------------------------------------

TEST_CASE("content hash: deterministic, independent of how the bytes are split, sensitive to every bit") {
  std::mt19937_64 rng(1);
  std::vector<unsigned char> bytes(1000);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  const Hash128 whole = content_hash(bytes.data(), bytes.size());
  CHECK(whole == content_hash(bytes.data(), bytes.size()));
  CHECK(whole.hex().size() == 32);
  for (size_t cut : {size_t(0), size_t(1), size_t(31), size_t(32), size_t(33), size_t(500), size_t(999)}) {
    ContentHasher h;
    h.update(bytes.data(), cut);
    h.update(bytes.data() + cut, bytes.size() - cut);
    CHECK(h.digest() == whole);
  }
  // Every single-bit flip of the first 200 bytes changes both halves of the digest.
  for (size_t bit = 0; bit < 1600; ++bit) {
    auto flipped = bytes;
    flipped[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    const Hash128 d = content_hash(flipped.data(), flipped.size());
    CHECK((d.lo != whole.lo && d.hi != whole.hi));
  }
  // A zero byte more is another stream (the tail's padding is not ambiguous); another seed another hash.
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  CHECK(content_hash(longer.data(), longer.size()) != whole);
  CHECK(content_hash(bytes.data(), bytes.size(), 1) != whole);
  CHECK(content_hash(nullptr, 0) != content_hash("", 0, 1));
}

TEST_CASE("reference key: equal problems share it; any byte, the shape or an alpha changes it") {
  const Problem p = small_case().make();
  const Hash128 k = reference_key(p);
  CHECK(k == reference_key(small_case().make()));
  for (auto member : {&Problem::a, &Problem::b1, &Problem::b2, &Problem::sfa, &Problem::sfb1, &Problem::sfb2}) {
    Problem q = p;
    (q.*member)[(q.*member).size() / 2] ^= 0x01;
    CHECK(reference_key(q) != k);
  }
  Problem q = p;
  q.alpha2 = -0.0f == q.alpha2 ? 1.0f : q.alpha2 * 2;
  CHECK(reference_key(q) != k);
  // The same bytes under another shape (a batch of 2 of half the rows) are another problem.
  Problem r = p;
  r.shape = Shape::parse("33x65x80x2");
  CHECK(reference_key(r) != k);
}

// ---- entries -------------------------------------------------------------------------------------------

TEST_CASE("store: an entry reads back exactly; a missing one is absent") {
  auto store = open_store(harness_cli::temp_dir() + "/refs");
  const Problem p = small_case("17x9x80x3", "edge", 3).make();
  const ReferenceResult ref = reference_of(p);
  const Hash128 key = reference_key(p);
  ReferenceResult got;
  CHECK(store->load(key, p, got) == ReferenceStore::Lookup::Absent);
  REQUIRE(store->save(key, p, ref));
  REQUIRE(store->load(key, p, got) == ReferenceStore::Lookup::Hit);
  CHECK(same_reference(got, ref));
  CHECK(store->stats().hits == 1);
  CHECK(store->stats().rejected == 0);
  // Only the entry is left in the directory: no temporary file.
  int files = 0;
  for (const auto& e : fs::directory_iterator(store->dir())) files += e.path().extension() == ".ref" ? 1 : 100;
  CHECK(files == 1);
}

TEST_CASE("store: a damaged, foreign or mismatched entry is rejected with its reason, never trusted") {
  const std::string dir = harness_cli::temp_dir() + "/refs";
  auto store = open_store(dir);
  const Problem p = small_case().make();
  const ReferenceResult ref = reference_of(p);
  const Hash128 key = reference_key(p);
  const std::string path = store->entry_path(key);
  struct Damage {
    const char* what;
    std::function<void()> apply;
    const char* reason;
  };
  const uint32_t other_format = kReferenceStoreFormat + 1;
  const int64_t other_m = 34;
  const Problem other = small_case("33x65x160", "normal", 8).make();
  const std::vector<Damage> damages = {
      {"a flipped payload byte", [&] { const char x = 0x5A; patch(path, long(fs::file_size(path)) - 100, &x, 1); },
       "payload checksum mismatch"},
      {"truncated", [&] { fs::resize_file(path, fs::file_size(path) - 1); }, "truncated or extended"},
      {"cut inside the header", [&] { fs::resize_file(path, 40); }, "truncated"},
      {"another format version", [&] { patch(path, 8, &other_format, sizeof other_format); }, "format version"},
      {"a header field changed", [&] { patch(path, 48, &other_m, sizeof other_m); }, "header checksum mismatch"},
      {"another problem's entry under this name",
       [&] {
         fs::remove(path);
         store->save(reference_key(other), other, reference_of(other));
         fs::rename(store->entry_path(reference_key(other)), path);
       },
       "holds another key"},
      {"a foreign file", [&] { std::ofstream(path, std::ios::trunc) << std::string(400, '#'); }, "not a reference entry"},
      {"a FIFO", [&] { fs::remove(path), ::mkfifo(path.c_str(), 0600); }, "not a regular file"},
  };
  int64_t rejected = 0;
  for (const auto& d : damages) {
    const std::string what = d.what;
    CAPTURE(what);
    fs::remove(path);
    REQUIRE(store->save(key, p, ref));
    d.apply();
    ReferenceResult got;
    CHECK(store->load(key, p, got) == ReferenceStore::Lookup::Rejected);
    CHECK(store->stats().rejected == ++rejected);
    // Recomputed and rewritten over it: trusted again.
    fs::remove(path);
    REQUIRE(store->save(key, p, ref));
    REQUIRE(store->load(key, p, got) == ReferenceStore::Lookup::Hit);
    CHECK(same_reference(got, ref));
    // The reason of each kind, seen through a fresh store (which keeps the first one).
    auto fresh = open_store(dir);
    fs::remove(path);
    REQUIRE(fresh->save(key, p, ref));
    d.apply();
    CHECK(fresh->load(key, p, got) == ReferenceStore::Lookup::Rejected);
    CAPTURE(fresh->stats().first_rejection);
    CHECK(has(fresh->stats().first_rejection, d.reason));
    CHECK(has(fresh->stats().first_rejection, path));
  }
  // A problem of another shape or alphas asking under this key is not served the entry.
  fs::remove(path);
  REQUIRE(store->save(key, p, ref));
  Problem q = p;
  q.alpha1 = 2.0f;
  ReferenceResult got;
  CHECK(store->load(key, q, got) == ReferenceStore::Lookup::Rejected);
}

TEST_CASE("store: threads writing and reading the same entries at once never see a torn one") {
  auto store = open_store(harness_cli::temp_dir() + "/refs");
  std::vector<Problem> problems;
  std::vector<ReferenceResult> refs;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    problems.push_back(small_case("64x96x256", "normal", seed).make());
    refs.push_back(reference_of(problems.back()));
  }
  std::atomic<int> torn{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const size_t k = size_t(i + t) % problems.size();
        const Hash128 key = reference_key(problems[k]);
        ReferenceResult got;
        const auto found = store->load(key, problems[k], got);
        if (found == ReferenceStore::Lookup::Rejected || (found == ReferenceStore::Lookup::Hit && !same_reference(got, refs[k])))
          ++torn;
        hits += found == ReferenceStore::Lookup::Hit;
        if (found != ReferenceStore::Lookup::Hit || i % 3 == 0) store->save(key, problems[k], refs[k]);
      }
    });
  for (auto& t : threads) t.join();
  CHECK(torn == 0);
  CHECK(hits > 0);
  CHECK(store->stats().write_failures == 0);
}

TEST_CASE("store: bounded; least recently used entries go first; foreign files and fresh temporaries stay") {
  const std::string dir = harness_cli::temp_dir() + "/refs";
  std::vector<Problem> ps;
  for (uint64_t seed = 1; seed <= 4; ++seed) ps.push_back(small_case("33x65x160", "normal", seed).make());
  {
    auto store = open_store(dir);
    for (const auto& p : ps) REQUIRE(store->save(reference_key(p), p, reference_of(p)));
  }
  struct stat st0;  // the bound counts what an entry takes on disk (whole blocks)
  REQUIRE(::stat(open_store(dir)->entry_path(reference_key(ps[0])).c_str(), &st0) == 0);
  const uint64_t one = std::max<uint64_t>(uint64_t(st0.st_size), uint64_t(st0.st_blocks) * 512);
  // Ages: entry 0 the oldest, then 1, 2, 3; a read of entry 0 makes it the most recent.
  for (size_t i = 0; i < ps.size(); ++i) {
    struct utimbuf t{time_t(1000000 + 1000 * i), time_t(1000000 + 1000 * i)};
    ::utime(open_store(dir)->entry_path(reference_key(ps[i])).c_str(), &t);
  }
  std::ofstream(dir + "/notes.txt") << "mine\n";
  std::ofstream(dir + "/." + std::string(32, 'a') + ".1.0.tmp") << "a writer at work";
  std::ofstream(dir + "/." + std::string(32, 'b') + ".1.0.tmp") << "a writer killed long ago";
  struct utimbuf old{1000, 1000};
  ::utime((dir + "/." + std::string(32, 'b') + ".1.0.tmp").c_str(), &old);
  {
    auto store = open_store(dir);  // within the default bound: nothing goes
    ReferenceResult got;
    REQUIRE(store->load(reference_key(ps[0]), ps[0], got) == ReferenceStore::Lookup::Hit);
  }
  auto small = open_store(dir, 2 * one);  // room for two: the two least recently used go (1, 2)
  CHECK(small->stats().evicted == 0);     // the report counts this run's own evictions only
  CHECK(fs::exists(small->entry_path(reference_key(ps[0]))));
  CHECK_FALSE(fs::exists(small->entry_path(reference_key(ps[1]))));
  CHECK_FALSE(fs::exists(small->entry_path(reference_key(ps[2]))));
  CHECK(fs::exists(small->entry_path(reference_key(ps[3]))));
  CHECK(fs::exists(dir + "/notes.txt"));
  CHECK(fs::exists(dir + "/." + std::string(32, 'a') + ".1.0.tmp"));
  CHECK_FALSE(fs::exists(dir + "/." + std::string(32, 'b') + ".1.0.tmp"));
  // A run that writes trims when it ends, counting what it evicted.
  REQUIRE(small->save(reference_key(ps[1]), ps[1], reference_of(ps[1])));
  CHECK(small->trim() == 1);
  CHECK(small->stats().evicted == 1);
}

TEST_CASE("store: the bound counts the blocks small entries take on disk, not their bytes") {
  // 1x1x16 entries are a few hundred bytes and a whole block each on disk: four of them within a
  // bound of two blocks would leave the store at twice its bound (and tiny cases by the thousand,
  // --runs 1000, at many times it).
  const std::string dir = harness_cli::temp_dir() + "/refs";
  std::vector<Problem> ps;
  for (uint64_t seed = 1; seed <= 4; ++seed) ps.push_back(small_case("1x1x16", "normal", seed).make());
  {
    auto store = open_store(dir);
    for (const auto& p : ps) REQUIRE(store->save(reference_key(p), p, reference_of(p)));
  }
  struct stat st;
  REQUIRE(::stat(open_store(dir)->entry_path(reference_key(ps[0])).c_str(), &st) == 0);
  const uint64_t block = uint64_t(st.st_blocks) * 512;
  if (block <= uint64_t(st.st_size)) {
    MESSAGE("this file system stores a small file in no more than its bytes: nothing to show");
    return;
  }
  auto small = open_store(dir, 2 * block);
  int left = 0;
  for (const auto& p : ps) left += fs::exists(small->entry_path(reference_key(p)));
  CHECK(left == 2);
}

// ---- where it lives ----------------------------------------------------------------------------------

TEST_CASE("location: option, then NVFP4_REFERENCE_CACHE, then XDG_CACHE_HOME, then HOME; 'off' disables") {
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK(choose_reference_store(nullptr, getenv).dir.empty());  // nowhere to put it
  env["HOME"] = "/home/u";
  CHECK(choose_reference_store(nullptr, getenv).dir == "/home/u/.cache/nvfp4-dual/references");
  env["XDG_CACHE_HOME"] = "relative/ignored";
  CHECK(choose_reference_store(nullptr, getenv).dir == "/home/u/.cache/nvfp4-dual/references");
  env["XDG_CACHE_HOME"] = "/xdg";
  CHECK(choose_reference_store(nullptr, getenv).dir == "/xdg/nvfp4-dual/references");
  CHECK(choose_reference_store(nullptr, getenv).source == "default");
  env["NVFP4_REFERENCE_CACHE"] = "";  // empty: unset
  CHECK(choose_reference_store(nullptr, getenv).dir == "/xdg/nvfp4-dual/references");
  env["NVFP4_REFERENCE_CACHE"] = "/env/dir";
  CHECK(choose_reference_store(nullptr, getenv).dir == "/env/dir");
  CHECK(choose_reference_store(nullptr, getenv).source == "NVFP4_REFERENCE_CACHE");
  env["NVFP4_REFERENCE_CACHE"] = "off";
  CHECK(choose_reference_store(nullptr, getenv).dir.empty());
  const std::string opt = "/opt/dir", off = "off", empty;
  CHECK(choose_reference_store(&opt, getenv).dir == "/opt/dir");
  CHECK(choose_reference_store(&opt, getenv).source == "--reference-cache");
  CHECK(choose_reference_store(&off, getenv).dir.empty());
  CHECK_THROWS_AS(choose_reference_store(&empty, getenv), InputError);
}

TEST_CASE("location: a path through a file, a file, an unwritable directory cannot be used, and say why") {
  const std::string tmp = harness_cli::temp_dir();
  std::ofstream(tmp + "/file") << "x";
  std::string why;
  CHECK_FALSE(ReferenceStore::open(tmp + "/file", &why));
  CHECK(why == "not a directory");
  CHECK_FALSE(ReferenceStore::open(tmp + "/file/sub", &why));
  CHECK(has(why, "cannot create it"));
  CHECK(ReferenceStore::open(tmp + "/new/deeper", &why));  // created with its parents
  if (::geteuid() != 0) {  // root writes anywhere: only a non-root run can test permissions
    fs::create_directory(tmp + "/ro");
    fs::permissions(tmp + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_FALSE(ReferenceStore::open(tmp + "/ro", &why));
    CHECK(has(why, "cannot write in it"));
    fs::permissions(tmp + "/ro", fs::perms::owner_all);
  }
}

// ---- the reference cache over the store -----------------------------------------------------------

TEST_CASE("reference cache: a second cache over the same store computes nothing; a damaged entry is recomputed") {
  const std::string dir = harness_cli::temp_dir() + "/refs";
  const std::vector<CaseSpec> cases = {small_case("33x65x160", "edge", 7), small_case("7x13x48x2", "suspicious", 7)};
  std::vector<std::shared_ptr<const CaseInfo>> first;
  {
    ReferenceCache cache;
    cache.set_store(open_store(dir));
    cache.prefetch(cases, 3, InputSet::Activations);
    first.push_back(cache.get(cases[0], 2));
    first.push_back(cache.get(cases[1], 0));
    CHECK(cache.store()->stats().computed == 8);
    CHECK(cache.store()->stats().hits == 0);
  }
  ReferenceCache cache;
  cache.set_store(open_store(dir));
  cache.prefetch(cases, 3, InputSet::Activations);
  const auto again = cache.get(cases[0], 2);
  CHECK(cache.store()->stats().computed == 0);
  CHECK(cache.store()->stats().hits == 8);
  CHECK(same_reference(again->ref, first[0]->ref));
  CHECK(again->key == first[0]->key);
  const auto suspicious = cache.get(cases[1], 0);
  CHECK(suspicious->warnings == first[1]->warnings);  // the flags are derived again, the same
  CHECK(!suspicious->warnings.empty());
  CHECK(suspicious->degeneracy.zero == first[1]->degeneracy.zero);
  // A flipped byte in one entry: rejected, recomputed, rewritten.
  const std::string path = cache.store()->entry_path(first[0]->key);
  const char x = 0x33;
  patch(path, long(fs::file_size(path)) - 7, &x, 1);
  ReferenceCache third;
  third.set_store(open_store(dir));
  const auto recomputed = third.get(cases[0], 2);
  CHECK(third.store()->stats().rejected == 1);
  CHECK(third.store()->stats().computed == 1);
  // The exact parts are the same; the abs sums are upper bounds whose last bits depend on how
  // compute_reference tiled the work (on its thread count: prefetch gives each reference fewer
  // threads than get() does), so the rewritten entry holds this computation's.
  CHECK(same_bits(recomputed->ref.g, first[0]->ref.g));
  CHECK(same_bits(recomputed->ref.u, first[0]->ref.u));
  CHECK(same_bits(recomputed->ref.c, first[0]->ref.c));
  ReferenceCache fourth;
  fourth.set_store(open_store(dir));
  CHECK(same_reference(fourth.get(cases[0], 2)->ref, recomputed->ref));
  CHECK(fourth.store()->stats().hits == 1);
}

TEST_CASE("comparison memo: the same output against the same reference is scanned once, renumbered to its call") {
  ReferenceCache cache;
  const CaseSpec c = small_case("33x65x160", "normal", 9);
  const auto info = cache.get(c, 1);
  // An output with every kind of trouble: elements off, a NaN, an unwritten one.
  std::vector<uint16_t> out = info->ref.c;
  for (size_t i = 0; i < out.size(); i += 97) out[i] = uint16_t(out[i] ^ 0x0040);
  out[5] = 0x7E00;
  out[11] = kPoisonBits;
  auto text = [](const Comparison& cmp) {
    std::ostringstream os;
    write_comparison_text(os, cmp, "");
    write_comparison_json(os, cmp);
    return os.str() + " " + std::to_string(cmp.max_abs_at.call) + " " + std::to_string(cmp.max_rel_at.call);
  };
  const Comparison first = cache.compare(*info, out.data(), 1);
  CHECK_FALSE(first.pass());
  CHECK(cache.memo().scanned() == 1);
  const Comparison third = cache.compare(*info, out.data(), 3);
  CHECK(cache.memo().reused() == 1);
  CHECK(text(third) == text(compare_output(info->ref, info->alpha1, info->alpha2, out.data(), nullptr, nullptr, 3)));
  CHECK(text(third) != text(first));  // the call numbers differ
  CHECK(has(text(third), "\"call\":3"));
  // Another output, another reference, or other alphas: scanned.
  out[200] = uint16_t(out[200] ^ 0x0001);
  cache.compare(*info, out.data(), 1);
  cache.compare(*cache.get(c, 2), out.data(), 1);
  auto other_alphas = std::make_shared<CaseInfo>(*info);
  other_alphas->alpha1 = 2.0f;
  cache.compare(*other_alphas, out.data(), 1);
  CHECK(cache.memo().scanned() == 4);
  CHECK(cache.memo().reused() == 1);
}

// ---- the CLI ----------------------------------------------------------------------------------------

TEST_CASE("cli: the second run computes no reference; outcomes identical warm, cold and off") {
  const std::string tmp = harness_cli::temp_dir(), dir = tmp + "/refs";
  // A failing drill too: its calls' outputs are compared against other sets (the stale check).
  const std::string run = std::string(kSmallRun) + "--inject corrupt@run:if=fused --reference-cache ";
  const auto cold = harness_cli::run(run + dir + " --json " + tmp + "/cold.json");
  CHECK(cold.rc == 1);
  const JsonValue c1 = cache_counters(tmp + "/cold.json");
  CHECK(c1.at("enabled").boolean());
  CHECK(c1.number_or("computed", -1) == 20);  // 4 cases x (4 input sets + the second plan's of stage instances)
  CHECK(c1.number_or("hits", -1) == 0);
  CHECK(has(cold.out, "references: 0 read from the cache, 20 computed (" + dir + ")"));
  const auto warm = harness_cli::run(run + dir + " --json " + tmp + "/warm.json");
  CHECK(warm.rc == 1);
  const JsonValue c2 = cache_counters(tmp + "/warm.json");
  CHECK(c2.number_or("computed", -1) == 0);
  CHECK(c2.number_or("hits", -1) == 20);
  CHECK(c2.number_or("rejected", -1) == 0);
  const auto off = harness_cli::run(run + "off --json " + tmp + "/off.json");
  CHECK(off.rc == 1);
  CHECK_FALSE(cache_counters(tmp + "/off.json").at("enabled").boolean());
  CHECK_FALSE(has(off.out, "references:"));
  const auto a = stable_trials(tmp + "/cold.json"), b = stable_trials(tmp + "/warm.json"),
             o = stable_trials(tmp + "/off.json");
  CHECK(a.size() == 8);
  for (const auto& [k, v] : a) {
    CAPTURE(k);
    CHECK(b.at(k) == v);
    CHECK(o.at(k) == v);
  }
  CHECK(has(harness_cli::read_text(tmp + "/cold.json"), "\"outcome\":\"FAIL\""));
}

TEST_CASE("cli: a damaged entry is counted and recomputed, the outcome unchanged; a foreign file is left alone") {
  const std::string tmp = harness_cli::temp_dir(), dir = tmp + "/refs";
  const std::string run = std::string(kSmallRun) + "--reference-cache " + dir + " --json ";
  REQUIRE(harness_cli::run(run + tmp + "/a.json").rc == 0);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  REQUIRE(entries.size() == 20);
  fs::resize_file(entries[3], fs::file_size(entries[3]) / 2);
  const char x = 0x01;
  patch(entries[9], 300, &x, 1);
  std::ofstream(dir + "/README") << "my notes\n";
  const auto r = harness_cli::run(run + tmp + "/b.json");
  CHECK(r.rc == 0);
  const JsonValue c = cache_counters(tmp + "/b.json");
  CHECK(c.number_or("rejected", -1) == 2);
  CHECK(c.number_or("computed", -1) == 2);
  CHECK(c.number_or("hits", -1) == 18);
  CHECK(has(c.str_or("first_rejection", ""), dir));
  CHECK(has(r.out, "2 cache entries rejected and recomputed"));
  CHECK(stable_trials(tmp + "/a.json") == stable_trials(tmp + "/b.json"));
  REQUIRE(harness_cli::run(run + tmp + "/c.json").rc == 0);
  CHECK(cache_counters(tmp + "/c.json").number_or("hits", -1) == 20);
  CHECK(fs::exists(dir + "/README"));
}

TEST_CASE("cli: two runs at once on one empty cache both pass; the cache is whole afterwards") {
  const std::string tmp = harness_cli::temp_dir(), dir = tmp + "/refs";
  const std::string run = std::string(kSmallRun) + "--reference-cache " + dir + " --json ";
  harness_cli::Result r1, r2;
  std::thread t1([&] { r1 = harness_cli::run(run + tmp + "/1.json"); });
  std::thread t2([&] { r2 = harness_cli::run(run + tmp + "/2.json"); });
  t1.join();
  t2.join();
  CHECK(r1.rc == 0);
  CHECK(r2.rc == 0);
  CHECK(cache_counters(tmp + "/1.json").number_or("rejected", -1) == 0);
  CHECK(cache_counters(tmp + "/2.json").number_or("rejected", -1) == 0);
  const auto r3 = harness_cli::run(run + tmp + "/3.json");
  CHECK(r3.rc == 0);
  const JsonValue c = cache_counters(tmp + "/3.json");
  CHECK(c.number_or("hits", -1) == 20);
  CHECK(c.number_or("rejected", -1) == 0);
  CHECK(stable_trials(tmp + "/1.json") == stable_trials(tmp + "/3.json"));
  CHECK(stable_trials(tmp + "/2.json") == stable_trials(tmp + "/3.json"));
  // Shards read the same cache; their merged report sums the counts.
  REQUIRE(harness_cli::run(run + tmp + "/s0.json --shard 0/2").rc == 0);
  REQUIRE(harness_cli::run(run + tmp + "/s1.json --shard 1/2").rc == 0);
  const auto m = harness_cli::run("merge " + tmp + "/s0.json " + tmp + "/s1.json --json " + tmp + "/m.json");
  CHECK(m.rc == 0);
  CHECK(has(m.out, "references: 20 read from the cache, 0 computed (" + dir + ")"));
  CHECK(cache_counters(tmp + "/m.json").number_or("hits", -1) == 20);
}

TEST_CASE("cli: off, the environment variable, and unusable directories (exit 2 only when the option names one)") {
  const std::string tmp = harness_cli::temp_dir();
  std::ofstream(tmp + "/file") << "x";
  const std::string run = "--backend cpu --verify plain --shape 7x13x48 --dist normal ";
  {
    EnvGuard env("NVFP4_REFERENCE_CACHE", (tmp + "/from-env").c_str());
    REQUIRE(harness_cli::run(run + "--json " + tmp + "/e.json").rc == 0);
    CHECK(cache_counters(tmp + "/e.json").str_or("dir", "") == tmp + "/from-env");
    CHECK(fs::exists(tmp + "/from-env"));
    // The option wins over the environment.
    REQUIRE(harness_cli::run(run + "--reference-cache " + tmp + "/from-option --json " + tmp + "/o.json").rc == 0);
    CHECK(cache_counters(tmp + "/o.json").str_or("dir", "") == tmp + "/from-option");
    REQUIRE(harness_cli::run(run + "--reference-cache off --json " + tmp + "/off.json").rc == 0);
    CHECK_FALSE(cache_counters(tmp + "/off.json").at("enabled").boolean());
  }
  {
    EnvGuard env("NVFP4_REFERENCE_CACHE", "off");
    REQUIRE(harness_cli::run(run + "--json " + tmp + "/envoff.json").rc == 0);
    CHECK_FALSE(cache_counters(tmp + "/envoff.json").at("enabled").boolean());
  }
  // Named by the option: refused before any work, naming the option and why.
  for (const std::string& bad : {tmp + "/file", tmp + "/file/sub"}) {
    const auto r = harness_cli::run(run + "--reference-cache " + bad);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "--reference-cache " + bad + ":"));
    CHECK_FALSE(has(r.out, "PASS"));
  }
  CHECK(harness_cli::run(run + "--reference-cache ''").rc == 2);
  // From the environment: a warning, and the run goes on uncached.
  EnvGuard env("NVFP4_REFERENCE_CACHE", (tmp + "/file").c_str());
  const auto r = harness_cli::run(run + "--json " + tmp + "/w.json");
  CHECK(r.rc == 0);
  CHECK(has(r.out, "warning: reference cache " + tmp + "/file (NVFP4_REFERENCE_CACHE): not a directory"));
  CHECK_FALSE(cache_counters(tmp + "/w.json").at("enabled").boolean());
}
