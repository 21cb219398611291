"""nvfp4_dual — the exact reference and the checker of the NVFP4 SwiGLU dual GEMM, for test suites.

    C[l] = silu(alpha1 · A[l]·B1[l]ᵀ) ∘ (alpha2 · A[l]·B2[l]ᵀ)     FP4 E2M1 inputs, E4M3 scales per 16, fp16 out

Arrays are numpy arrays or anything numpy reads through DLPack or ``__array__`` (torch tensors,
on any device, also float4_e2m1fn_x2 / float8_e4m3fn ones, whose bytes are taken):

    a            (M, K/2) or (L, M, K/2) uint8, packed E2M1, element 2j in the low nibble of byte j
    b1, b2       (N, K/2) or (L, N, K/2)
    sfa          (M, K/16) or (L, M, K/16) uint8 E4M3FN scales, plain layout
    sfb1, sfb2   (N, K/16) or (L, N, K/16)
    c            (M, N) or (L, M, N) float16

With ``batch_last=True`` 3-D arrays are (rows, cols, L), GPU MODE's order (its tensors can be passed
as they are). Typical use in pytest:

    import nvfp4_dual as nd
    a, b1, b2, sfa, sfb1, sfb2 = nd.generate("256x512x1024", "normal", seed=1)
    c = my_kernel(a, b1, b2, sfa, sfb1, sfb2)
    nd.assert_dual_gemm_close(c, a, b1, b2, sfa, sfb1, sfb2)     # AssertionError with the report

Functions: reference, check, check_case_dir, assert_dual_gemm_close, quantize, dequantize, generate,
distributions, and the scale layouts to_blocked, from_blocked, to_cute_permuted, from_cute_permuted,
compare_scale_layouts. Bad input raises InputError (a ValueError) naming the argument.
"""
from ._native import InputError, __version__
from ._api import (Inputs, Report, assert_dual_gemm_close, check, check_case_dir, dequantize, distributions,
                   generate, quantize, reference)
from ._layouts import compare_scale_layouts, from_blocked, from_cute_permuted, to_blocked, to_cute_permuted

__all__ = [
    "InputError", "Inputs", "Report", "assert_dual_gemm_close", "check", "check_case_dir", "compare_scale_layouts",
    "dequantize", "distributions", "from_blocked", "from_cute_permuted", "generate", "quantize", "reference",
    "to_blocked", "to_cute_permuted", "__version__",
]
