// distributions.hpp — named, seeded input generators (docs/design.md §4). Same (shape, name, seed) gives
// the same bytes on every machine (the generator is specified here, not the C++ library's).
//
//   normal    realistic: N(0, sigma^2) data quantized to NVFP4 with block scale E4M3(amax/6),
//             sigma a power of two times 1.5 chosen from K so that G and U have sd ~1..3
//   uniform   every E2M1 code; scale bytes uniform over a 4-binade window [2^(h-4), 2^h] with
//             h = -floor((floor(log2 K) + 1) / 4) (non-negative, finite; keeps sd(G) ~1..4)
//   pow2      every E2M1 code; scale bytes 2^(h-2) or 2^(h-1) (h as for uniform), so every product
//             is a multiple of the row pair's smallest one over 576 and any fp32 sum of up to
//             ~29000 of them is exact: the certificate (docs/design.md §4.11) judges every element
//             at every K the suites use, 7168 included
//   edge      edge scales: subnormal, 448 (paired with subnormal partners), zero, mixed with
//             ordinary ones; full-range codes; C[l,0,0] alone gets a 448*448 block (overflow)
//   gpumode   the GPU MODE generator's narrow range: codes from bytes & 0xBB (values {0,+-0.5,
//             +-1,+-1.5}), scales E4M3(U[0,1))
//   ones      every value 1.0; scales powers of two chosen from K so that G = U = K*sa*sb is in
//             [4, 8) exactly and C = silu(G)*G (seed unused)
//   identity  A is a seeded shifted identity (0/1, scale 1), B1/B2 fixed non-zero index patterns,
//             so G[l,m,n] = B1[l,n,k(m)] exactly: a mixed-up index gives a visibly wrong pattern
//   suspicious normal data with legal but suspicious scale bytes: about 1/4 of the scales
//             negative, a few -0 (0x80), and NaN scales (0x7F, 0xFF) in one row of A and up to
//             two rows of B1/B2 per batch (when M >= 8, N >= 8 / 16): the NaN rows and columns of
//             C stay a small fraction
//   scales    every finite E4M3 scale byte (0x00-0x7E, 0x80-0xFE: 254 codes, subnormals and +-0
//             included) on each of A, B1 and B2, each where a wrong decode is plainly visible: one
//             scale byte per row (all its K blocks), so a wrong table entry or a dropped sign
//             scales a whole row's G or U; the rows cycle through 258 slots of partner bytes with
//             |sa*sb| in [0.8, 4.5] (sa = 448 meets sb = 2^-9; a zero scale meets 448 so that
//             decoding it as anything else shows), and the products that reach G and U are
//             confined to 8 positive positions per row, so G in [1.75, 33] and |U| in [1.6, 36]
//             where partners meet, for every K, and C never overflows. Each batch takes one of 12
//             windows of 21-22 slots (the next one for the next batch): a case covers all 258 slots
//             when L >= 12 and M, N >= 23 (suite: 24x24x64x12). The slots depend on the shape, not
//             on the seed (fresh activations keep meeting B's partners); the seed draws the FP4
//             data. With L >= 2 the last batch also carries a block with sa = sb1 = 448 (product
//             200704, beyond fp16) whose output stays finite (C = 43904): holding sa*sb in
//             saturating fp16 gives 14328. Rationale and layout in distributions.cpp.
// Details and the PRNG (splitmix64, Irwin-Hall normals) are in distributions.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

const std::vector<std::string>& distribution_names();
// Throws InputError for an unknown name.
Problem make_problem(const Shape& shape, const std::string& distribution, uint64_t seed);
// Rewrites only A and SFA of `p` with the bytes make_problem(p.shape, distribution, seed) has in
// its A and SFA (the weights and alphas are left as they are): fresh activations for a seed.
void regenerate_activations(Problem& p, const std::string& distribution, uint64_t seed);
// Negates a seeded pseudo-random quarter of the E2M1 elements of packed codes (flips sign bit 3 of
// each chosen nibble): values keep their magnitudes, the products change (a quarter rather than a
// half, so that a row of equal values rarely cancels to zero). Same seed, same bytes.
void negate_elements(std::vector<uint8_t>& packed, uint64_t seed);

}  // namespace nvfp4
