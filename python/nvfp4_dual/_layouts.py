"""E4M3 scale layouts: plain <-> 128x4 blocked, and the CuTe permuted view GPU MODE passes.

plain     (rows, cols) or (L, rows, cols) bytes, C order; cols = K/16 (one scale per 16 elements).
blocked   the 128x4 tiled layout of cuBLASLt's block-scaled GEMMs (docs/design.md §1): per batch,
          the matrix zero-padded to Rt = ceil(rows/128) row tiles and Ct = ceil(cols/4) column
          tiles of 512 bytes; byte offset of (r, c, l) =
              l·Rt·Ct·512 + (r//128)·Ct·512 + (c//4)·512 + (r%32)·16 + ((r%128)//32)·4 + c%4.
permuted  GPU MODE's nvfp4_dual_gemm (reference.py, generate_input: sfa_permuted etc.) hands CuTe
          kernels a 6-D view of shape (32, 4, Rt, 4, Ct, L) whose element
              [r%32, (r%128)//32, r//128, c%4, c//4, l] = plain[l, r, c];
          its memory is exactly the blocked layout above (strides 16, 4, Ct·512, 1, 512, Rt·Ct·512
          bytes), so it is the blocked buffer seen through a reshape and a transpose. Its padding
          bytes are not initialized there; from_cute_permuted ignores them.
"""
import numpy as np

from . import _native
from ._arrays import InputError, as_bytes, batch_first


def _cdiv(a, b):
    return -(-a // b)


def to_blocked(scales, batch_last=False):
    """plain -> blocked. (rows, cols) gives the 1-D blocked buffer (Rt·Ct·512 bytes);
    (L, rows, cols) (or (rows, cols, L) with batch_last) gives (L, Rt·Ct·512)."""
    raw = as_bytes(scales, "scales", True)
    plain = batch_first(raw, "scales", batch_last)
    L, rows, cols = plain.shape
    out = _native.to_blocked(plain, L, rows, cols)
    return out[0] if raw.ndim == 2 else out


def from_blocked(blocked, rows, cols):
    """blocked -> plain: a 1-D buffer gives (rows, cols); (L, Rt·Ct·512) gives (L, rows, cols).
    Padding bytes are ignored (compare_scale_layouts checks them)."""
    b = np.ascontiguousarray(as_bytes(blocked, "blocked", True))
    per = _cdiv(rows, 128) * 128 * _cdiv(cols, 4) * 4
    L = 1 if b.ndim == 1 else b.shape[0]
    if b.ndim not in (1, 2) or b.size != L * per:
        raise InputError(f"blocked: shape {b.shape}, expected ({per},) or (L, {per}) for {rows} x {cols} scales")
    out = _native.from_blocked(b, L, rows, cols)
    return out[0] if b.ndim == 1 else out


def compare_scale_layouts(plain, blocked, batch_last=False):
    """None when `blocked` (as from to_blocked) encodes `plain` with zero padding, else the first
    disagreement as one line."""
    p = batch_first(as_bytes(plain, "plain", True), "plain", batch_last)
    L, rows, cols = p.shape
    b = np.ascontiguousarray(as_bytes(blocked, "blocked", True))
    msg = _native.compare_scale_layouts(p, b, L, rows, cols)
    return msg or None


def to_cute_permuted(scales, batch_last=False):
    """plain (rows, cols) / (L, rows, cols) (or (rows, cols, L) with batch_last) -> GPU MODE's
    permuted view, shape (32, 4, Rt, 4, Ct, L), over a fresh blocked buffer (zero padding)."""
    raw = as_bytes(scales, "scales", True)
    plain = batch_first(raw, "scales", batch_last)
    L, rows, cols = plain.shape
    Rt, Ct = _cdiv(rows, 128), _cdiv(cols, 4)
    blocked = _native.to_blocked(plain, L, rows, cols)
    return blocked.reshape(L, Rt, Ct, 32, 4, 4).transpose(3, 4, 1, 5, 2, 0)


def from_cute_permuted(permuted, rows, cols, batch_last=False):
    """GPU MODE's permuted view (32, 4, Rt, 4, Ct, L) -> plain (L, rows, cols), or (rows, cols, L)
    with batch_last (GPU MODE's sfa order). Any strides are accepted; padding is ignored."""
    p = as_bytes(permuted, "permuted", True)
    Rt, Ct = _cdiv(rows, 128), _cdiv(cols, 4)
    if p.ndim != 6 or p.shape[:5] != (32, 4, Rt, 4, Ct):
        raise InputError(f"permuted: shape {p.shape}, expected (32, 4, {Rt}, 4, {Ct}, L) for {rows} x {cols} scales")
    L = p.shape[5]
    blocked = np.ascontiguousarray(p.transpose(5, 2, 4, 0, 1, 3)).reshape(L, -1)
    plain = _native.from_blocked(blocked, L, rows, cols)
    return np.moveaxis(plain, 0, 2) if batch_last else plain
