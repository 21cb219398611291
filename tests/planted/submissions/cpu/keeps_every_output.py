"""Planted: every output kept (a copy appended to a list that is never cleared, as a debugging
history or a "keep the results for later" left in). Every output is right; the memory it holds
grows by one output per call, until a caller that keeps calling runs out."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_history = []


def custom_kernel(data):
    c = dual_gemm(data)
    _history.append(c.copy())
    return c
