"""Planted: binds the first call's arrays (a numpy stand-in for a CUDA graph captured over the
first call's tensors, cached by shape): every later call of that shape computes on the arrays of
the first `data` it saw. Passes while an evaluator refills the same arrays in place; wrong as soon
as a call brings new arrays."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_bound = {}


def custom_kernel(data):
    key = tuple(x.shape for x in data)
    first = _bound.setdefault(key, data)
    return dual_gemm(first)
