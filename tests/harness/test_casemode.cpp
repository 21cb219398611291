// test_casemode.cpp — case directories through the real binary: --save-output / --check round
// trips, outside outputs judged right and wrong, c.npy picked up, a path's output saved, batch-last
// order, and bad input (malformed .npy, K not a multiple of 16, mismatched shapes) exiting 2 with
// the file named; NaN and negative scales flagged as suspicious data; degenerate references flagged.
#include <doctest/doctest.h>

#include <fstream>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "harness_cli.hpp"
#include "npy.hpp"
#include "reference.hpp"
#include "npy_cases.hpp"

using harness_cli::has;
using harness_cli::run;
using namespace nvfp4;

using nvfp4::test::to_batch_last;
using nvfp4::test::u8;

namespace {

std::string make_case(const Problem& p) {
  const std::string dir = harness_cli::temp_dir();
  save_case(dir, p);
  return dir;
}



}  // namespace

TEST_CASE("--save-output writes the reference; --check accepts it and rejects a corrupted copy") {
  const Problem p = make_problem(Shape::parse("9x21x64"), "normal", 3);
  const std::string dir = make_case(p), out = dir + "/out.npy";
  auto r = run("--inputs " + dir + " --save-output " + out);
  REQUIRE(r.rc == 0);
  const auto c = load_output(out, p.shape);
  CHECK(c == compute_reference(p).c);

  r = run("--inputs " + dir + " --check " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "against the exact reference: PASS"));
  CHECK(has(r.out, "ulp histogram: [0] 189"));

  std::vector<uint16_t> bad = c;
  bad[5 * 21 + 4] = uint16_t(bad[5 * 21 + 4] + 8);  // 8 ulps off at (0,5,4)
  save_output(dir + "/bad.npy", p.shape, bad);
  r = run("--inputs " + dir + " --check " + dir + "/bad.npy");
  CHECK(r.rc == 1);
  CHECK(has(r.out, "against the exact reference: FAIL"));
  CHECK(has(r.out, "over tolerance 1 "));
  CHECK(has(r.out, "worst (0,5,4)"));
  CHECK(has(r.out, "max 8 ulp"));

  // A c.npy inside the directory is checked when nothing else is asked.
  save_output(dir + "/c.npy", p.shape, bad);
  r = run("--inputs " + dir);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "c.npy against the exact reference: FAIL"));
}

TEST_CASE("a path's output on a case directory (--verify COMBO --save-output)") {
  const Problem p = make_problem(Shape::parse("17x33x320"), "uniform", 5);
  const std::string dir = make_case(p), out = dir + "/fused.npy";
  auto r = run("--inputs " + dir + " --backend cpu --verify fused --save-output " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "cpu fused case dir"));
  r = run("--inputs " + dir + " --check " + out);
  CHECK(r.rc == 0);
}

TEST_CASE("batch-last case directories: inputs and outputs in (rows, cols, L) order") {
  const Problem p = make_problem(Shape::parse("5x7x32x2"), "normal", 11);
  const std::string dir = harness_cli::temp_dir();
  const int64_t L = 2, M = 5, N = 7, K = 32;
  write_npy(dir + "/a.npy", u8({M, K / 2, L}, to_batch_last(p.a, L, M, K / 2)));
  write_npy(dir + "/b1.npy", u8({N, K / 2, L}, to_batch_last(p.b1, L, N, K / 2)));
  write_npy(dir + "/b2.npy", u8({N, K / 2, L}, to_batch_last(p.b2, L, N, K / 2)));
  write_npy(dir + "/sfa.npy", u8({M, K / 16, L}, to_batch_last(p.sfa, L, M, K / 16)));
  write_npy(dir + "/sfb1.npy", u8({N, K / 16, L}, to_batch_last(p.sfb1, L, N, K / 16)));
  write_npy(dir + "/sfb2.npy", u8({N, K / 16, L}, to_batch_last(p.sfb2, L, N, K / 16)));
  const std::string out = dir + "/out.npy";
  auto r = run("--inputs " + dir + " --batch-last --save-output " + out);
  REQUIRE(r.rc == 0);
  const NpyArray saved = read_npy(out);
  CHECK(saved.shape == std::vector<int64_t>{M, N, L});
  CHECK(load_output(out, p.shape, true) == compute_reference(p).c);
  CHECK(run("--inputs " + dir + " --batch-last --check " + out).rc == 0);
  // Without --batch-last the same files are a different (inconsistent) problem: refused.
  CHECK(run("--inputs " + dir + " --check " + out).rc == 2);
}

