"""Planted: the result cached by array identity, id(a): a second call with the same array object
returns the first result, whatever the array now holds."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_results = {}


def custom_kernel(data):
    key = id(data[0])
    if key not in _results:
        _results[key] = dual_gemm(data).copy()
    c = data[9]
    c[...] = _results[key]
    return c
