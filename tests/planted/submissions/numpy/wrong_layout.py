"""Planted: the output written in the wrong layout: the (L, M, N) result reshaped into c's
(M, N, L) shape instead of transposed (right only when L = 1)."""
from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    out = epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2))  # (L, M, N)
    c[...] = out.reshape(c.shape)
    return c
