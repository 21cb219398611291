#!/usr/bin/env python3
"""make_golden.py — writes the small golden cases in data/golden/ (see data/README.md).

Each case is a case directory (docs/design.md §1): a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy (uint8,
(L, rows, K/2) and (L, rows, K/16), 2-D when L = 1), plus
  g.npy, u.npy  float64 (L, M, N) [or (M, N)]: A*B1^T and A*B2^T, exact
  c.npy         float16: fp16_rne(silu(G) * U), alpha1 = alpha2 = 1
computed here independently of the C++ library: FP4 and FP8 are decoded by ml_dtypes
(float4_e2m1fn, float8_e4m3fn), the GEMMs run in numpy float64, and every G/U element is
cross-checked against math.fsum of the same exact float64 products (a correctly rounded sum), so
a golden G/U is the exact value (asserted: no case here needs more than 53 bits). NaN scales
must produce NaN exactly in the outputs they touch (asserted from the scale bytes). C is numpy's
float64 silu(G)*U rounded to float16 by numpy's cast (round to nearest even, overflow to inf).

Inputs come from numpy's seeded generator (np.random.default_rng(seed)); the seed is part of each
case's name. Re-running the script rewrites the same bytes.

Usage: tools/make_golden.py [--out data/golden]
"""
import argparse
import math
import os
import shutil
import sys

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---- independent decoding (ml_dtypes) ------------------------------------------------------

def decode_fp4(packed):
    """(..., K/2) uint8, element 2j in the low nibble -> (..., K) float64 via float4_e2m1fn."""
    codes = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)
    return codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def decode_e4m3(scales):
    return scales.view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def dequant(packed, scales):
    return decode_fp4(packed) * np.repeat(decode_e4m3(scales), 16, axis=-1)


def exact_gemm(a, b):
    """(L, M, K) x (L, N, K) -> (L, M, N) float64 A*B^T, asserted exact against math.fsum."""
    g = np.matmul(a, b.transpose(0, 2, 1))
    L, M, N = g.shape
    for l in range(L):
        for m in range(M):
            for n in range(N):
                prods = a[l, m] * b[l, n]  # exact: <= 12 significant bits each
                if np.isnan(prods).any():
                    assert np.isnan(g[l, m, n]), "NaN did not propagate through matmul"
                    continue
                # fsum is correctly rounded; with |terms| multiples of 2^-20 below 2^23 and K small
                # the exact sum fits in 53 bits, so fsum is the exact value (asserted via ints).
                exact_int = sum(int(x) for x in (prods * 2.0**20))
                assert float(exact_int) == exact_int, "exact sum needs more than 53 bits"
                s = math.fsum(prods.tolist())
                assert s * 2.0**20 == exact_int, "fsum is not exact"
                assert g[l, m, n] == s, f"matmul differs from the exact sum at {(l, m, n)}"
    return g


def epilogue(g, u):
    with np.errstate(over="ignore", invalid="ignore"):
        return (g / (1.0 + np.exp(-g)) * u).astype(np.float16)


# ---- cases ---------------------------------------------------------------------------------

