"""Correct, but only for the K it was first called with: a kernel specialized to its tuned shapes
(GPU MODE calls only the task's shapes) raises for any other. Its checked and later calls on the
trial's shape are right, so it passes; the later call of another shape is noted, not judged."""
from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_tuned = []


def custom_kernel(data):
    k = 2 * data[0].shape[1]
    if not _tuned:
        _tuned.append(k)
    if k not in _tuned:
        raise ValueError("no kernel tuned for K=%d" % k)
    return dual_gemm(data)
