"""Planted: an autotuner that settles late. For its first six calls (the warm-up and the checked
calls of a default trial) it runs the plain variant; from the seventh on it keeps the "fastest"
one, a K-blocked variant that drops the last partial block of 256 (K % 256 != 0 loses terms)."""
import numpy as np

from dual_numpy import decode, dual_gemm

NVFP4_DATA = "numpy"
_calls = [0]


def _blocked(data):
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    A, W1, W2 = decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2)
    K = A.shape[2]
    g = np.zeros(A.shape[:2] + (W1.shape[1],), np.float32)
    u = np.zeros_like(g)
    for k0 in range(0, K - 255, 256):
        g += A[:, :, k0:k0 + 256] @ W1[:, :, k0:k0 + 256].transpose(0, 2, 1)
        u += A[:, :, k0:k0 + 256] @ W2[:, :, k0:k0 + 256].transpose(0, 2, 1)
    return g, u


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] <= 6:
        return dual_gemm(data)
    c = data[9]
    c[...] = epilogue_from(*_blocked(data))
    return c


def epilogue_from(g, u):
    with np.errstate(over="ignore", invalid="ignore"):
        return (g / (np.float32(1) + np.exp(-g)) * u).astype(np.float16).transpose(1, 2, 0)