def random_codes(rng, L, rows, K):
    return rng.integers(0, 256, size=(L, rows, K // 2), dtype=np.uint8)


def ordinary_scales(rng, L, rows, K):
    # E4M3 bytes 0x28..0x40: 2^-2 .. 2 (non-negative, normal).
    return rng.integers(0x28, 0x41, size=(L, rows, K // 16), dtype=np.uint8)


def case_ragged(rng):
    L, M, N, K = 1, 5, 7, 64
    return (L, M, N, K), {
        "a": random_codes(rng, L, M, K), "b1": random_codes(rng, L, N, K),
        "b2": random_codes(rng, L, N, K), "sfa": ordinary_scales(rng, L, M, K),
        "sfb1": ordinary_scales(rng, L, N, K), "sfb2": ordinary_scales(rng, L, N, K)}


def case_batched(rng):
    L, M, N, K = 2, 3, 6, 96
    return (L, M, N, K), {
        "a": random_codes(rng, L, M, K), "b1": random_codes(rng, L, N, K),
        "b2": random_codes(rng, L, N, K), "sfa": ordinary_scales(rng, L, M, K),
        "sfb1": ordinary_scales(rng, L, N, K), "sfb2": ordinary_scales(rng, L, N, K)}


def case_edge_scales(rng):
    # 448 (0x7E) with 448, the subnormals 2^-9..7*2^-9 (0x01..0x07), zero, -0, a negative scale,
    # the smallest normal 2^-6 (0x08).
    L, M, N, K = 1, 4, 6, 48
    pool = np.array([0x7E, 0x7E, 0x01, 0x02, 0x05, 0x07, 0x00, 0x80, 0xB8, 0x08], dtype=np.uint8)

    def sc(rows):
        return pool[rng.integers(0, len(pool), size=(L, rows, K // 16))]
    return (L, M, N, K), {
        "a": random_codes(rng, L, M, K), "b1": random_codes(rng, L, N, K),
        "b2": random_codes(rng, L, N, K), "sfa": sc(M), "sfb1": sc(N), "sfb2": sc(N)}


def case_nan_scale(rng):
    L, M, N, K = 1, 3, 5, 32
    shape, arrays = (L, M, N, K), {
        "a": random_codes(rng, L, M, K), "b1": random_codes(rng, L, N, K),
        "b2": random_codes(rng, L, N, K), "sfa": ordinary_scales(rng, L, M, K),
        "sfb1": ordinary_scales(rng, L, N, K), "sfb2": ordinary_scales(rng, L, N, K)}
    arrays["sfa"][0, 1, 1] = 0x7F       # A row 1: NaN (over all-zero codes: 0 * NaN is NaN)
    arrays["a"][0, 1, 8:16] = 0x00
    arrays["sfb2"][0, 3, 0] = 0xFF      # B2 row 3: the negative-signed NaN byte
    return shape, arrays


def case_overflow(rng):
    # Scales 448 and codes +-6/+-4: |G|, |U| ~ 1e8, so silu(G)*U overflows fp16 to +-inf with
    # the sign of the product (and G < 0 gives silu ~ -0: signed zeros).
    L, M, N, K = 1, 2, 4, 32
    mags = np.array([0x7, 0x6, 0xF, 0xE], dtype=np.uint8)

    def codes(rows):
        lo = mags[rng.integers(0, 4, size=(L, rows, K // 2))]
        hi = mags[rng.integers(0, 4, size=(L, rows, K // 2))]
        return (lo | (hi << 4)).astype(np.uint8)

    def sc(rows):
        return np.full((L, rows, K // 16), 0x7E, dtype=np.uint8)
    return (L, M, N, K), {"a": codes(M), "b1": codes(N), "b2": codes(N), "sfa": sc(M),
                          "sfb1": sc(N), "sfb2": sc(N)}


def case_larger(rng):
    # Smaller scales (E4M3 0x18..0x30: 2^-4 .. 0.5) keep |silu(G)*U| mostly inside fp16's range.
    L, M, N, K = 1, 9, 11, 512

    def sc(rows):
        return rng.integers(0x18, 0x31, size=(L, rows, K // 16), dtype=np.uint8)
    return (L, M, N, K), {
        "a": random_codes(rng, L, M, K), "b1": random_codes(rng, L, N, K),
        "b2": random_codes(rng, L, N, K), "sfa": sc(M), "sfb1": sc(N), "sfb2": sc(N)}


CASES = [
    ("ragged_5x7x64_seed1", case_ragged, 1),
    ("batched_3x6x96x2_seed2", case_batched, 2),
    ("edge_scales_4x6x48_seed3", case_edge_scales, 3),
    ("nan_scale_3x5x32_seed4", case_nan_scale, 4),
    ("overflow_2x4x32_seed5", case_overflow, 5),
    ("ragged_9x11x512_seed6", case_larger, 6),
]


def nan_mask(sfa, sfb):
    """(L, M, N) bool: the output touches a NaN scale of its A row or its B row."""
    a_nan = ((sfa & 0x7F) == 0x7F).any(axis=-1)  # (L, M)
    b_nan = ((sfb & 0x7F) == 0x7F).any(axis=-1)  # (L, N)
    return a_nan[:, :, None] | b_nan[:, None, :]


def write_case(out_dir, name, make, seed):
    rng = np.random.default_rng(seed)
    (L, M, N, K), arr = make(rng)
    a = dequant(arr["a"], arr["sfa"])
    b1 = dequant(arr["b1"], arr["sfb1"])
    b2 = dequant(arr["b2"], arr["sfb2"])
    g = exact_gemm(a, b1)
    u = exact_gemm(a, b2)
    assert (np.isnan(g) == nan_mask(arr["sfa"], arr["sfb1"])).all()
    assert (np.isnan(u) == nan_mask(arr["sfa"], arr["sfb2"])).all()
    c = epilogue(g, u)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    squeeze = (lambda x: x[0]) if L == 1 else (lambda x: x)
    for key in ("a", "b1", "b2", "sfa", "sfb1", "sfb2"):
        np.save(os.path.join(d, key + ".npy"), np.ascontiguousarray(squeeze(arr[key])))
    np.save(os.path.join(d, "g.npy"), squeeze(g))
    np.save(os.path.join(d, "u.npy"), squeeze(u))
    np.save(os.path.join(d, "c.npy"), squeeze(c))
    n_inf = int(np.isinf(c.astype(np.float32)).sum())
    n_nan = int(np.isnan(c.astype(np.float32)).sum())
    print(f"{name}: L={L} M={M} N={N} K={K}, C has {c.size} elements ({n_inf} inf, {n_nan} NaN)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "golden"))
    args = ap.parse_args()
    print(f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")
    os.makedirs(args.out, exist_ok=True)
    for name, make, seed in CASES:
        write_case(args.out, name, make, seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
