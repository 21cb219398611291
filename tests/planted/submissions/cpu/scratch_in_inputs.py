"""Planted: an input used as scratch. The kernel reads the plain scales and never the permuted ones,
so it keeps a running count in the first byte of sfa_permuted's buffer, a tensor the caller owns;
every output is right."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"


def custom_kernel(data):
    data[6][:1, :1, :1, :1, :1, :1] += 1  # one byte of the caller's sfa_permuted
    return dual_gemm(data)
