// test_intake.cpp — what the harness does with files other tools wrote, through the real binary:
// no output ever overwrites a file the run reads (case files, c.npy where check reads it, the
// --check file, reports being merged, the autotune cache before it exists), however the path is
// spelled (./x, a symbolic link), and no two outputs are one file (also through a dangling link);
// verify, which never reads c.npy, may write it; a case's c.npy is checked also when --save-output
// is given; and refusals of the mistakes other tools' files carry name what the file most likely
// is and how to fix it: scales in the 128x4 blocked layout (flat, also for L > 1) or GPU MODE's
// 6-D permuted view, unpacked FP4 (one code per byte) told from MX-style scales (one per 32) by
// the bytes, a dtype wrong for the file's role (bf16 c.npy, uint16 packed bytes, float32 scales),
// a c.npy of the wrong shape, GPU MODE's (rows, cols, L) order without --batch-last, a missing
// file. Every spelling numpy reads as uint8 or int8 ('u1', 'B', '|i1', 'ubyte', ...) is read.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "harness_cli.hpp"
#include "npy.hpp"
#include "reference.hpp"
#include "npy_cases.hpp"

using harness_cli::has;
using harness_cli::read_text;
using harness_cli::run;
using namespace nvfp4;
namespace fs = std::filesystem;

using nvfp4::test::to_batch_last;
using nvfp4::test::u8;

namespace {

std::string make_case(const Problem& p) {
  const std::string dir = harness_cli::temp_dir();
  save_case(dir, p);
  return dir;
}

// A version 1.0 .npy file with this descr and shape, holding `data` as its bytes.
void write_raw_npy(const std::string& path, const std::string& descr, const std::string& shape,
                   const std::vector<uint8_t>& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(header.size() & 0xFF);
  out += char(header.size() >> 8);
  std::ofstream(path, std::ios::binary) << out << header << std::string(data.begin(), data.end());
}



// One code per byte: the unpacked form of packed E2M1 bytes (element 2j in the low nibble).
std::vector<uint8_t> unpack(const std::vector<uint8_t>& packed) {
  std::vector<uint8_t> out;
  for (uint8_t b : packed) out.push_back(b & 15), out.push_back(uint8_t(b >> 4));
  return out;
}

}  // namespace

TEST_CASE("no output overwrites a file the run reads") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 1);
  const std::string dir = make_case(p);
  save_output(dir + "/c.npy", p.shape, compute_reference(p).c);
  const std::string c_before = read_text(dir + "/c.npy");
  auto refused = [&](const std::string& args, const std::string& offender, const std::string& reason) {
    const auto r = run(args);
    INFO(args << "\n" << r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, offender));
    CHECK(has(r.out, reason));
  };
  SUBCASE("the case's c.npy, spelled directly, with ./ and through a link") {
    refused("check --inputs " + dir + " --save-output " + dir + "/c.npy", "--save-output " + dir + "/c.npy",
            "is the case's input c.npy");
    refused("check --inputs " + dir + " --save-output " + dir + "/./c.npy", "--save-output", "is the case's input c.npy");
    fs::create_symlink(dir + "/c.npy", dir + "/link.npy");
    refused("check --inputs " + dir + " --save-output " + dir + "/link.npy", "--save-output", "is the case's input c.npy");
    refused("check --inputs " + dir + " --json " + dir + "/c.npy", "--json", "is the case's input c.npy");
  }
  SUBCASE("the six case files, also in verify mode") {
    refused("verify plain --backend cpu --inputs " + dir + " --save-output " + dir + "/a.npy", "--save-output",
            "is the case's input a.npy");
    refused("check --inputs " + dir + " --json " + dir + "/./sfb2.npy", "--json", "is the case's input sfb2.npy");
  }
  SUBCASE("the autotune cache, also before it exists (the run writes it)") {
    const std::string tc = harness_cli::temp_dir() + "/tc";
    fs::create_directories(tc);  // empty: no cache file yet
    refused("verify autotune --backend cpu --shape 1x1x16 --tune-cache " + tc + " --json " + tc + "/autotune-cache.txt",
            "--json " + tc + "/autotune-cache.txt", "is the --tune-cache directory's cache file");
    CHECK(!fs::exists(tc + "/autotune-cache.txt"));
  }
  SUBCASE("the --check file") {
    std::vector<uint16_t> off = compute_reference(p).c;
    off[3] = uint16_t(off[3] + 9);
    const std::string theirs = dir + "/theirs.npy";
    save_output(theirs, p.shape, off);
    const std::string before = read_text(theirs);
    refused("check --inputs " + dir + " --check " + theirs + " --save-output " + theirs, "--save-output " + theirs,
            "is the --check file");
    refused("check --inputs " + dir + " --check " + theirs + " --json " + theirs, "--json " + theirs,
            "is the --check file");
    CHECK(read_text(theirs) == before);
  }
  SUBCASE("two outputs that are one file, and a report being merged") {
    refused("verify plain --backend cpu --shape 1x1x16 --json " + dir + "/r.json --junit " + dir + "/./r.json",
            "--json and --junit", "same file");
    const std::string shard = dir + "/s0.json";
    REQUIRE(run("verify plain --backend cpu --shape 1x1x16 --shard 0/1 --json " + shard).rc == 0);
    const std::string before = read_text(shard);
    refused("merge " + shard + " --json " + shard, "--json " + shard, "a shard report this merge reads");
    CHECK(read_text(shard) == before);
  }
  SUBCASE("two outputs that are one file through a dangling symbolic link") {
    // The link's target does not exist yet; a relative target is resolved against the link's
    // directory (not the working directory), and a chain of links is followed.
    const std::string out = harness_cli::temp_dir();
    fs::create_symlink("target.json", out + "/dl.json");
    fs::create_symlink(out + "/dl.json", out + "/dl2.json");
    for (const char* link : {"/dl.json", "/dl2.json"})
      refused("check --inputs " + dir + " --json " + out + link + " --save-output " + out + "/target.json",
              "--json and --save-output", "same file");
    CHECK(!fs::exists(out + "/target.json"));
  }
  CHECK(read_text(dir + "/c.npy") == c_before);
}

