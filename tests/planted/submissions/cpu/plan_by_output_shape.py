"""Planted: a plan cached by the output's shape. The first call of an output shape (M, N, L) fixes
the plan, including the K extent its main loop runs over; a later problem with the same output
shape and a longer K is computed over the first K only (as a GEMM plan keyed by (M, N) would)."""
from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"
_plans = {}


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    c = data[9]
    k = _plans.setdefault(c.shape, 2 * a.shape[1])  # K of the first problem of this output shape
    A, W1, W2 = decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2)
    c[...] = epilogue(A[:, :, :k], W1[:, :, :k], W2[:, :, :k]).transpose(1, 2, 0)
    return c