TEST_CASE("bad input exits 2 and names the problem") {
  const Problem p = make_problem(Shape::parse("4x6x32"), "normal", 1);
  SUBCASE("malformed .npy") {
    const std::string dir = make_case(p);
    std::ofstream(dir + "/b1.npy") << "this is not a numpy file";
    const auto r = run("--inputs " + dir + " --save-output " + dir + "/o.npy");
    CHECK(r.rc == 2);
    CHECK(has(r.out, "b1.npy"));
  }
  SUBCASE("K not a multiple of 16") {
    const std::string dir = harness_cli::temp_dir();
    write_npy(dir + "/a.npy", u8({4, 12}, std::vector<uint8_t>(48, 0x22)));  // K = 24
    write_npy(dir + "/b1.npy", u8({6, 12}, std::vector<uint8_t>(72, 0x22)));
    write_npy(dir + "/b2.npy", u8({6, 12}, std::vector<uint8_t>(72, 0x22)));
    write_npy(dir + "/sfa.npy", u8({4, 1}, std::vector<uint8_t>(4, 0x38)));
    write_npy(dir + "/sfb1.npy", u8({6, 1}, std::vector<uint8_t>(6, 0x38)));
    write_npy(dir + "/sfb2.npy", u8({6, 1}, std::vector<uint8_t>(6, 0x38)));
    const auto r = run("--inputs " + dir + " --save-output " + dir + "/o.npy");
    CHECK(r.rc == 2);
    CHECK(has(r.out, "16"));
  }
  SUBCASE("mismatched shapes") {
    const std::string dir = make_case(p);
    write_npy(dir + "/b2.npy", u8({5, 16}, std::vector<uint8_t>(80, 0x22)));  // N = 5, not 6
    const auto r = run("--inputs " + dir + " --save-output " + dir + "/o.npy");
    CHECK(r.rc == 2);
    CHECK(has(r.out, "b2.npy"));
  }
  SUBCASE("an output of the wrong shape") {
    const std::string dir = make_case(p);
    save_output(dir + "/o.npy", Shape::parse("4x5x32"), std::vector<uint16_t>(20, 0));
    const auto r = run("--inputs " + dir + " --check " + dir + "/o.npy");
    CHECK(r.rc == 2);
  }
  SUBCASE("a missing directory") {
    CHECK(run("--inputs /nonexistent/case --save-output /tmp/x.npy").rc == 2);
  }
}

TEST_CASE("NaN and negative scales are flagged as suspicious data") {
  Problem p = make_problem(Shape::parse("4x6x32"), "normal", 2);
  p.sfa[1] = 0x7F;   // NaN scale: row 0, block 1
  p.sfb1[4] = 0xB8;  // -1.0: row 2, block 0
  const std::string dir = make_case(p), out = dir + "/ref.npy";
  auto r = run("--inputs " + dir + " --save-output " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "warning: suspicious data: SFA: 1 NaN scale"));
  CHECK(has(r.out, "warning: suspicious data: SFB1: 1 negative scale"));
  // The reference's own output (NaN where the NaN scale reaches) passes the check, with warnings.
  r = run("--inputs " + dir + " --check " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "NaN scale"));
  CHECK(has(r.out, "negative scale"));
  // A finite value where the reference is NaN is a NaN mismatch.
  std::vector<uint16_t> c = load_output(out, p.shape);
  REQUIRE(fp16_is_nan(c[0]));
  c[0] = 0x3C00;
  save_output(dir + "/bad.npy", p.shape, c);
  r = run("--inputs " + dir + " --check " + dir + "/bad.npy");
  CHECK(r.rc == 1);
  CHECK(has(r.out, "NaN mismatch 1"));
}

TEST_CASE("a degenerate reference (mostly zero) is flagged") {
  Problem p = make_problem(Shape::parse("8x8x32"), "normal", 4);
  std::fill(p.sfa.begin(), p.sfa.end(), uint8_t(0));  // every A scale zero: C is all zero
  const std::string dir = make_case(p), out = dir + "/ref.npy";
  REQUIRE(run("--inputs " + dir + " --save-output " + out).rc == 0);
  const auto r = run("--inputs " + dir + " --check " + out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "DEGENERATE reference: 100% of outputs are inf/NaN/zero"));
}
