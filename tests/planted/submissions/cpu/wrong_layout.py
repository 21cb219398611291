"""Planted: the output in the wrong layout: the result computed column-major, as (L, N, M), and its
memory read back as (L, M, N) (a row/column-major mixup), then written into c."""
import numpy as np

from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    out = epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2))  # (L, M, N)
    L, M, N = out.shape
    mixed = np.ascontiguousarray(out.transpose(0, 2, 1)).reshape(L, M, N)
    c[...] = mixed.transpose(1, 2, 0)
    return c