TEST_CASE("verify never reads the case's c.npy: --save-output DIR/c.npy writes the path's output there") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 10);
  const std::string dir = make_case(p);
  std::vector<uint16_t> old = compute_reference(p).c;
  for (auto& v : old) v = 0x3C00;  // 1.0: not the output
  save_output(dir + "/c.npy", p.shape, old);
  const auto r = run("verify plain --backend cpu --inputs " + dir + " --save-output " + dir + "/c.npy");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(!has(r.out, "is the case's input c.npy"));
  CHECK(load_output(dir + "/c.npy", p.shape) != old);  // the path's output, as asked
}

TEST_CASE("a case's c.npy is checked also when --save-output is given") {
  const Problem p = make_problem(Shape::parse("5x6x32"), "normal", 2);
  const std::string dir = make_case(p), out = harness_cli::temp_dir() + "/ref.npy";
  std::vector<uint16_t> bad = compute_reference(p).c;
  bad[7] = uint16_t(bad[7] + 8);
  save_output(dir + "/c.npy", p.shape, bad);
  auto r = run("check --inputs " + dir + " --save-output " + out);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "c.npy against the exact reference: FAIL"));
  CHECK(load_output(out, p.shape) == compute_reference(p).c);  // the reference is still written
  // --check naming another file: the c.npy left unchecked is said.
  r = run("check --inputs " + dir + " --check " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "note: " + dir + "/c.npy not checked (--check names " + out + ")"));
}

