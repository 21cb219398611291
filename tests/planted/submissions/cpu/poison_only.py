"""Planted: computes only when the output still holds the harness's poison pattern (0x7D5A), as a
"skip if already written" shortcut would; otherwise returns the output as it found it."""
import numpy as np

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"


def custom_kernel(data):
    c = data[9]
    if np.any(c.view(np.uint16) == 0x7D5A):
        return dual_gemm(data)
    return c
