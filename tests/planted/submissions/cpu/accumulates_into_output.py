"""Planted: the output accumulated into. The kernel adds its result to c, as a split-K reduction
into a zero-initialised buffer would, but nothing zeroes c: whatever c held before the call is part
of every output."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"


def custom_kernel(data):
    c = data[9]
    result = dual_gemm(tuple(data[:9]) + (c.copy(),))
    c += result
    return c
