// reference.cpp — the exact CPU reference (docs/design.md §2): G = A*B1^T, U = A*B2^T exactly, and
// C = fp16_rne(silu(alpha1*G) * (alpha2*U)) from them.
//
// Layouts (problem.hpp): A (L, M, K/2) packed E2M1, element 2j in the low nibble of byte j;
// B1, B2 (L, N, K/2); SFA (L, M, K/16), SFB1/SFB2 (L, N, K/16) plain E4M3FN; G, U, C (L, M, N).
//
// Why the double GEMM is exact, and when it is not trusted
//   Decode every element to x = e2m1 * e4m3 in double; this is exact: x = I * 2^-10 with the
//   integer I = (2*e2m1) * (512*e4m3), |I| <= 12 * 229376 < 2^21.4. A product of two decoded
//   elements is (I_a * I_b) * 2^-20, exact in double (|I_a I_b| < 2^43). Let q_a be the smallest
//   number of trailing zero bits of a nonzero I_a in row a (likewise q_b): every term, and so
//   every partial sum, is an integer multiple of Q = 2^(q_a + q_b - 20). A double holds every
//   multiple of Q up to 2^53 * Q exactly, so if S = sum_k |a_k b_k| <= 2^(33 + q_a + q_b), every
//   partial sum of any summation order — with or without FMA, with any blocking — is exact, and
//   the GEMM returns the exact dot product.
//   S is certified per element, in three tiers, cheapest first:
//     1. per-row norms: S <= min(|a|_1 |b|_inf, |a|_inf |b|_1, |a|_2 |b|_2) (rounding slack
//        included, see tier1_certifies below);
//     2. where tier 1 fails (or abs sums are requested anyway): an fp32 GEMM of |A| * |B|^T, whose
//        result s satisfies S <= s * (1 + 2(K+1) 2^-24) (abs_upper below; fp64 beyond K = 2^22).
//        The same scaled-up s is what ReferenceOptions::abs_sums returns: S <= s' <= S(1+4(K+1)u);
//     3. where both fail: the dot product is recomputed in integers (int64 partial sums of I_a*I_b
//        over at most 2^19 terms, totalled in __int128), exact for every K the Shape allows. If
//        the exact value has more than 53 significant bits it is rounded once to nearest-even
//        when stored as a double (the only case where g/u are not exact; C is unaffected).
//   NaN scales: a row of A (or B) with any NaN scale makes its whole output row (column) NaN,
//   because the dot product multiplies that NaN by the row's codes (0 * NaN is NaN). Such
//   elements are set to NaN explicitly rather than trusted to the GEMM. Negative scales are
//   decoded with their sign.
//
// Work split: for each batch and each super-block of rows of A (at most kMaxAElems decoded
// doubles, decoded once and shared), the N columns are cut into chunks of kChunkN rows of B1 and
// the same rows of B2; a worker decodes the 2*chunk rows into one buffer and runs ONE GEMM of
// A-tile * [B1c; B2c]^T, then certifies, falls back where needed and applies the epilogue to its
// tile. Workers are std::threads taking tiles from an atomic counter, each with its own scratch;
// results do not depend on the thread count or on the GEMM ISA (reference_gemm.hpp: Eigen
// compiled for baseline, x86-64-v3 and x86-64-v4, chosen at run time). Memory: the decoded A
// super-block plus, per thread, 2*kChunkN decoded B rows (fp64 and fp32) and the outputs.
#include "reference.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "errors.hpp"
#include "formats.hpp"
#include "reference_gemm.hpp"
#include "silu.hpp"