TEST_CASE("scales in GPU MODE's layouts are named, with the conversion") {
  const Problem p = make_problem(Shape::parse("40x24x128x2"), "normal", 6);
  const int64_t L = 2, K = 128;
  const int64_t tile = 512 * ((K / 16 + 3) / 4);  // one 128-row tile per batch
  std::vector<uint8_t> blocked(size_t(L * tile), 0);
  SUBCASE("flattened blocked bytes (1-D)") {
    // from_blocked takes (L, bytes per matrix) for L > 1: the flat buffer is reshaped in the advice
    // (tests/python/test_intake_hints.py runs the advice the CLI gives).
    const std::string dir = make_case(p);
    write_npy(dir + "/sfa.npy", u8({L * tile}, blocked));
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "sfa.npy: shape (2048,) has 1 dimension(s)"));
    CHECK(has(r.out, "128x4 blocked layout's for (rows, K/16) = (40, 8) times L = 2"));
    CHECK(has(r.out, "nvfp4_dual.from_blocked(x.reshape(2, -1), 40, 8)"));
  }
  SUBCASE("flattened blocked bytes of one matrix (L = 1)") {
    const Problem p1 = make_problem(Shape::parse("40x24x128"), "normal", 6);
    const std::string dir = make_case(p1);
    write_npy(dir + "/sfb2.npy", u8({tile}, std::vector<uint8_t>(size_t(tile), 0)));
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "nvfp4_dual.from_blocked(x, 24, 8)"));
  }
  SUBCASE("the 6-D permuted view (32, 4, Rt, 4, Ct, L)") {
    const std::string dir = make_case(p);
    write_raw_npy(dir + "/sfa.npy", "|u1", "(32, 4, 1, 4, 2, 2)", blocked);
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "sfa.npy: shape (32, 4, 1, 4, 2, 2) has 6 dimensions"));
    CHECK(has(r.out, "CuTe-permuted view"));
    CHECK(has(r.out, "nvfp4_dual.from_cute_permuted(x, 40, 8)"));
  }
}

TEST_CASE("unpacked FP4 (one code per byte) is named on the operand, not blamed on the scales") {
  const Problem p = make_problem(Shape::parse("8x16x64"), "normal", 3);
  const std::string dir = make_case(p);
  write_npy(dir + "/a.npy", u8({8, 64}, unpack(p.a)));  // 64 codes per row, each in a byte of its own
  const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "a.npy: holds 64 bytes per row, twice the 32 that its 4 scales per row imply (K = 64)"));
  CHECK(has(r.out, "one FP4 code per byte? pack two codes per byte (element 2j in the low nibble)"));
}

TEST_CASE("packed operands with one scale per 32 elements: the scales are refused, not the operands") {
  // The same shapes as unpacked FP4 with NVFP4 scales (a row of K/2 bytes, 16 times its scales per
  // row); the bytes tell them apart: packed codes have bytes >= 16.
  const Problem p = make_problem(Shape::parse("8x16x64"), "normal", 3);
  const std::string dir = make_case(p);
  auto every_other = [](const std::vector<uint8_t>& sf) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < sf.size(); i += 2) out.push_back(sf[i]);
    return out;
  };
  write_npy(dir + "/sfa.npy", u8({8, 2}, every_other(p.sfa)));
  write_npy(dir + "/sfb1.npy", u8({16, 2}, every_other(p.sfb1)));
  write_npy(dir + "/sfb2.npy", u8({16, 2}, every_other(p.sfb2)));
  const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "sfa.npy: 2 scales per row, but K = 64 (from a.npy, 32 bytes per row) needs K/16 = 4"));
  CHECK(has(r.out, "one scale per 32 elements? NVFP4 has one E4M3 scale per 16"));
  CHECK(!has(r.out, "one FP4 code per byte"));
}

TEST_CASE("a dtype refusal says what the file's role needs") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 4);
  SUBCASE("a bf16 c.npy ('<V2', as numpy saves ml_dtypes' bfloat16)") {
    const std::string dir = make_case(p);
    write_raw_npy(dir + "/c.npy", "<V2", "(4, 8)", std::vector<uint8_t>(64, 0));
    const auto r = run("check --inputs " + dir);
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "c.npy: unsupported dtype '<V2', expected float16"));
    CHECK(has(r.out, "bfloat16"));
    CHECK(has(r.out, "astype(np.float16)"));
    CHECK(!has(r.out, "pack two per byte"));
  }
  SUBCASE("packed bytes saved as uint16") {
    const std::string dir = make_case(p);
    write_raw_npy(dir + "/a.npy", "<u2", "(4, 16)", std::vector<uint8_t>(128, 0));
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "a.npy: unsupported dtype '<u2', expected uint8: packed E2M1 codes, two per byte"));
    CHECK(has(r.out, "save the array's bytes: arr.view(np.uint8)"));  // astype would truncate
    CHECK(!has(r.out, "save arr.astype(np.uint8)"));
    CHECK(!has(r.out, "float32"));
  }
  SUBCASE("scales saved as float32 values") {
    const std::string dir = make_case(p);
    write_raw_npy(dir + "/sfa.npy", "<f4", "(4, 2)", std::vector<uint8_t>(32, 0));
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "sfa.npy: dtype float32, expected uint8: the E4M3FN bytes of the scales"));
    CHECK(has(r.out, "float8_e4m3fn"));
  }
}

