// misreading.cpp — the catalogue of misreadings and the sampled judgment (misreading.hpp).
#include "misreading.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "compare.hpp"
#include "formats.hpp"
#include "layout.hpp"

namespace nvfp4 {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Role { A, B1, B2 };
enum class ScaleCode { E4M3, UE8M0, FNUZ, FlushSubnormal, NanAsNumber, One };

// How one operand's rows are read: whose codes and scales, which batch, how decoded.
struct Operand {
  const Problem* codes = nullptr;
  Role codes_role = Role::A;
  const Problem* scales = nullptr;
  Role scales_role = Role::A;
  bool codes_batch0 = false, scales_batch0 = false;
  bool swap_nibbles = false;
  ScaleCode scale_code = ScaleCode::E4M3;
  int per32 = 0;        // one scale per 32 elements: 1: sf[k / 32], 2: sf[2 * (k / 32)]
  bool blocked = false; // the plain scale array read at the blocked layout's offsets

  auto key() const {
    return std::make_tuple(codes, int(codes_role), scales, int(scales_role), codes_batch0, scales_batch0,
                           swap_nibbles, int(scale_code), per32, blocked);
  }
};

enum class Epi {
  SiluMul,        // the definition
  RolesSwapped,   // silu(a2*U) * (a1*G): B1 and B2 exchanged with their alphas
  WeightsSwapped, // silu(a1*U) * (a2*G): B1 and B2 exchanged, the alphas in place
  AlphasSwapped,  // silu(a2*G) * (a1*U)
  NoSilu,         // (a1*G) * (a2*U)
  Sigmoid,        // sigmoid(a1*G) * (a2*U)
  GateOnly,       // silu(a1*G)
  UpOnly,         // a2*U
  AlphasAfter,    // silu(G) * a1 * a2 * U
  GUbf16,         // a1*G and a2*U rounded to bf16 before the epilogue
  SiluBf16,       // silu(a1*G) rounded to bf16 before the product
  OutBf16,        // the product rounded to bf16, then to fp16
};

struct Entry {
  std::string what, hint;
  Operand a, b1, b2;
  // The exact G and U with the elements [r0, r1) of K (multiples of 16) subtracted (range_sign
  // -1: left out) or added again (+1: counted twice); 0: no range. Computed from the reference's
  // operands' per-block partial sums (Evaluator::partials), so every tile of K can be tried.
  int range_sign = 0;
  int64_t r0 = 0, r1 = 0;
  Epi epi = Epi::SiluMul;
  double alpha1 = 1, alpha2 = 1;
  bool transposed = false;    // the output written (N, M) per batch
  bool bf16_out = false;      // the output's bits are bf16

  void range(int sign, int64_t from, int64_t to) {
    range_sign = sign;
    r0 = from;
    r1 = to;
  }
};

double e4m3fnuz_value(uint8_t b) {
  if (b == 0x80) return kNaN;
  const int e = (b >> 3) & 0xF, m = b & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -7) : std::ldexp(1 + m / 8.0, e - 8);
  return (b & 0x80) ? -mag : mag;
}

double scale_value(uint8_t b, ScaleCode c) {
  switch (c) {
    case ScaleCode::E4M3: return e4m3_value(b);
    case ScaleCode::UE8M0: return b == 0xFF ? kNaN : std::ldexp(1.0, int(b) - 127);
    case ScaleCode::FNUZ: return e4m3fnuz_value(b);
    case ScaleCode::FlushSubnormal: return (b & 0x78) ? e4m3_value(b) : 0.0 * e4m3_value(b);
    case ScaleCode::NanAsNumber: return e4m3_is_nan(b) ? ((b & 0x80) ? -480.0 : 480.0) : e4m3_value(b);
    case ScaleCode::One: return 1.0;
  }
  return kNaN;
}

const std::vector<uint8_t>& codes_of(const Problem& p, Role r) {
  return r == Role::A ? p.a : r == Role::B1 ? p.b1 : p.b2;
}
const std::vector<uint8_t>& scales_of(const Problem& p, Role r) {
  return r == Role::A ? p.sfa : r == Role::B1 ? p.sfb1 : p.sfb2;
}

