"""Rehearsal test submission: correct except two elements of every output: (1, 2, 0) is off by 1
and (3, 0, 0) is NaN. The check names 2 mismatches, the first at (1, 2, 0)."""
import numpy as np

from _dual import dual_gemm

NVFP4_DATA = "numpy"


def custom_kernel(data):
    c = dual_gemm(data)
    c[1, 2, 0] += np.float16(1)
    c[3, 0, 0] = np.nan
    return c
