"""Rehearsal test submission: correct on its first call, then raises (the evaluator's worker dies with it)."""
from _dual import dual_gemm

NVFP4_DATA = "numpy"
_calls = [0]


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] > 1:
        raise RuntimeError("planted failure on call %d" % _calls[0])
    return dual_gemm(data)
