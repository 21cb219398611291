"""Planted: decoded weights cached by shape. B1 and B2 are decoded on the first call of a shape and
reused for every later one: right while the weights never change, wrong for new weights."""
from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"
_weights = {}


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    key = (b1.shape, b2.shape)
    if key not in _weights:
        _weights[key] = (decode(b1, sfb1), decode(b2, sfb2))
    B1, B2 = _weights[key]
    c[...] = epilogue(decode(a, sfa), B1, B2).transpose(1, 2, 0)
    return c
