// A consumer of the installed package: generates a problem, computes the exact reference, and
// checks two outputs with the library's check — the reference's own (must pass) and one with an
// element moved by 64 fp16 steps (must fail, naming that element). Exit 0 only when both hold;
// prints the failing check's text and JSON.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

#include "check_report.hpp"
#include "distributions.hpp"
#include "reference.hpp"

int main() {
  using namespace nvfp4;
  const Problem p = make_problem(Shape::parse("7x13x48x2"), "normal", 1);
  const ReferenceResult ref = compute_reference(p);
  const CheckResult good = check_output(p, ref.c.data());
  std::vector<uint16_t> bad = ref.c;
  bad[20] = uint16_t(bad[20] + 64);
  const CheckResult wrong = check_output(p, bad.data());
  write_check_text(std::cout, *wrong.info, wrong.cmp, "consumer", "bad");
  std::ostringstream json;
  write_check_json(json, *wrong.info, wrong.cmp, "consumer", "bad");
  std::cout << json.str() << "\n";
  struct stat st;
  const bool harness_installed = ::stat(NVFP4_DUAL_HARNESS, &st) == 0;
  const bool ok = good.cmp.pass() && !wrong.cmp.pass() && wrong.cmp.over_tolerance == 1 &&
                  wrong.cmp.worst.size() == 1 && wrong.cmp.worst[0].l == 0 && wrong.cmp.worst[0].m == 1 &&
                  wrong.cmp.worst[0].n == 7 && json.str().find("\"ok\":false") != std::string::npos &&
                  harness_installed;
  std::printf("consumer: reference output %s, corrupted output %s, harness %s -> %s\n",
              good.cmp.pass() ? "passes" : "FAILS", wrong.cmp.pass() ? "PASSES" : "fails",
              harness_installed ? "installed" : "MISSING", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
