"""Rehearsal test submission: the first call for each shape takes 1 s more (what a compile or a
graph capture on first use costs); later calls of that shape are fast."""
import time

from _dual import dual_gemm

NVFP4_DATA = "numpy"
_compiled = set()


def custom_kernel(data):
    shape = (data[0].shape, data[1].shape)
    if shape not in _compiled:
        time.sleep(1.0)
        _compiled.add(shape)
    return dual_gemm(data)
