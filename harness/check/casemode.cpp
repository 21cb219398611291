// casemode.cpp — case-directory checks (see casemode.hpp).
#include "casemode.hpp"

#include "misreading.hpp"

#include "case_dir.hpp"
#include "npy.hpp"

namespace nvfp4 {

CheckResult check_output_file(const CaseSpec& c, const std::string& output_npy) {
  const Problem p = c.make();
  CheckResult r;
  // Read the output before the (slower) reference: a malformed file fails fast.
  const std::vector<uint16_t> out = load_output(output_npy, p.shape, c.batch_last);
  r.info = analyse_case(c, p);
  r.cmp = compare_output(r.info->ref, r.info->alpha1, r.info->alpha2, out.data(), nullptr, nullptr, 1);
  if (!r.cmp.pass())
    if (const auto found = find_misreading(p, out.data())) r.cmp.misreading = found->text();
  return r;
}

std::vector<std::string> save_reference_output(const CaseSpec& c, const std::string& output_npy) {
  const Problem p = c.make();
  const ReferenceResult ref = compute_reference(p);
  write_output_npy(output_npy, p.shape, ref.c, c.batch_last);
  return scan_scales(p);
}

void write_output_npy(const std::string& path, const Shape& s, const std::vector<uint16_t>& c,
                      bool batch_last) {
  if (!batch_last || s.L == 1) {
    save_output(path, s, c);
    return;
  }
  NpyArray a;
  a.type = NpyType::F16;
  a.shape = {s.M, s.N, s.L};
  a.data.resize(c.size() * 2);
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t mn = 0; mn < s.M * s.N; ++mn) {
      const uint16_t v = c[size_t(l * s.M * s.N + mn)];
      const size_t at = size_t(mn * s.L + l) * 2;  // (M, N, L): the batch index fastest
      a.data[at] = uint8_t(v & 0xFF);
      a.data[at + 1] = uint8_t(v >> 8);
    }
  write_npy(path, a);
}

}  // namespace nvfp4
