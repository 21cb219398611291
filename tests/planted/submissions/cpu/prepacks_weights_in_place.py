"""Planted: weights repacked in place. On the first call that hands it a weight array, the kernel
rewrites B1 and B2 in their own buffers into the nibble order it prefers (high nibble first) and
remembers the arrays it has repacked; every output is right. The caller's weights are no longer
what it handed over: another layer reading them, or a caller refilling them in place, gets garbage."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_repacked = set()


def _swap_nibbles(packed):
    packed[...] = ((packed & 0x0F) << 4) | (packed >> 4)


def custom_kernel(data):
    a, b1, b2 = data[:3]
    for w in (b1, b2):
        key = w.__array_interface__["data"][0]
        if key not in _repacked:
            _swap_nibbles(w)
            _repacked.add(key)
    # The kernel's own format, undone only for the shared decoder below.
    plain = [np.ascontiguousarray(((w & 0x0F) << 4) | (w >> 4)) for w in (b1, b2)]
    return dual_gemm((a, plain[0], plain[1]) + tuple(data[3:]))
