"""Planted: scratch memory taken from the caller. The first output array it is handed becomes the
kernel's staging buffer for every later call: the result is computed there and then copied into
the call's own c. Every output is right when it is read at once, but the first c, which the caller
owns (and may still hold a result in), is overwritten by every later call."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_staging = {}


def custom_kernel(data):
    c = data[9]
    stage = _staging.setdefault(c.shape, c)
    dual_gemm(tuple(data[:9]) + (stage,))
    if stage is not c:
        np.copyto(c, stage)
    return c
