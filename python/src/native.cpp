// native.cpp — nvfp4_dual._native, the compiled half of the Python package (python/nvfp4_dual/).
//
// Thin: every function takes C-contiguous, batch-first arrays whose shapes the pure-Python layer
// (python/nvfp4_dual/_arrays.py) has already brought into the library's order and checked, copies
// them into the library's types and calls the library (reference/, harness/check/check_report.hpp).
// Long computations release the GIL. Library errors surface as nvfp4_dual.InputError (a
// ValueError) for bad input, RuntimeError otherwise.
//
// Shapes: A (L, M, K/2), B1/B2 (L, N, K/2), SFA (L, M, K/16), SFB1/SFB2 (L, N, K/16) uint8;
// C (L, M, N) fp16 bit patterns as uint16; G, U (L, M, N) float64 (alpha not applied).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "case_dir.hpp"
#include "check_report.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "layout.hpp"
#include "quantize.hpp"
#include "reference.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<nb::numpy, T>;

// Hands a vector to numpy without copying: the array owns it through a capsule.
template <class T>
Out<T> to_numpy(std::vector<T>&& v, std::initializer_list<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Out<T>(owned->data(), shape, owner);
}

template <class T>
std::vector<T> copy_of(const In<T>& a, size_t want, const char* name) {
  if (a.size() != want)
    throw nvfp4::InputError(std::string(name) + ": " + std::to_string(a.size()) + " elements, expected " +
                            std::to_string(want));
  const T* p = a.data();
  return std::vector<T>(p, p + want);
}

nvfp4::Problem make_problem(const In<uint8_t>& a, const In<uint8_t>& b1, const In<uint8_t>& b2,
                            const In<uint8_t>& sfa, const In<uint8_t>& sfb1, const In<uint8_t>& sfb2,
                            int64_t L, int64_t M, int64_t N, int64_t K, float alpha1, float alpha2) {
  nvfp4::Problem p;
  p.shape.M = M;
  p.shape.N = N;
  p.shape.K = K;
  p.shape.L = L;
  p.shape.validate();
  p.a = copy_of(a, size_t(p.shape.a_bytes()), "a");
  p.b1 = copy_of(b1, size_t(p.shape.b_bytes()), "b1");
  p.b2 = copy_of(b2, size_t(p.shape.b_bytes()), "b2");
  p.sfa = copy_of(sfa, size_t(p.shape.sfa_bytes()), "sfa");
  p.sfb1 = copy_of(sfb1, size_t(p.shape.sfb_bytes()), "sfb1");
  p.sfb2 = copy_of(sfb2, size_t(p.shape.sfb_bytes()), "sfb2");
  p.alpha1 = alpha1;
  p.alpha2 = alpha2;
  p.validate();
  return p;
}

// A finished check: small (the reference's arrays are dropped), rendered on demand.
struct NativeReport {
  std::shared_ptr<const nvfp4::CaseInfo> info;
  nvfp4::Comparison cmp;
  std::string case_name, output_name;

