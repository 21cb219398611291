"""Rehearsal test submission: correct on its first call, then raises an ordinary exception (the
evaluator's pool worker hands it back to eval.py, which dies with it: FAIL)."""
from _dual import dual_gemm

NVFP4_DATA = "numpy"
_calls = [0]


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] > 1:
        raise RuntimeError("planted failure on call %d" % _calls[0])
    return dual_gemm(data)
