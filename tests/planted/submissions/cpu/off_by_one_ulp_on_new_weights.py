"""Planted: a small error that only the first call with new weights makes: a table the kernel
builds lazily from the weights is one fp16 ulp off on its first use, so one output element of
that call is off by one ulp; every other call is exact. Only a call with new weights fails, yet
nothing is cached: the failure says so only by its size."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_seen = set()


def custom_kernel(data):
    c = data[9]
    dual_gemm(data)
    key = data[1].tobytes()
    if key not in _seen:
        _seen.add(key)
        if len(_seen) > 1:  # not the warm-up's weights
            at = tuple(np.argwhere(np.isfinite(c) & (c != 0))[0])
            c[at] = (np.array([c[at]], dtype=np.float16).view(np.uint16) + np.uint16(1)).view(np.float16)[0]
    return c