  std::string text() const {
    std::ostringstream os;
    nvfp4::write_check_text(os, *info, cmp, case_name, output_name);
    return os.str();
  }
  std::string json() const {
    std::ostringstream os;
    nvfp4::write_check_json(os, *info, cmp, case_name, output_name);
    return os.str();
  }
};

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "nvfp4_dual's compiled core (use the functions of package nvfp4_dual instead)";
  m.attr("__version__") = NVFP4_VERSION;
  nb::exception<nvfp4::InputError>(m, "InputError", PyExc_ValueError);

  nb::class_<NativeReport>(m, "NativeReport")
      .def_prop_ro("ok", [](const NativeReport& r) { return r.cmp.pass(); })
      .def("text", &NativeReport::text)
      .def("json", &NativeReport::json);

  m.def(
      "reference",
      [](In<uint8_t> a, In<uint8_t> b1, In<uint8_t> b2, In<uint8_t> sfa, In<uint8_t> sfb1, In<uint8_t> sfb2,
         int64_t L, int64_t M, int64_t N, int64_t K, float alpha1, float alpha2) {
        nvfp4::Problem p = make_problem(a, b1, b2, sfa, sfb1, sfb2, L, M, N, K, alpha1, alpha2);
        nvfp4::ReferenceResult r;
        {
          nb::gil_scoped_release release;
          r = nvfp4::compute_reference(p);
        }
        const size_t l = size_t(L), mm = size_t(M), n = size_t(N);
        return nb::make_tuple(to_numpy(std::move(r.c), {l, mm, n}), to_numpy(std::move(r.g), {l, mm, n}),
                              to_numpy(std::move(r.u), {l, mm, n}));
      },
      "a"_a, "b1"_a, "b2"_a, "sfa"_a, "sfb1"_a, "sfb2"_a, "L"_a, "M"_a, "N"_a, "K"_a, "alpha1"_a, "alpha2"_a);

  m.def(
      "check",
      [](In<uint16_t> c, In<uint8_t> a, In<uint8_t> b1, In<uint8_t> b2, In<uint8_t> sfa, In<uint8_t> sfb1,
         In<uint8_t> sfb2, int64_t L, int64_t M, int64_t N, int64_t K, float alpha1, float alpha2,
         std::string case_name, std::string output_name) {
        nvfp4::Problem p = make_problem(a, b1, b2, sfa, sfb1, sfb2, L, M, N, K, alpha1, alpha2);
        if (int64_t(c.size()) != p.shape.c_elems())
          throw nvfp4::InputError("c: " + std::to_string(c.size()) + " elements, expected " +
                                  std::to_string(p.shape.c_elems()));
        NativeReport out;
        {
          nb::gil_scoped_release release;
          nvfp4::CheckResult r = nvfp4::check_output(p, c.data());
          out.info = std::move(r.info);
          out.cmp = std::move(r.cmp);
        }
        out.case_name = std::move(case_name);
        out.output_name = std::move(output_name);
        return out;
      },
      "c"_a, "a"_a, "b1"_a, "b2"_a, "sfa"_a, "sfb1"_a, "sfb2"_a, "L"_a, "M"_a, "N"_a, "K"_a, "alpha1"_a,
      "alpha2"_a, "case_name"_a, "output_name"_a);

  m.def(
      "check_case_dir",
      [](std::string dir, std::string output, bool batch_last) {
        nvfp4::CaseSpec spec;
        spec.inputs_dir = std::move(dir);
        spec.batch_last = batch_last;
        NativeReport out;
        {
          nb::gil_scoped_release release;
          nvfp4::CheckResult r = nvfp4::check_output_file(spec, output);
          out.info = std::move(r.info);
          out.cmp = std::move(r.cmp);
        }
        out.case_name = spec.name();
        out.output_name = std::move(output);
        return out;
      },
      "dir"_a, "output"_a, "batch_last"_a);

  m.def(
      "quantize",
      [](In<float> x, int64_t rows, int64_t K) {
        if (int64_t(x.size()) != rows * K) throw nvfp4::InputError("quantize: size does not match (rows, K)");
        nvfp4::Nvfp4Matrix q;
        {
          nb::gil_scoped_release release;
          q = nvfp4::quantize_nvfp4(x.data(), rows, K);
        }
        return nb::make_tuple(to_numpy(std::move(q.packed), {size_t(rows), size_t(K / 2)}),
                              to_numpy(std::move(q.scales), {size_t(rows), size_t(K / 16)}));
      },
      "x"_a, "rows"_a, "K"_a);

  m.def(
      "dequantize",
      [](In<uint8_t> packed, In<uint8_t> scales, int64_t rows, int64_t K) {
        if (K < 16 || K % 16 || int64_t(packed.size()) != rows * K / 2 || int64_t(scales.size()) != rows * K / 16)
          throw nvfp4::InputError("dequantize: sizes do not match (rows, K/2) and (rows, K/16)");
        return to_numpy(nvfp4::dequantize_nvfp4(packed.data(), scales.data(), rows, K), {size_t(rows), size_t(K)});
      },
      "packed"_a, "scales"_a, "rows"_a, "K"_a);

  m.def("distributions", [] { return nvfp4::distribution_names(); });
  m.def(
      "generate",
      [](int64_t M, int64_t N, int64_t K, int64_t L, const std::string& dist, uint64_t seed) {
        nvfp4::Shape s;
        s.M = M;
        s.N = N;
        s.K = K;
        s.L = L;
        s.validate();
        nvfp4::Problem p;
        {
          nb::gil_scoped_release release;
          p = nvfp4::make_problem(s, dist, seed);
        }
        const size_t l = size_t(L), m_ = size_t(M), n = size_t(N), kb = size_t(K / 2), ks = size_t(K / 16);
        return nb::make_tuple(to_numpy(std::move(p.a), {l, m_, kb}), to_numpy(std::move(p.b1), {l, n, kb}),
                              to_numpy(std::move(p.b2), {l, n, kb}), to_numpy(std::move(p.sfa), {l, m_, ks}),
                              to_numpy(std::move(p.sfb1), {l, n, ks}), to_numpy(std::move(p.sfb2), {l, n, ks}));
      },
      "M"_a, "N"_a, "K"_a, "L"_a, "dist"_a, "seed"_a);

  m.def(
      "to_blocked",
      [](In<uint8_t> plain, int64_t L, int64_t rows, int64_t cols) {
        std::vector<uint8_t> b = nvfp4::scales_plain_to_blocked(copy_of(plain, size_t(L * rows * cols), "plain"),
                                                                rows, cols, L);
        const size_t per = b.size() / size_t(L);
        return to_numpy(std::move(b), {size_t(L), per});
      },
      "plain"_a, "L"_a, "rows"_a, "cols"_a);
  m.def(
      "from_blocked",
      [](In<uint8_t> blocked, int64_t L, int64_t rows, int64_t cols) {
        std::vector<uint8_t> b(blocked.data(), blocked.data() + blocked.size());
        return to_numpy(nvfp4::scales_blocked_to_plain(b, rows, cols, L), {size_t(L), size_t(rows), size_t(cols)});
      },
      "blocked"_a, "L"_a, "rows"_a, "cols"_a);
  m.def(
      "compare_scale_layouts",
      [](In<uint8_t> plain, In<uint8_t> blocked, int64_t L, int64_t rows, int64_t cols) {
        if (int64_t(plain.size()) != L * rows * cols || int64_t(blocked.size()) != nvfp4::blocked_scale_bytes(rows, cols, L))
          throw nvfp4::InputError("compare_scale_layouts: sizes do not match (L, rows, cols)");
        return nvfp4::compare_scale_layouts(plain.data(), blocked.data(), rows, cols, L).message;
      },
      "plain"_a, "blocked"_a, "L"_a, "rows"_a, "cols"_a);
}