double bf16_round(double x) {
  if (!std::isfinite(x)) return x;
  float f = float(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);  // nearest, ties to even (finite inputs; overflow gives inf)
  u &= 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

double bf16_bits_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double silu(double x) { return x / (1 + std::exp(-x)); }

double epilogue(Epi e, double g, double u, double a1, double a2) {
  switch (e) {
    case Epi::SiluMul: return silu(a1 * g) * (a2 * u);
    case Epi::RolesSwapped: return silu(a2 * u) * (a1 * g);
    case Epi::WeightsSwapped: return silu(a1 * u) * (a2 * g);
    case Epi::AlphasSwapped: return silu(a2 * g) * (a1 * u);
    case Epi::NoSilu: return (a1 * g) * (a2 * u);
    case Epi::Sigmoid: return (a2 * u) / (1 + std::exp(-a1 * g));
    case Epi::GateOnly: return silu(a1 * g);
    case Epi::UpOnly: return a2 * u;
    case Epi::AlphasAfter: return silu(g) * a1 * a2 * u;
    case Epi::GUbf16: return silu(bf16_round(a1 * g)) * bf16_round(a2 * u);
    case Epi::SiluBf16: return bf16_round(silu(a1 * g)) * (a2 * u);
    case Epi::OutBf16: return bf16_round(silu(a1 * g) * (a2 * u));
  }
  return kNaN;
}

// The fp16 grid's spacing at magnitude v.
double ulp16(double v) {
  v = std::fabs(v);
  if (v < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, int(std::floor(std::log2(v))) - 10);
}

bool near(double x, double y, double floor) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return std::fabs(x - y) <= 2 * ulp16(std::max(std::fabs(x), std::fabs(y))) + floor;
}

