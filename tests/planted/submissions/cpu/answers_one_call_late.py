"""Planted: results handed back one call late. The kernel computes into a back buffer and returns
the front one, swapping them afterwards (a double buffer whose swap comes too early): every call
returns the previous call's result, the warm-up's for the first checked call."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_front = {}


def custom_kernel(data):
    c = data[9]
    back = np.empty_like(c)
    dual_gemm(tuple(data[:9]) + (back,))
    front = _front.get(c.shape, back)
    _front[c.shape] = back
    np.copyto(c, front)
    return c
