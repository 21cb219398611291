"""The correct computation the planted numpy submissions share (imported from their folder, which
the driver puts on sys.path): exact decode to float32, float32 GEMMs, float32 silu(g) * u, one
rounding to float16. Arrays as the driver hands them with NVFP4_DATA = "numpy" (batch last)."""
import numpy as np

_MAG = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)
E2M1 = np.concatenate([_MAG, -_MAG])
_B = np.arange(256)
_EXP, _MAN = (_B >> 3) & 0xF, (_B & 7).astype(np.float64)
_VAL = np.where(_EXP == 0, _MAN / 8 * 2.0 ** -6, (1 + _MAN / 8) * 2.0 ** (_EXP - 7))
_VAL = np.where((_B & 0x7F) == 0x7F, np.nan, _VAL)  # E4M3FN NaN: 0x7F and 0xFF
E4M3 = np.where(_B & 0x80, -_VAL, _VAL).astype(np.float32)


def decode(packed, scales):
    """(rows, K/2, L) packed FP4 and (rows, K/16, L) scales -> (L, rows, K) float32."""
    rows, half, L = packed.shape
    values = np.empty((L, rows, 2 * half), dtype=np.float32)
    p = packed.transpose(2, 0, 1)
    values[:, :, 0::2] = E2M1[p & 0xF]
    values[:, :, 1::2] = E2M1[p >> 4]
    return values * np.repeat(E4M3[scales.transpose(2, 0, 1)], 16, axis=2)


def epilogue(A, B1, B2, alpha1=1.0, alpha2=1.0):
    """(L, M, K), (L, N, K) x2 float32 -> (L, M, N) float16 = silu(alpha1 G) * (alpha2 U)."""
    g = np.float32(alpha1) * (A @ B1.transpose(0, 2, 1))
    u = np.float32(alpha2) * (A @ B2.transpose(0, 2, 1))
    with np.errstate(over="ignore", invalid="ignore"):
        return (g / (np.float32(1) + np.exp(-g)) * u).astype(np.float16)


def dual_gemm(data):
    """custom_kernel's whole work on a `data` tuple: the output (M, N, L) float16 written into c."""
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data[:10]
    c[...] = epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2)).transpose(1, 2, 0)
    return c