// n indices of [0, count), evenly spread, the first and the last included.
std::vector<int64_t> spread(int64_t count, int64_t n) {
  std::vector<int64_t> v;
  if (count <= n) {
    for (int64_t i = 0; i < count; ++i) v.push_back(i);
    return v;
  }
  for (int64_t i = 0; i < n; ++i) v.push_back(n == 1 ? 0 : i * (count - 1) / (n - 1));
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

struct Sample {
  int64_t l, m, n;
};

// Evaluates the entries on the samples, decoding each operand row once.
class Evaluator {
 public:
  explicit Evaluator(const Shape& s) : s_(s) {}

  double value(const Entry& e, Sample at) {
    if (e.transposed) {  // the element the output holds at (m, n) is C[l, f % M, f / M], f = m*N + n
      const int64_t f = at.m * s_.N + at.n;
      at = {at.l, f % s_.M, f / s_.M};
    }
    double g = 0, u = 0;
    if (e.range_sign) {
      const Prefix& p = partials(e, at);
      const size_t b0 = size_t(e.r0 / kBlock), b1 = size_t(e.r1 / kBlock), nb = p.g.size() - 1;
      g = p.g[nb] + e.range_sign * (p.g[b1] - p.g[b0]);
      u = p.u[nb] + e.range_sign * (p.u[b1] - p.u[b0]);
    } else {
      dot(e, at, 0, s_.K, g, u);
    }
    const double c = epilogue(e.epi, g, u, e.alpha1, e.alpha2);
    return fp16_to_double(fp16_from_double(c));
  }

 private:
  // Prefix sums over K's blocks of 16 of the operands' G and U at one element: g[b] = the sum over
  // the first b blocks.
  struct Prefix {
    std::vector<double> g, u;
  };

  void dot(const Entry& e, Sample at, int64_t k0, int64_t k1, double& g, double& u) {
    const std::vector<double>& a = row(e.a, at.l, at.m, s_.M);
    const std::vector<double>& b1 = row(e.b1, at.l, at.n, s_.N);
    const std::vector<double>& b2 = row(e.b2, at.l, at.n, s_.N);
    for (int64_t k = k0; k < k1; ++k) {
      g += a[size_t(k)] * b1[size_t(k)];
      u += a[size_t(k)] * b2[size_t(k)];
    }
  }

  const Prefix& partials(const Entry& e, Sample at) {
    auto key = std::make_tuple(e.a.key(), e.b1.key(), e.b2.key(), at.l, at.m, at.n);
    auto it = prefix_.find(key);
    if (it != prefix_.end()) return it->second;
    Prefix p;
    p.g.push_back(0);
    p.u.push_back(0);
    for (int64_t b = 0; b < s_.K / kBlock; ++b) {
      double g = 0, u = 0;
      dot(e, at, b * kBlock, (b + 1) * kBlock, g, u);
      p.g.push_back(p.g.back() + g);
      p.u.push_back(p.u.back() + u);
    }
    return prefix_.emplace(key, std::move(p)).first->second;
  }

  const std::vector<double>& row(const Operand& o, int64_t l, int64_t r, int64_t rows) {
    auto key = std::make_tuple(o.key(), l, r);
    auto it = rows_.find(key);
    if (it != rows_.end()) return it->second;
    const int64_t K = s_.K, nsf = K / kBlock;
    const int64_t lc = o.codes_batch0 ? 0 : l, ls = o.scales_batch0 ? 0 : l;
    const uint8_t* codes = codes_of(*o.codes, o.codes_role).data() + (lc * rows + r) * (K / 2);
    const std::vector<uint8_t>& sf = scales_of(*o.scales, o.scales_role);
    std::vector<double> v(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) {
      const int64_t kb = o.per32 == 1 ? k / 32 : o.per32 == 2 ? 2 * (k / 32) : k / kBlock;
      const int64_t at = o.blocked ? blocked_scale_offset(r, kb, ls, rows, nsf) : (ls * rows + r) * nsf + kb;
      const double scale = at < int64_t(sf.size()) ? scale_value(sf[size_t(at)], o.scale_code) : 0.0;
      const uint8_t byte = codes[k >> 1];
      const bool high = (k & 1) != o.swap_nibbles;
      v[size_t(k)] = e2m1_value(high ? uint8_t(byte >> 4) : uint8_t(byte & 0x0F)) * scale;
    }
    return rows_.emplace(key, std::move(v)).first->second;
  }

  Shape s_;
  using OperandKey = decltype(Operand().key());
  std::map<std::tuple<OperandKey, int64_t, int64_t>, std::vector<double>> rows_;
  std::map<std::tuple<OperandKey, OperandKey, OperandKey, int64_t, int64_t, int64_t>, Prefix> prefix_;
};

Operand plain(const Problem& p, Role r) {
  Operand o;
  o.codes = o.scales = &p;
  o.codes_role = o.scales_role = r;
  return o;
}

bool same_bytes(const Problem& x, const Problem& y, std::initializer_list<Role> roles, bool codes, bool scales) {
  for (Role r : roles) {
    if (codes && codes_of(x, r) != codes_of(y, r)) return false;
    if (scales && scales_of(x, r) != scales_of(y, r)) return false;
  }
  return true;
}

// The definition itself (docs/design.md §1): every catalogue entry is it with one thing changed.
Entry definition(const Problem& p) {
  Entry e;
  e.a = plain(p, Role::A);
  e.b1 = plain(p, Role::B1);
  e.b2 = plain(p, Role::B2);
  e.alpha1 = p.alpha1;
  e.alpha2 = p.alpha2;
  return e;
}

std::vector<Entry> catalogue(const Problem& p, const std::vector<MisreadingSource>& others) {
  const Shape& s = p.shape;
  const Entry base = definition(p);
  std::vector<Entry> v;
  auto add = [&](Entry e, std::string what, std::string hint) {
    e.what = std::move(what);
    e.hint = std::move(hint);
    v.push_back(std::move(e));
  };
  auto with = [&](auto change) {
    Entry e = base;
    change(e);
    return e;
  };
  const bool alphas = p.alpha1 != 1.0f || p.alpha2 != 1.0f;

  // The epilogue.
  const char* swapped = "the gate and up weights handed in the other order, or the halves of a fused [gate; up] weight "
                        "swapped?";
  if (p.alpha1 == p.alpha2) {
    add(with([](Entry& e) { e.epi = Epi::RolesSwapped; }),
        "B1 and B2 in each other's place: silu(alpha*A*B2^T) * (alpha*A*B1^T)", swapped);
  } else {
    add(with([](Entry& e) { e.epi = Epi::WeightsSwapped; }),
        "B1 and B2 in each other's place, the alphas in theirs: silu(alpha1*A*B2^T) * (alpha2*A*B1^T)", swapped);
    add(with([](Entry& e) { e.epi = Epi::RolesSwapped; }),
        "B1 and B2 in each other's place with their alphas: silu(alpha2*A*B2^T) * (alpha1*A*B1^T)",
        "the two projections, global scales included, handed in the other order?");
  }
  add(with([](Entry& e) { e.epi = Epi::NoSilu; }), "no silu: (alpha1*A*B1^T) * (alpha2*A*B2^T)", "the activation left out?");
  add(with([](Entry& e) { e.epi = Epi::Sigmoid; }), "sigmoid instead of silu: sigmoid(alpha1*G) * (alpha2*U)",
      "silu(x) = x * sigmoid(x) without its factor x?");
  add(with([](Entry& e) { e.epi = Epi::GateOnly; }), "silu(alpha1*A*B1^T) alone", "the product with the up projection left out?");
  add(with([](Entry& e) { e.epi = Epi::UpOnly; }), "alpha2*A*B2^T alone", "the gate left out (an epilogue that stores U)?");
  if (alphas) {
    add(with([](Entry& e) { e.alpha1 = 1; }), "alpha1 not applied", "the global scale of B1 ignored?");
    add(with([](Entry& e) { e.alpha2 = 1; }), "alpha2 not applied", "the global scale of B2 ignored?");
    add(with([](Entry& e) { e.alpha1 = e.alpha2 = 1; }), "neither alpha applied", "the global scales ignored?");
    add(with([](Entry& e) { e.epi = Epi::AlphasSwapped; }), "alpha1 and alpha2 in each other's place",
        "the global scales handed in the other order?");
    add(with([&](Entry& e) { e.alpha2 = p.alpha1; }), "alpha1 for both GEMMs", "one global scale used for both?");
    add(with([&](Entry& e) { e.alpha1 = p.alpha2; }), "alpha2 for both GEMMs", "one global scale used for both?");
    add(with([](Entry& e) { e.epi = Epi::AlphasAfter; }), "alpha1 applied after the silu: silu(G) * alpha1*alpha2*U",
        "both global scales folded into the output scale? silu is not linear: alpha1 must scale its argument");
  }
  const char* precision = "an intermediate held in a narrower type than fp32?";
  add(with([](Entry& e) { e.epi = Epi::GUbf16; }), "alpha1*G and alpha2*U rounded to bf16 before the epilogue", precision);
  add(with([](Entry& e) { e.epi = Epi::SiluBf16; }), "silu(alpha1*G) rounded to bf16 before the product", precision);
  add(with([](Entry& e) { e.epi = Epi::OutBf16; }), "the output rounded to bf16 before fp16", precision);
  add(with([](Entry& e) { e.bf16_out = true; }), "bf16 bits in the fp16 output",
      "the output computed as bf16 and its bytes stored into the fp16 tensor?");
  if (s.M > 1 && s.N > 1)
    add(with([](Entry& e) { e.transposed = true; }), "the output written transposed, (N, M) per batch",
        "C^T = B*A^T stored into C's memory, or the output's strides misread?");

  // How the operands are read: each deviation for A, B1, B2, both weights and every operand.
  struct Reading {
    const char* what;
    const char* hint;
    void (*apply)(Operand&);
  };
  static const Reading readings[] = {
      {"FP4 nibbles read high first",
       "the packed E2M1 bytes unpacked high nibble first? (element 2j is in the low nibble of byte j)",
       [](Operand& o) { o.swap_nibbles = true; }},
      {"scale bytes decoded as UE8M0 (2^(byte-127), MX's scales)", "an MXFP4 scale decoder on NVFP4's E4M3 scales?",
       [](Operand& o) { o.scale_code = ScaleCode::UE8M0; }},
      {"scale bytes decoded as E4M3FNUZ (bias 8)", "the fnuz FP8 type instead of e4m3fn?",
       [](Operand& o) { o.scale_code = ScaleCode::FNUZ; }},
      {"subnormal scale bytes flushed to zero", "scales decoded with flush-to-zero, or a decoder without subnormals?",
       [](Operand& o) { o.scale_code = ScaleCode::FlushSubnormal; }},
      {"NaN scale bytes (0x7F, 0xFF) decoded as +-480", "a decoder that treats E4M3FN's NaN codes as numbers?",
       [](Operand& o) { o.scale_code = ScaleCode::NanAsNumber; }},
      {"block scales not applied", "the E4M3 scales ignored?", [](Operand& o) { o.scale_code = ScaleCode::One; }},
      {"block scales taken one per 32 elements (scale k/32 for element k)",
       "MX's 32-element blocks instead of NVFP4's 16?", [](Operand& o) { o.per32 = 1; }},
      {"block scales taken one per 32 elements (scale 2*(k/32) for element k)",
       "MX's 32-element blocks instead of NVFP4's 16?", [](Operand& o) { o.per32 = 2; }},
      {"plain scales read as the blocked (128x4-tiled) layout",
       "a kernel that takes cuBLASLt's tiled scale layout handed plain scales (a submission's sf*_permuted "
       "tensors are the tiled ones)?",
       [](Operand& o) { o.blocked = true; }},
  };
  struct Roles {
    const char* whose;
    bool a, b1, b2;
  };
  static const Roles roles[] = {{"every operand's", true, true, true}, {"A's", true, false, false},
                                {"B1's and B2's", false, true, true}, {"B1's", false, true, false},
                                {"B2's", false, false, true}};
  for (const Reading& rd : readings)
    for (const Roles& ro : roles)
      add(with([&](Entry& e) {
            if (ro.a) rd.apply(e.a);
            if (ro.b1) rd.apply(e.b1);
            if (ro.b2) rd.apply(e.b2);
          }),
          std::string(ro.whose) + " " + rd.what, rd.hint);
  add(with([&](Entry& e) {
        e.b1.scales_role = Role::B2;
        e.b2.scales_role = Role::B1;
      }),
      "B1's and B2's scales in each other's place", "SFB1 and SFB2 handed in the other order?");
  add(with([&](Entry& e) { e.b2.scales_role = Role::B1; }), "SFB1 for both weights", "one weight scale tensor used for both GEMMs?");
  add(with([&](Entry& e) { e.b1.scales_role = Role::B2; }), "SFB2 for both weights", "one weight scale tensor used for both GEMMs?");
  add(with([&](Entry& e) { e.b2 = e.b1; }), "B1 (and SFB1) for both GEMMs", "the gate weights read for the up projection too?");
  add(with([&](Entry& e) { e.b1 = e.b2; }), "B2 (and SFB2) for both GEMMs", "the up weights read for the gate too?");

  // Which part of K (block-aligned ranges; find_misreading also tries every aligned tile of K).
  std::vector<int64_t> cuts;
  for (int64_t t : {32, 64, 128, 256, 512})
    if (s.K % t && s.K / t > 0) cuts.push_back(s.K / t * t);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (int64_t c : cuts)
    add(with([&](Entry& e) { e.range(-1, c, s.K); }), "K cut to its first " + std::to_string(c) + " elements",
        "the K tail beyond the last whole tile (K = " + std::to_string(s.K) + ") dropped?");
  if (s.K >= 32) {
    const int64_t half = s.K / 32 * 16;
    add(with([&](Entry& e) { e.range(-1, half, s.K); }), "only the first " + std::to_string(half) + " of K's elements",
        "a split-K part missing, or its partials overwritten instead of added?");
    add(with([&](Entry& e) { e.range(-1, 0, half); }), "only the last " + std::to_string(s.K - half) + " of K's elements",
        "a split-K part missing, or its partials overwritten instead of added?");
  }

  // Which batch.
  if (s.L > 1) {
    add(with([&](Entry& e) { e.b1.codes_batch0 = e.b1.scales_batch0 = e.b2.codes_batch0 = e.b2.scales_batch0 = true; }),
        "every batch with batch 0's weights", "the weights' batch stride left out?");
    add(with([&](Entry& e) { e.a.codes_batch0 = e.a.scales_batch0 = true; }), "every batch with batch 0's activations",
        "the activations' batch stride left out?");
    add(with([&](Entry& e) { e.a.scales_batch0 = e.b1.scales_batch0 = e.b2.scales_batch0 = true; }),
        "every batch with batch 0's block scales", "the scales' batch stride left out?");
  }

  // Tensors kept from the inputs of another call.
  for (const MisreadingSource& o : others) {
    if (!o.problem || o.problem->shape != s) continue;
    const Problem& q = *o.problem;
    const std::string from = " from " + o.label;
    const char* kept = "a buffer filled once (a converted or swizzled copy, a graph's captured tensor) and not refreshed?";
    if (!same_bytes(p, q, {Role::A}, false, true))
      add(with([&](Entry& e) { e.a.scales = &q; }), "A's block scales" + from, kept);
    if (!same_bytes(p, q, {Role::A}, true, false))
      add(with([&](Entry& e) { e.a.codes = &q; }), "A's FP4 codes (with this call's scales)" + from, kept);
    if (!same_bytes(p, q, {Role::B1, Role::B2}, true, true))
      add(with([&](Entry& e) { e.b1 = plain(q, Role::B1); e.b2 = plain(q, Role::B2); }), "the weights (B1, B2, their scales)" + from,
          "weights or decoded weights cached from an earlier call?");
    if (!same_bytes(p, q, {Role::B1, Role::B2}, false, true))
      add(with([&](Entry& e) { e.b1.scales = e.b2.scales = &q; }), "the weights' block scales" + from, kept);
    if (q.alpha1 != p.alpha1 || q.alpha2 != p.alpha2)
      add(with([&](Entry& e) { e.alpha1 = q.alpha1; e.alpha2 = q.alpha2; }), "alpha1 and alpha2" + from,
          "the global scales kept from an earlier call (a graph captured with them as constants)?");
  }
  return v;
}

}  // namespace