TEST_CASE("GPU MODE's (rows, cols, L) files without --batch-last: the flag is named") {
  // L = 8: K/2 = 8 bytes read as L and L = 8 read as K/2 give K = 16, which passes the K check; the
  // refusal comes from the scales, and must still name the order.
  const Problem p = make_problem(Shape::parse("16x16x64x8"), "normal", 5);
  const int64_t L = 8, M = 16, N = 16, K = 64;
  const std::string dir = harness_cli::temp_dir();
  write_npy(dir + "/a.npy", u8({M, K / 2, L}, to_batch_last(p.a, L, M, K / 2)));
  write_npy(dir + "/b1.npy", u8({N, K / 2, L}, to_batch_last(p.b1, L, N, K / 2)));
  write_npy(dir + "/b2.npy", u8({N, K / 2, L}, to_batch_last(p.b2, L, N, K / 2)));
  write_npy(dir + "/sfa.npy", u8({M, K / 16, L}, to_batch_last(p.sfa, L, M, K / 16)));
  write_npy(dir + "/sfb1.npy", u8({N, K / 16, L}, to_batch_last(p.sfb1, L, N, K / 16)));
  write_npy(dir + "/sfb2.npy", u8({N, K / 16, L}, to_batch_last(p.sfb2, L, N, K / 16)));
  auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "pass --batch-last"));
  CHECK(!has(r.out, "pass batch_last"));
  CHECK(run("check --inputs " + dir + " --batch-last --save-output " + dir + "/o.npy").rc == 0);
}

TEST_CASE("c.npy of (M, N, 1) for L = 1 is the same output: accepted without --batch-last") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 7);
  const std::string dir = make_case(p);
  NpyArray c;
  c.type = NpyType::F16;
  c.shape = {4, 8, 1};
  for (uint16_t v : compute_reference(p).c) c.data.push_back(uint8_t(v & 0xFF)), c.data.push_back(uint8_t(v >> 8));
  write_npy(dir + "/c.npy", c);
  const auto r = run("check --inputs " + dir);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "against the exact reference: PASS"));
  // A shape that fits no order: the refusal lists all three that L = 1 accepts.
  c.shape = {8, 4};
  write_npy(dir + "/c.npy", c);
  const auto bad = run("check --inputs " + dir);
  INFO(bad.out);
  CHECK(bad.rc == 2);
  CHECK(has(bad.out, "c.npy: shape (8, 4) does not match the problem 4x8x32: expected (1, 4, 8), (4, 8, 1) or (4, 8)"));
}

TEST_CASE("byte spellings numpy reads as uint8 or int8 are read as the bytes they are") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 8);
  // np.dtype() reads each of these ('byte' is int8); np.save itself writes '|u1' or '|i1'.
  for (const char* descr : {"u1", "=u1", "B", "|i1", "ubyte", "byte", "uint8", "<b"}) {
    const std::string dir = make_case(p);
    write_raw_npy(dir + "/a.npy", descr, "(4, 16)", p.a);
    write_raw_npy(dir + "/sfb1.npy", descr, "(8, 2)", p.sfb1);
    const auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
    INFO(descr << "\n" << r.out);
    CHECK(r.rc == 0);
    CHECK(load_output(dir + "/o.npy", p.shape) == compute_reference(p).c);
  }
}

TEST_CASE("a missing case file and an .npz archive: the refusal lists the files a case holds") {
  const Problem p = make_problem(Shape::parse("4x8x32"), "normal", 9);
  const std::string dir = make_case(p);
  fs::remove(dir + "/b2.npy");
  auto r = run("check --inputs " + dir + " --save-output " + dir + "/o.npy");
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "b2.npy"));
  CHECK(has(r.out, "a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy"));
  const std::string npz = harness_cli::temp_dir() + "/case.npz";
  std::ofstream(npz) << "PK";
  r = run("check --inputs " + npz + " --save-output " + dir + "/o.npy");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy"));
  CHECK(has(r.out, ".npz"));
}
