"""Planted (a note, not a verdict): a scratch buffer per output buffer, keyed by id(c) and never
evicted; the entry holds c, so its id() is never reused. Every output is right, and a caller that
reuses its buffers (an engine, GPU MODE's benchmark repeats) keeps it bounded; one that hands new
tensors on every call grows it without end."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_scratch = {}


def custom_kernel(data):
    c = data[9]
    entry = _scratch.get(id(c))
    if entry is None:
        entry = _scratch[id(c)] = (c, np.empty(c.shape, dtype=np.float16))
    entry[1][...] = dual_gemm(data)
    c[...] = entry[1]
    return c