namespace nvfp4 {

uint16_t reference_epilogue(double g, double u, float alpha1, float alpha2) {
  // The one SiLU·mul (silu.hpp) in double: for x < -709 exp overflows to +inf and the quotient
  // is -0, the right limit. Then one RNE rounding (+-inf beyond 65520, NaN stays NaN).
  return fp16_from_double(silu_mul(g, u, static_cast<double>(alpha1), static_cast<double>(alpha2)));
}

std::vector<std::string> reference_isas() {
  std::vector<std::string> v;
  for (const auto* k : detail::usable_gemm_kernels()) v.push_back(k->isa);
  return v;
}

namespace {

constexpr int64_t kChunkN = 256;           // rows of B1 (and of B2) per work tile
constexpr int64_t kMaxAElems = 1 << 25;    // decoded A super-block: at most 32 Mi doubles (256 MB)
constexpr int kNoBits = kZeroRowQ;         // q of an all-zero row: any S (= 0) is certified
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Tables {
  double e2m1[16];
  double e4m3[256];
  int32_t e4m3_int[256];     // 512 * e4m3 (0 for NaN codes, which are handled by flag)
  int e4m3_ctz[256];         // trailing zeros of |512 * e4m3|, kNoBits for zero and NaN
  uint8_t e2m1_twice_abs[16];
  Tables() {
    for (int c = 0; c < 16; ++c) {
      e2m1[c] = e2m1_value(uint8_t(c));
      e2m1_twice_abs[c] = uint8_t(std::abs(e2m1_twice(uint8_t(c))));
    }
    for (int b = 0; b < 256; ++b) {
      e4m3[b] = e4m3_value(uint8_t(b));
      e4m3_int[b] = e4m3_is_nan(uint8_t(b)) ? 0 : e4m3_times_512(uint8_t(b));
      const uint32_t mag = uint32_t(std::abs(e4m3_int[b]));
      e4m3_ctz[b] = mag ? __builtin_ctz(mag) : kNoBits;
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}

// Per decoded row: the norms behind the tier-1 bound, q (see header) and whether a scale is NaN.
struct RowStats {
  double l1 = 0, linf = 0, l2 = 0;  // l2 is an upper bound of the 2-norm (rounding included)
  int q = kNoBits;
  bool nan = false;
  // The norms times 2^-q (exact power-of-two scaling), so that the tier-1 test
  // bound <= 2^(33 + q_a + q_b) needs no per-element exponent arithmetic.
  double l1n = 0, linfn = 0, l2n = 0;
};

// Decodes `rows` rows of a packed (rows, K/2) E2M1 matrix with (rows, K/16) scales into a
// (rows, K) row-major double matrix, and fills one RowStats per row and, unless null, the
// (rows, K/16) block exponents (ReferenceResult::qb_a).
void decode_rows(const uint8_t* packed, const uint8_t* sf, int64_t rows, int64_t K, double* out,
                 RowStats* stats, uint8_t* block_q = nullptr) {
  const Tables& t = tables();
  const int64_t kb = K / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* prow = packed + r * (K / 2);
    const uint8_t* srow = sf + r * kb;
    double* orow = out + r * K;
    RowStats st;
    double l2sq = 0;
    for (int64_t b = 0; b < kb; ++b) {
      const uint8_t sbyte = srow[b];
      const double s = t.e4m3[sbyte];
      const uint8_t* p = prow + b * (kBlock / 2);
      double* o = orow + b * kBlock;
      unsigned bits_or = 0;
      for (int j = 0; j < kBlock / 2; ++j) {
        const uint8_t lo = p[j] & 0x0F, hi = p[j] >> 4;
        o[2 * j] = t.e2m1[lo] * s;
        o[2 * j + 1] = t.e2m1[hi] * s;
        bits_or |= t.e2m1_twice_abs[lo] | t.e2m1_twice_abs[hi];
      }
      if (block_q) block_q[r * kb + b] = uint8_t(kZeroBlockQ);
      if (e4m3_is_nan(sbyte)) {
        st.nan = true;
        continue;
      }
      if (bits_or == 0 || t.e4m3_int[sbyte] == 0) continue;  // an all-zero block adds nothing
      const int bq = t.e4m3_ctz[sbyte] + __builtin_ctz(bits_or);  // at most 15 + 3
      st.q = std::min(st.q, bq);
      if (block_q) block_q[r * kb + b] = uint8_t(bq);
      for (int j = 0; j < kBlock; ++j) {
        const double a = std::fabs(o[j]);
        st.l1 += a;  // exact: multiples of 2^-10 summing to < 2^47
        st.linf = std::max(st.linf, a);
        l2sq += a * a;
      }
    }
    // l2sq is a K-term sum of nonnegative doubles: true <= computed * (1 + 2K 2^-53) when
    // K 2^-53 <= 1/4; sqrt and the multiplications add a few ulps more, covered by the +8.
    st.l2 = std::sqrt(l2sq * (1.0 + double(2 * K + 8) * 0x1p-53)) * (1.0 + 0x1p-50);
    const int q = std::min(st.q, 900);  // all-zero rows: norms 0, scaled to 0
    st.l1n = std::ldexp(st.l1, -q);
    st.linfn = std::ldexp(st.linf, -q);
    st.l2n = std::ldexp(st.l2, -q);
    stats[r] = st;
  }
}

// Tier 1: whether the row norms prove S = sum_k |a_k b_k| <= 2^(33 + q_a + q_b), using
// S <= min(|a|_1 |b|_inf, |a|_inf |b|_1, |a|_2 |b|_2), all scaled by 2^-(q_a+q_b) (exactly). The
// factor absorbs the rounding of the products; l1 and linf are exact, l2 carries its own slack.
bool tier1_certifies(const RowStats& a, const RowStats& b) {
  const double bound = std::min({a.l1n * b.linfn, a.linfn * b.l1n, a.l2n * b.l2n});
  return bound * (1.0 + 0x1p-50) <= 0x1p33;
}

// The largest S for which a double sum of the terms of (a, b) is certified exact.
double exact_limit(const RowStats& a, const RowStats& b) {
  const int e = std::min(a.q + b.q, 900);  // all-zero rows: a huge limit
  return std::ldexp(1.0, 33 + e);
}

// Tier 2: an upper bound of S from a floating-point sum s of the K nonnegative terms, each exact
// (|a|, |b| have at most 6 significant bits, so |a b| has at most 12, within fp32's range). Any
// summation order gives |s - S| <= gamma_{K-1} S, so S <= s/(1-gamma) <= s (1 + 2Ku) when
// Ku <= 1/4, u = 2^-24 for fp32 (used up to K = 2^22) or 2^-53 for fp64 (beyond); (K+1) instead
// of K covers the rounding of this multiplication. From above, s <= S (1 + gamma), so the result
// is at most S (1 + 4(K+1)u): a tight bound, not just a safe one.
constexpr int64_t kMaxKAbsF32 = int64_t(1) << 22;
double abs_upper(double s, int64_t K) {
  const double two_u = K <= kMaxKAbsF32 ? 0x1p-23 : 0x1p-52;
  return s * (1.0 + double(K + 1) * two_u);
}

// Tier 3: the exact dot product of one A row and one B row, from the packed codes, in units of
// 2^-20 (then scaled): int64 partial sums over 2^19 terms (|I_a I_b| < 2^43), totalled in
// __int128. Rows containing a NaN scale never reach this function.
double exact_dot(const int32_t* ia, const int32_t* ib, int64_t K) {
  __int128 total = 0;
  for (int64_t k0 = 0; k0 < K; k0 += (int64_t(1) << 19)) {
    const int64_t k1 = std::min(K, k0 + (int64_t(1) << 19));
    int64_t part = 0;
    for (int64_t k = k0; k < k1; ++k) part += int64_t(ia[k]) * int64_t(ib[k]);
    total += part;
  }
  // Conversion rounds to nearest-even if more than 53 bits are significant; the scaling is exact.
  return std::ldexp(static_cast<double>(total), -20);
}

// One row as integers I = (2*e2m1) * (512*e4m3).
void integer_row(const uint8_t* packed, const uint8_t* sf, int64_t K, int32_t* out) {
  const Tables& t = tables();
  for (int64_t k = 0; k < K; ++k)
    out[k] = e2m1_twice(fp4_code_at(packed, k)) * t.e4m3_int[sf[k / kBlock]];
}

// Runs `work(i, worker)` for i in [0, n) on up to `threads` std::threads (the caller's is worker
// 0); worker < threads indexes per-thread scratch. Rethrows the first exception.
template <typename F>
void parallel_for(int64_t n, int threads, F&& work) {
  if (n <= 0) return;
  threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) work(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&](int worker) {
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        work(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// An uninitialized growable array: scratch that is fully overwritten before it is read, so it
// needs neither zero-filling nor reallocation from one work tile to the next.
template <typename T>
struct Scratch {
  std::unique_ptr<T[]> data;
  size_t size = 0;
  T* get(size_t n) {
    if (n > size) {
      data.reset(new T[n]);
      size = n;
    }
    return data.get();
  }
};

// Per worker thread: the decoded B chunk, the products and the fallback rows of one tile.
struct WorkerScratch {
  Scratch<double> b_dec, prod, abs_prod, b_abs64;
  Scratch<float> b_abs, abs32;
  Scratch<RowStats> b_stats;
  Scratch<uint8_t> state;
  std::vector<int32_t> ia, ib;
};

}  // namespace

ReferenceResult compute_reference(const Problem& p, const ReferenceOptions& opt) {
  p.validate();
  const Shape s = p.shape;
  const int64_t M = s.M, N = s.N, K = s.K, L = s.L, KB = K / kBlock;
  const detail::GemmKernels& gemm = detail::gemm_kernels(opt.isa);
  int threads = opt.threads > 0 ? opt.threads : int(std::thread::hardware_concurrency());
  threads = std::max(1, threads);

  ReferenceResult r;
  r.shape = s;
  r.g.assign(size_t(L * M * N), 0.0);
  r.u.assign(size_t(L * M * N), 0.0);
  r.c.assign(size_t(L * M * N), 0);
  if (opt.abs_sums) {
    r.g_abs.assign(size_t(L * M * N), 0.0);
    r.u_abs.assign(size_t(L * M * N), 0.0);
    r.q_a.assign(size_t(L * M), kNoBits);
    r.q_b1.assign(size_t(L * N), kNoBits);
    r.q_b2.assign(size_t(L * N), kNoBits);
    r.qb_a.assign(size_t(L * M * KB), uint8_t(kZeroBlockQ));
    r.qb_b1.assign(size_t(L * N * KB), uint8_t(kZeroBlockQ));
    r.qb_b2.assign(size_t(L * N * KB), uint8_t(kZeroBlockQ));
  }

  const int64_t chunk_n = std::min(N, kChunkN);
  const int64_t n_chunks = (N + chunk_n - 1) / chunk_n;
  const int64_t super_m = std::max<int64_t>(1, std::min(M, kMaxAElems / K));

  std::vector<double> a_dec;
  // |A| for tier 2 and the abs sums, made on first need per super-block: fp32 up to
  // K = kMaxKAbsF32 (an fp32 GEMM is twice as fast), fp64 beyond.
  const bool abs_f32 = K <= kMaxKAbsF32;
  std::vector<float> a_abs;
  std::vector<double> a_abs64;
  std::vector<RowStats> a_stats;

  for (int64_t l = 0; l < L; ++l) {
    for (int64_t m0 = 0; m0 < M; m0 += super_m) {
      const int64_t ms = std::min(super_m, M - m0);
      a_dec.resize(size_t(ms * K));
      a_stats.assign(size_t(ms), RowStats{});
      decode_rows(p.a.data() + (l * M + m0) * (K / 2), p.sfa.data() + (l * M + m0) * KB, ms, K,
                  a_dec.data(), a_stats.data(), opt.abs_sums ? r.qb_a.data() + (l * M + m0) * KB : nullptr);
      if (opt.abs_sums)
        for (int64_t i = 0; i < ms; ++i) r.q_a[size_t(l * M + m0 + i)] = a_stats[size_t(i)].q;
      std::once_flag a_abs_once;
      auto ensure_a_abs = [&] {
        std::call_once(a_abs_once, [&] {
          if (abs_f32) {
            a_abs.resize(size_t(ms * K));
            for (int64_t i = 0; i < ms * K; ++i) a_abs[size_t(i)] = float(std::fabs(a_dec[size_t(i)]));
          } else {
            a_abs64.resize(size_t(ms * K));
            for (int64_t i = 0; i < ms * K; ++i) a_abs64[size_t(i)] = std::fabs(a_dec[size_t(i)]);
          }
        });
      };

      // Tiles: every column chunk; rows split as well when there are too few chunks to share.
      int64_t m_tiles = 1;
      if (n_chunks < 2 * threads) m_tiles = std::min<int64_t>((2 * threads + n_chunks - 1) / n_chunks, (ms + 15) / 16);
      m_tiles = std::max<int64_t>(1, m_tiles);
      const int64_t tile_m = (ms + m_tiles - 1) / m_tiles;
      m_tiles = (ms + tile_m - 1) / tile_m;

      std::atomic<int64_t> tier2{0}, tier3{0};
      std::vector<WorkerScratch> scratch(size_t(std::max(1, threads)));
      parallel_for(m_tiles * n_chunks, threads, [&](int64_t item, int worker) {
        WorkerScratch& ws = scratch[size_t(worker)];
        const int64_t mt0 = (item / n_chunks) * tile_m;  // within the super-block
        const int64_t mt = std::min(tile_m, ms - mt0);
        const int64_t n0 = (item % n_chunks) * chunk_n;
        const int64_t nc = std::min(chunk_n, N - n0);
        const int64_t w = 2 * nc;  // columns of the stacked product: [G chunk | U chunk]

        // Decode B1 rows n0.. into rows [0, nc) and B2 rows into [nc, 2nc) of one buffer.
        double* b_dec = ws.b_dec.get(size_t(w * K));
        RowStats* b_stats = ws.b_stats.get(size_t(w));
        const int64_t boff = l * N + n0;
        const bool store_q = opt.abs_sums && m0 == 0 && mt0 == 0;  // the one tile storing these rows' q
        decode_rows(p.b1.data() + boff * (K / 2), p.sfb1.data() + boff * KB, nc, K, b_dec, b_stats,
                    store_q ? r.qb_b1.data() + boff * KB : nullptr);
        decode_rows(p.b2.data() + boff * (K / 2), p.sfb2.data() + boff * KB, nc, K, b_dec + nc * K,
                    b_stats + nc, store_q ? r.qb_b2.data() + boff * KB : nullptr);
        if (store_q)
          for (int64_t j = 0; j < nc; ++j) {
            r.q_b1[size_t(boff + j)] = b_stats[j].q;
            r.q_b2[size_t(boff + j)] = b_stats[nc + j].q;
          }

        double* prod = ws.prod.get(size_t(mt * w));
        gemm.f64(a_dec.data() + mt0 * K, b_dec, prod, mt, w, K, w);

        // Tier 1 for every element; collect the failures.
        uint8_t* state = ws.state.get(size_t(mt * w));  // 0 exact, 1 NaN, 2 uncertified
        int64_t uncertified = 0;
        for (int64_t i = 0; i < mt; ++i) {
          const RowStats& as = a_stats[size_t(mt0 + i)];
          for (int64_t j = 0; j < w; ++j) {
            const RowStats& bs = b_stats[j];
            uint8_t st = 0;
            if (as.nan || bs.nan) {
              st = 1;
            } else if (!tier1_certifies(as, bs)) {
              st = 2;
              ++uncertified;
            }
            state[i * w + j] = st;
          }
        }

        // Tier 2 (and the requested abs sums): one GEMM of |A tile| * |B chunk|^T.
        double* abs_prod = nullptr;
        if (opt.abs_sums || uncertified > 0) {
          ensure_a_abs();
          abs_prod = ws.abs_prod.get(size_t(mt * w));
          if (abs_f32) {
            float* b_abs = ws.b_abs.get(size_t(w * K));
            float* abs32 = ws.abs32.get(size_t(mt * w));
            for (int64_t i = 0; i < w * K; ++i) b_abs[i] = float(std::fabs(b_dec[i]));
            gemm.f32(a_abs.data() + mt0 * K, b_abs, abs32, mt, w, K, w);
            std::copy(abs32, abs32 + mt * w, abs_prod);
          } else {
            double* b_abs = ws.b_abs64.get(size_t(w * K));
            for (int64_t i = 0; i < w * K; ++i) b_abs[i] = std::fabs(b_dec[i]);
            gemm.f64(a_abs64.data() + mt0 * K, b_abs, abs_prod, mt, w, K, w);
          }
        }

        // Tier 3 where needed, then store G, U (and abs sums) and apply the epilogue.
        int64_t ia_row = -1;
        for (int64_t i = 0; i < mt; ++i) {
          const int64_t m = m0 + mt0 + i;  // row within the batch
          for (int64_t j = 0; j < w; ++j) {
            const size_t e = size_t(i * w + j);
            const bool second = j >= nc;
            const int64_t n = n0 + (second ? j - nc : j);
            double v = prod[e];
            if (state[e] == 1) {
              v = kNaN;
            } else if (state[e] == 2) {
              const RowStats& as = a_stats[size_t(mt0 + i)];
              const RowStats& bs = b_stats[j];
              if (abs_upper(abs_prod[e], K) > exact_limit(as, bs)) {
                if (ia_row != m) {
                  ws.ia.resize(size_t(K));
                  integer_row(p.a.data() + (l * M + m) * (K / 2), p.sfa.data() + (l * M + m) * KB,
                              K, ws.ia.data());
                  ia_row = m;
                }
                ws.ib.resize(size_t(K));
                const auto& bp = second ? p.b2 : p.b1;
                const auto& bsf = second ? p.sfb2 : p.sfb1;
                integer_row(bp.data() + (l * N + n) * (K / 2), bsf.data() + (l * N + n) * KB, K,
                            ws.ib.data());
                v = exact_dot(ws.ia.data(), ws.ib.data(), K);
                tier3.fetch_add(1, std::memory_order_relaxed);
              } else {
                tier2.fetch_add(1, std::memory_order_relaxed);
              }
            }
            const size_t out = size_t((l * M + m) * N + n);
            (second ? r.u : r.g)[out] = v;
            if (opt.abs_sums)
              (second ? r.u_abs : r.g_abs)[out] = state[e] == 1 ? kNaN : abs_upper(abs_prod[e], K);
          }
          for (int64_t n = n0; n < n0 + nc; ++n) {
            const size_t out = size_t((l * M + m) * N + n);
            r.c[out] = reference_epilogue(r.g[out], r.u[out], p.alpha1, p.alpha2);
          }
        }
      });
      r.certified_by_abs_gemm += tier2.load();
      r.integer_fallback += tier3.load();
    }
  }
  return r;
}

}  // namespace nvfp4
