"""Planted: the global scales read once. NVFP4_ALPHAS = True, but alpha1 and alpha2 are taken from
the first call's data and kept (an init that folds them into precomputed constants): right while the
alphas never change, wrong for the calls that bring new ones with new weights."""
from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"
NVFP4_ALPHAS = True
_alphas = []


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c, alpha1, alpha2 = data
    if not _alphas:
        _alphas.extend([float(alpha1[0]), float(alpha2[0])])
    c[...] = epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2), *_alphas).transpose(1, 2, 0)
    return c
