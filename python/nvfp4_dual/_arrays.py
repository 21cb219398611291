"""Bringing caller arrays into the library's order: numpy arrays, and anything numpy can read
through DLPack or ``__array__`` (torch tensors among them; torch is never imported here).

The library is batch-first and C-contiguous (docs/design.md §1): A (L, M, K/2), B1/B2 (L, N, K/2),
SFA (L, M, K/16), SFB1/SFB2 (L, N, K/16) uint8; C (L, M, N) fp16. A 2-D array means L = 1; with
``batch_last`` a 3-D array is (rows, cols, L), as GPU MODE passes them. Bringing GPU MODE's views
to batch-first costs no copy: their memory is batch-first already.
"""
import sys

import numpy as np

from ._native import InputError


def as_numpy(x):
    """`x` as a numpy array, without a copy where the producer allows it."""
    if isinstance(x, np.ndarray):
        return x
    torch = sys.modules.get("torch")  # only when the caller has imported it
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        # float4_e2m1fn_x2 and float8_e4m3fn have no numpy dtype: hand over their bytes.
        if x.element_size() == 1 and x.dtype not in (torch.uint8, torch.int8, torch.bool):
            x = x.view(torch.uint8)
        return np.from_dlpack(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    return np.asarray(x)


# The one-byte dtypes whose bytes are taken as they are: raw bytes, and the float type that means
# what the argument holds (torch's packed E2M1 pairs; E4M3FN, as torch and ml_dtypes name it).
# Any other one-byte float (float8_e5m2, float8_e4m3fnuz, float8_e8m0fnu, ml_dtypes' unpacked
# float4_e2m1fn, ...) holds other values in the same bytes: refused, never reinterpreted.
RAW_BYTES = ("uint8", "int8")
PACKED_FP4 = RAW_BYTES + ("float4_e2m1fn_x2",)
E4M3_SCALES = RAW_BYTES + ("float8_e4m3fn",)


def torch_dtype_name(x):
    """A torch tensor's dtype name without the module ('float8_e4m3fn'); None for anything else (its
    bytes reach numpy with their dtype: numpy's own or ml_dtypes')."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return str(x.dtype).replace("torch.", "")
    return None


def as_bytes(x, name, scales):
    """Raw bytes of packed E2M1 (`scales` False) or of E4M3FN scales (`scales` True), as uint8."""
    kind = torch_dtype_name(x)  # torch's one-byte floats reach numpy as plain bytes: name them first
    a = as_numpy(x)
    kind = kind or a.dtype.name
    if kind not in (E4M3_SCALES if scales else PACKED_FP4):
        what = "E4M3FN scale bytes: uint8 or float8_e4m3fn" if scales else \
            "packed E2M1 bytes, two per byte (element 2j in the low nibble): uint8 or float4_e2m1fn_x2"
        why = ""
        if kind.startswith("float8") or kind.startswith("float4") or kind.startswith("float6"):
            why = f" ({kind} stores other values in its bytes; they would be decoded wrongly)"
            if kind == "float4_e2m1fn":
                why = " (one E2M1 value per byte: pack two per byte first)"
        elif scales and a.dtype.kind == "f":
            why = (" (this array holds the scales' values: convert them to E4M3 and pass its bytes, e.g. "
                   "x.astype(ml_dtypes.float8_e4m3fn) or torch's t.to(torch.float8_e4m3fn); the bytes of a float "
                   "array are not E4M3 codes)")
        elif not scales and a.dtype.kind == "f":
            why = " (this array holds decoded values: nvfp4_dual.quantize gives the packed bytes and the scales)"
        elif not scales and a.dtype.kind in "ui":
            why = (" (pass the array's bytes, x.view(np.uint8): each wider element holds several packed bytes, and "
                   "x.astype(np.uint8) would keep only the low byte of each)")
        raise InputError(f"{name}: dtype {kind}, expected {what}{why}")
    if a.dtype.itemsize != 1:
        raise InputError(f"{name}: dtype {a.dtype}, expected one-byte elements")
    return a.view(np.uint8)


def as_fp16_bits(x, name="c"):
    """An fp16 output as its uint16 bit patterns (float16 or uint16 accepted)."""
    a = as_numpy(x)
    if a.dtype.kind in "fu" and a.dtype.itemsize == 2 and not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))  # the same values in this machine's byte order
    if a.dtype == np.float16:
        return a.view(np.uint16)
    if a.dtype == np.uint16:
        return a
    kind = torch_dtype_name(x) or a.dtype.name
    raise InputError(f"{name}: dtype {kind}, expected float16 (the kernel's fp16 output): convert with "
                     f"x.astype(np.float16) (torch: t.half())")


def batch_first(a, name, batch_last):
    """(rows, cols) -> (1, rows, cols); (L, rows, cols) kept, or (rows, cols, L) moved; contiguous."""
    if a.ndim == 2:
        a = a[None]
    elif a.ndim == 3:
        if batch_last:
            a = np.moveaxis(a, 2, 0)
    else:
        order = "(rows, cols, L)" if batch_last else "(L, rows, cols)"
        raise InputError(f"{name}: shape {a.shape} has {a.ndim} dimension(s); expected (rows, cols) or {order}")
    if 0 in a.shape:
        raise InputError(f"{name}: shape {a.shape} has an empty dimension")
    return np.ascontiguousarray(a)


def to_caller_order(x, two_d, batch_last):
    """(L, M, N) -> the order the caller's inputs had: (M, N) when they were 2-D, (M, N, L) batch-last."""
    if two_d:
        return x[0]
    return np.moveaxis(x, 0, 2) if batch_last else x


def _blocked_bytes(rows, K):
    """Bytes of one (rows, K/16) scale matrix in the 128x4 blocked layout (docs/design.md §1.4)."""
    return -(-rows // 128) * -(-(K // 16) // 4) * 512


def _shapes_agree(shapes, batch_last):
    """Whether six raw shapes (a, b1, b2, sfa, sfb1, sfb2) describe one problem when their 3-D
    arrays are read (rows, cols, L) (`batch_last`) or (L, rows, cols)."""
    if any(len(s) not in (2, 3) for s in shapes):
        return False
    lrc = [(1,) + tuple(s) if len(s) == 2 else (s[2], s[0], s[1]) if batch_last else tuple(s) for s in shapes]
    (La, M, ca), (L1, N, c1), (L2, N2, c2), (Ls, Ms, cs), (Ls1, Ns1, cs1), (Ls2, Ns2, cs2) = lrc
    K = 2 * ca
    return (K % 16 == 0 and La == L1 == L2 == Ls == Ls1 == Ls2 and c1 == c2 == ca and N2 == N and Ms == M
            and Ns1 == Ns2 == N and cs == cs1 == cs2 == K // 16)


def problem_arrays(a, b1, b2, sfa, sfb1, sfb2, batch_last):
    """The six inputs batch-first and checked against each other (the checks of a case directory,
    naming the argument that disagrees, and what the arguments most likely are when it can tell:
    blocked or permuted scales, unpacked FP4, the other batch order). Returns (arrays, (L, M, N, K), two_d)."""
    names = ("a", "b1", "b2", "sfa", "sfb1", "sfb2")
    raw = [as_bytes(x, n, n.startswith("sf")) for x, n in zip((a, b1, b2, sfa, sfb1, sfb2), names)]
    two_d = raw[0].ndim == 2
    A, B1, B2 = (batch_first(x, n, batch_last) for x, n in zip(raw[:3], names[:3]))
    L, M, K = A.shape[0], A.shape[1], 2 * A.shape[2]
    N = B1.shape[1]
    for x, n, rows in zip(raw[3:], names[3:], (M, N, N)):
        # GPU MODE's scale layouts, as to_blocked / to_cute_permuted give them: named, with the way back.
        if x.ndim == 6 and x.shape[:2] == (32, 4) and x.shape[3] == 4:
            raise InputError(f"{n}: shape {x.shape} is GPU MODE's CuTe-permuted view (32, 4, Rt, 4, Ct, L) of the "
                             f"128x4 blocked layout: pass the plain layout, nvfp4_dual.from_cute_permuted({n}, "
                             f"{rows}, {K // 16})")
        if x.ndim == 1 and K % 16 == 0 and x.size == L * _blocked_bytes(rows, K):
            # from_blocked takes one matrix's buffer (1-D) or (L, bytes per matrix): reshape L > 1 first.
            flat = f"{n}.reshape({L}, -1)" if L > 1 else n
            times = f" times L = {L}" if L > 1 else ""
            raise InputError(f"{n}: shape {x.shape} has 1 dimension(s); its {x.size} bytes are the 128x4 blocked "
                             f"layout's for (rows, K/16) = ({rows}, {K // 16}){times}: pass the plain layout, "
                             f"nvfp4_dual.from_blocked({flat}, {rows}, {K // 16})")
    SA, SB1, SB2 = (batch_first(x, n, batch_last) for x, n in zip(raw[3:], names[3:]))
    # Arrays that disagree in this order but agree in the other: every refusal below says so.
    shapes = [x.shape for x in raw]
    order = ""
    if any(x.ndim == 3 for x in raw) and not _shapes_agree(shapes, batch_last) and _shapes_agree(shapes, not batch_last):
        order = ("; the six arrays agree read batch-first, (L, rows, cols): drop batch_last=True" if batch_last else
                 "; the six arrays agree read as (rows, cols, L), GPU MODE's order: pass batch_last=True")

    def refuse(msg):
        raise InputError(msg + order)

    ks = f"K = {K} (from a, {A.shape[2]} bytes per row)"
    if K % 16:
        hint = ""
        if raw[0].ndim == 3 and not batch_last:
            hint = ("; read batch-first as (L, rows, cols): for GPU MODE's (rows, cols, L) order pass "
                    "batch_last=True")
        raise InputError(f"a: {ks} is not a multiple of 16 (one E4M3 scale per 16 elements){hint or order}")

    def blocked_hint(x, rows):
        # As many bytes as the 128 x 4 blocked layout of its matrix: most likely saved in it.
        blocked = L * _blocked_bytes(rows, K)
        return (f"; its {blocked} bytes are the 128x4 blocked layout's: pass the plain (rows, K/16) layout "
                f"(nvfp4_dual.from_blocked converts)") if x.size == blocked else ""

    for x, n, rows in zip((B1, B2, SA, SB1, SB2), names[1:], (N, N, M, N, N)):
        if x.shape[0] != L:
            blocked = blocked_hint(x, rows) if n.startswith("sf") else ""
            where = (" (batch-last order)" if batch_last else " (batch-first order)" if order or blocked else
                     " (batch-first order; pass batch_last=True for (rows, cols, L) arrays)")
            refuse(f"{n}: L = {x.shape[0]} but a has L = {L}{where}{blocked}")
    # Unpacked FP4 (one code per byte, as ml_dtypes' float4_e2m1fn viewed as uint8): twice the bytes
    # per row that the scales imply, and every byte below 16. Named before the scales are blamed for
    # K. The same shapes are packed bytes with one scale per 32 elements (MX-style), which the data
    # tells apart (a byte with its high nibble set is packed: the scales are refused below); at most
    # the first 16 Mi bytes are looked at, as the CLI does (reference/case_dir.cpp).
    scales_agree = SA.shape[2] == SB1.shape[2] == SB2.shape[2]  # else the scales are what is wrong
    for x, sf, n in ((A, SA, "a"), (B1, SB1, "b1"), (B2, SB2, "b2")):
        if (scales_agree and x.shape[1] == sf.shape[1] and x.shape[2] == 16 * sf.shape[2]
                and not (x.reshape(-1)[:1 << 24] >= 16).any()):
            refuse(f"{n}: holds {x.shape[2]} bytes per row, twice the {8 * sf.shape[2]} that its {sf.shape[2]} "
                   f"scales per row imply (K = {16 * sf.shape[2]}): one FP4 code per byte? pack two codes per byte "
                   f"(element 2j in the low nibble)")
    for x, n in ((B1, "b1"), (B2, "b2")):
        if x.shape[2] != A.shape[2]:
            refuse(f"{n}: {x.shape[2]} bytes per row (K = {2 * x.shape[2]}), but {ks}")
    if B2.shape[1] != N:
        refuse(f"b2: N = {B2.shape[1]} rows, but b1 has N = {N}")
    for x, n, rows, src in ((SA, "sfa", M, "a"), (SB1, "sfb1", N, "b1"), (SB2, "sfb2", N, "b1")):
        hint = blocked_hint(x, rows)
        if x.shape[1] != rows:
            refuse(f"{n}: {x.shape[1]} rows, but {src} has {rows}{hint}")
        if x.shape[2] != K // 16:
            # The same words as the CLI's (reference/case_dir.cpp check_sf).
            per_32 = ("; one scale per 32 elements? NVFP4 has one E4M3 scale per 16 (MX-style scales, one per 32, "
                      "are not NVFP4)") if 2 * x.shape[2] == K // 16 else ""
            bytes_of = ("4 bytes per scale: the bytes of a float32 array? " if x.shape[2] == 4 * (K // 16) else
                        "2 bytes per scale: the bytes of a float16 or bfloat16 array? " if x.shape[2] == 2 * (K // 16)
                        else "")
            if bytes_of:
                bytes_of = (f"; {bytes_of}pass the scales' E4M3FN bytes (ml_dtypes: "
                            f"x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8); torch: t.to(torch.float8_e4m3fn))")
            refuse(f"{n}: {x.shape[2]} scales per row, but {ks} needs K/16 = {K // 16}{hint}{per_32}{bytes_of}")
    return (A, B1, B2, SA, SB1, SB2), (L, M, N, K), two_d


def output_bits(c, shape, batch_last):
    """The output as (L, M, N) uint16, checked against the problem's shape."""
    L, M, N, _ = shape
    bits = as_fp16_bits(c)
    # With L = 1 the three orders hold the same values: (M, N), (1, M, N) and (M, N, 1) all fit.
    ok = ((L == 1 and bits.shape in ((M, N), (1, M, N), (M, N, 1)))
          or bits.shape == ((M, N, L) if batch_last else (L, M, N)))
    if not ok:
        want = (f"{(1, M, N)}, {(M, N, 1)} or {(M, N)}" if L == 1 else
                f"{(M, N, L)} (batch-last)" if batch_last else f"{(L, M, N)}")
        raise InputError(f"c: shape {bits.shape} does not match the problem: expected {want}")
    if L == 1:
        return np.ascontiguousarray(bits.reshape(1, M, N))
    return batch_first(bits, "c", batch_last)
