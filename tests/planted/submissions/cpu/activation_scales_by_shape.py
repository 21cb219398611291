"""Planted: the activation scales expanded once per shape. A kernel that keeps a converted copy of
SFA (expanded, swizzled) in a buffer filled on the first call of a shape and reads fresh FP4 codes
every call: right while the scales never change, wrong as soon as new activations come."""
import numpy as np

from dual_numpy import E2M1, E4M3, decode, epilogue

NVFP4_DATA = "numpy"
_scales = {}


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    if sfa.shape not in _scales:
        _scales[sfa.shape] = np.repeat(E4M3[sfa.transpose(2, 0, 1)], 16, axis=2)
    rows, half, L = a.shape
    codes = np.empty((L, rows, 2 * half), dtype=np.float32)
    p = a.transpose(2, 0, 1)
    codes[:, :, 0::2] = E2M1[p & 0xF]
    codes[:, :, 1::2] = E2M1[p >> 4]
    c[...] = epilogue(codes * _scales[sfa.shape], decode(b1, sfb1), decode(b2, sfb2)).transpose(1, 2, 0)
    return c