std::string MisreadingMatch::text() const {
  std::ostringstream m;
  m << "the output matches " << what << ", on " << fitting << " of the " << apart
    << " sampled elements that tell it from the reference";
  if (!hint.empty()) m << ": " << hint;
  return m.str();
}

int misreading_catalogue_size(const Problem& p, const std::vector<MisreadingSource>& others) {
  return int(catalogue(p, others).size());
}

std::optional<MisreadingMatch> find_misreading(const Problem& p, const uint16_t* out,
                                               const std::vector<MisreadingSource>& others) {
  const Shape& s = p.shape;
  const std::vector<int64_t> ls = spread(s.L, 4);
  const std::vector<int64_t> ns = spread(s.N, 8);
  const int64_t per_batch = kMisreadingSamples / int64_t(ls.size() * ns.size());
  const std::vector<int64_t> ms = spread(s.M, std::max<int64_t>(1, std::min<int64_t>(16, per_batch)));
  std::vector<Sample> samples;
  for (int64_t l : ls)
    for (int64_t m : ms)
      for (int64_t n : ns) samples.push_back({l, m, n});

  const std::vector<Entry> entries = catalogue(p, others);
  Evaluator ev(s);
  const Entry truth = definition(p);
  std::vector<double> t, o;
  double sq = 0;
  int64_t finite = 0;
  for (const Sample& x : samples) {
    t.push_back(ev.value(truth, x));
    o.push_back(fp16_to_double(out[(x.l * s.M + x.m) * s.N + x.n]));
    if (std::isfinite(t.back())) {
      sq += t.back() * t.back();
      ++finite;
    }
  }
  const double floor = finite ? std::ldexp(std::sqrt(sq / double(finite)), -10) : 0.0;

  const int n = int(samples.size());
  int zeros = 0, nonzero_truth = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    zeros += o[i] == 0;
    nonzero_truth += !near(t[i], 0, floor);
  }
  if (zeros == n && nonzero_truth >= std::min(8, n) && n >= 4)
    return MisreadingMatch{"zeros on every sampled element",
                           "zeros written: an early return after clearing the output, or a scale or alpha read as "
                           "zero?",
                           nonzero_truth, nonzero_truth, n};

  // Every entry that qualifies, with its values on the samples: the best is named, and any other
  // that gives the same values (this data cannot tell them apart) is named beside it.
  struct Fit {
    MisreadingMatch m;
    double fit;
    std::vector<double> h;
  };
  std::vector<Fit> fits;
  auto judge = [&](const Entry& e) {
    int apart = 0, fitting = 0, near_all = 0;
    std::vector<double> hs;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& x = samples[i];
      const uint16_t bits = out[(x.l * s.M + x.m) * s.N + x.n];
      // bf16_out changes how the output is read, not what is computed: its elements are told apart
      // where reading the bits as bf16 is not near reading them as fp16.
      const double h = e.bf16_out ? t[i] : ev.value(e, x);
      hs.push_back(h);
      const double got = e.bf16_out ? bf16_bits_value(bits) : o[i];
      const double ref_side = e.bf16_out ? o[i] : got;
      // An unwritten element (the poison, a NaN) fits nothing.
      const bool fits_here = bits != kPoisonBits && near(got, h, floor);
      near_all += fits_here;
      if (e.bf16_out ? near(got, o[i], floor) : near(t[i], h, floor)) continue;
      // Weak evidence is not counted: a value near zero (many misreadings give ~0: scales decoded
      // far too small, a whole range of K left out; an output of zeros is reported above) or a NaN
      // where the reference is a number (a decoder that makes NaN of some byte: any NaN output fits).
      if (std::isfinite(h) && std::fabs(h) <= floor) continue;
      if (std::isnan(h) && !std::isnan(t[i])) continue;
      ++apart;
      const bool nearer = std::isnan(h) || std::isinf(h) || std::isnan(t[i]) ||
                          std::fabs(got - h) < std::fabs(ref_side - t[i]);
      fitting += fits_here && nearer;
    }
    if (apart < std::min(8, n) || n < 4 || 10 * fitting < 9 * apart || 10 * near_all < 9 * n) return;
    fits.push_back({MisreadingMatch{e.what, e.hint, fitting, apart, n}, double(fitting) / apart, std::move(hs)});
  };
  std::set<std::tuple<int64_t, int64_t, int>> ranges;  // each K range tried once
  for (const Entry& e : entries) {
    if (e.range_sign) ranges.insert({e.r0, e.r1, e.range_sign});
    judge(e);
  }
  // Every aligned tile of K left out or counted twice (a stage skipped, a split-K or stream-K part
  // lost or added again), smallest tiles first.
  for (int64_t tile = kBlock; tile < s.K && tile <= 512; tile *= 2)
    for (int64_t from = 0; from < s.K; from += tile)
      for (int sign : {-1, 1}) {
        Entry e = truth;
        const int64_t to = std::min(from + tile, s.K);
        if (!ranges.insert({from, to, sign}).second) continue;
        e.range(sign, from, to);
        e.what = "the K elements [" + std::to_string(from) + ", " + std::to_string(to) + ") " +
                 (sign < 0 ? "left out" : "counted twice");
        e.hint = sign < 0 ? "a stage of the K loop skipped, or a split-K part lost?"
                          : "a stage of the K loop run twice, or a split-K part added twice?";
        judge(e);
      }
  if (fits.empty()) return std::nullopt;
  size_t best = 0;
  for (size_t i = 1; i < fits.size(); ++i)
    if (fits[i].fit > fits[best].fit || (fits[i].fit == fits[best].fit && fits[i].m.apart > fits[best].m.apart))
      best = i;
  std::vector<std::string> same;
  for (size_t i = 0; i < fits.size(); ++i) {
    if (i == best || std::find(same.begin(), same.end(), fits[i].m.what) != same.end() ||
        fits[i].m.what == fits[best].m.what)
      continue;
    bool equal = true;
    for (size_t k = 0; k < fits[i].h.size() && equal; ++k) equal = near(fits[i].h[k], fits[best].h[k], floor);
    if (equal) same.push_back(fits[i].m.what);
  }
  MisreadingMatch m = fits[best].m;
  if (same.size() == 1) m.what += ", or equally " + same[0] + " (this data cannot tell them apart)";
  if (same.size() > 1)
    m.what += ", or equally one of " + std::to_string(same.size()) + " others (this data cannot tell them apart; " +
              same[0] + " among them)";
  return m;
}

}  // namespace nvfp4
