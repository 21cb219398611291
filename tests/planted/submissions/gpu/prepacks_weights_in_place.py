"""Planted: weights repacked in place, keyed by address. The first call that hands it a weight
tensor rewrites B1 and B2 in their own buffers into the nibble order it prefers (high nibble first);
every output is right, and the caller's weights are no longer what it handed over."""
import torch

from dual_torch import dual_gemm

_repacked = set()


def _swapped(w):
    b = w.view(torch.uint8)
    return ((b & 0x0F) << 4) | (b >> 4)


def custom_kernel(data):
    b1, b2 = data[1], data[2]
    for w in (b1, b2):
        if w.data_ptr() not in _repacked:
            w.view(torch.uint8).copy_(_swapped(w))
            _repacked.add(w.data_ptr())
    plain = [_swapped(w).view(w.dtype) for w in (b1, b2)]
    return dual_gemm((data[0], plain[0], plain[1]) + tuple(data[3:]))
