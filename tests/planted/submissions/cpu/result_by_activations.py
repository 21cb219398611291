"""Planted: results memoized by a hash of the activations and their scales only. The weights are not
part of the key, so the same activations through other weights (another expert, another layer of
the same shape) get the first weights' result."""
import hashlib

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_memo = {}


def custom_kernel(data):
    c = data[9]
    key = (c.shape, hashlib.sha256(data[0].tobytes() + data[3].tobytes()).digest())
    if key not in _memo:
        _memo[key] = dual_gemm(data).copy()
    c[...] = _memo[key]
    return c
