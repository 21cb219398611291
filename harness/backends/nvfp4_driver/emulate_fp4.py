"""emulate_fp4.py - torch._scaled_mm on NVFP4 operands for GPUs without FP4 tensor cores (issue 34).

GPU MODE's NVFP4 submissions are written for B200 and call

    torch._scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.float32)
      a        float4_e2m1fn_x2 (M, K/2), row-major: byte j of a row holds element 2j in its low nibble
      b        float4_e2m1fn_x2 (K/2, N), column-major: the transposed view of an (N, K/2) buffer
      scale_a  float8_e4m3fn, one scale per 16 K-elements of a row of A, in the 128x4 blocked layout
               (docs/design.md §1.4), contiguous, round_up(M, 128) * round_up(K/16, 4) elements in any
               shape (GPU MODE's to_blocked flattens it to 1-D); scale_b the same for the rows of b.t()

On an H100 the real kernel refuses this (CUBLAS_STATUS_NOT_SUPPORTED). install() registers an
exact-decode emulation as the CUDA kernel of aten::_scaled_mm and aten::_scaled_mm.out (the overload
inductor's extern kernel calls) through torch.library, for NVFP4 inputs only: the original kernel,
kept with torch.library.get_kernel before the override, still runs every other call (fp8, MXFP4,
mixed dtypes). It is a kernel registration, not a replacement of the Python attribute, so eager
calls, torch.compile (Dynamo traces the op with its existing meta kernel; inductor calls the .out
overload at run time) and CUDA graph capture all reach it.

API (the submission driver calls these):
    install(mode="auto") -> str | None   "auto": only when the current CUDA device has no FP4 tensor
        cores (compute capability < 10.0); "on": whenever CUDA is available; "off": never. Returns a
        one-line notice (device, "emulated", timings not comparable) while the emulation is active,
        None when nothing is installed. Idempotent: a second call returns the first call's notice.
        Thread-safe (one lock around install and uninstall). RuntimeError when this torch has no
        float4_e2m1fn_x2 or no torch.library.get_kernel (the driver runs without the emulation
        then under "auto", and refuses "on").
    installed() -> bool;  fp4_tensor_cores(device=None) -> bool;  uninstall();  emulated_calls() -> int

Numerics (docs/fp4-emulation.md says the same at length):
    1. E2M1 codes and E4M3FN scale bytes are decoded through 256-entry float64 tables (byte -> the
       values of its two nibbles; byte -> scale; 0x7F/0xFF -> NaN, the sign decoded as written).
    2. value * scale is exact: at most 2 x 4 significant bits (also exact in fp32 or bf16).
    3. A (M, K) and B (N, K) in float64, C = A @ B^T by a float64 GEMM: every product is exact and the
       sum is exact whenever sum|a_k b_k| < 2^33 (always for GPU MODE's data), so C is the exact dot
       product; float64 rather than fp32 + TF32 off, because it needs no global flag (allow_tf32 is
       process state that Dynamo guards on and other threads read) and it is exact, not just close.
    4. C is rounded once to fp32 (what an fp32 accumulator holds), bias (bf16/fp16 outputs only, as
       torch allows) added in fp32, then rounded to out_dtype (float32, bfloat16 or float16).
    5. scale_result is ignored for these outputs, as torch ignores it for non-fp8 outputs.
    B200 hardware accumulates in fp32 in its own order: its result may differ from this one by fp32
    accumulation error; this one is the exact product rounded once.

Capture safety: the tables are created on the current CUDA device at install time (on another device
at its first call, which must not be inside a capture: no context is created on GPUs the process does
not use); a call does only tensor ops on its arguments' device (index_select, reshape, float64 matmul,
casts): no host sync, no .item(), no host-to-device copy, no value-dependent Python state.

The layout conversion and the decode take numpy arrays or torch tensors alike (the same index math;
scaled_mm_numpy is the numpy twin of the kernel), so CPU CI tests them without torch
(tests/python_driver/test_emulate_fp4.py). The module imports neither numpy nor torch at load.
"""

import threading

# --- format facts (docs/design.md §1.2) ----------------------------------------------------------

_E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def e2m1_value(code):
    """One E2M1 nibble -> float: bit 3 the sign, bits 2..0 index the magnitudes (no inf, no NaN)."""
    magnitude = _E2M1_MAGNITUDES[code & 7]
    return -magnitude if code & 8 else magnitude


def e4m3fn_value(byte):
    """One E4M3FN byte -> float: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent field 0
    is subnormal (m/8 * 2^-6); 0x7F and 0xFF are NaN; no infinity."""
    exponent, mantissa = (byte >> 3) & 15, byte & 7
    if exponent == 15 and mantissa == 7:
        return float("nan")
    if exponent == 0:
        value = mantissa / 8 * 2.0 ** -6
    else:
        value = (1 + mantissa / 8) * 2.0 ** (exponent - 7)
    return -value if byte & 0x80 else value


def _cdiv(a, b):
    return -(-a // b)


def blocked_size(rows, cols):
    """Bytes of a rows x cols scale matrix in the 128x4 blocked layout (zero padding included)."""
    return _cdiv(rows, 128) * 128 * _cdiv(cols, 4) * 4


# --- numpy / torch neutral helpers ---------------------------------------------------------------
# An array is a torch tensor when its type comes from the torch package, else a numpy array.

def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _permute(x, axes):
    return x.permute(*axes) if _is_torch(x) else x.transpose(axes)


def _zeros(like, shape):
    if _is_torch(like):
        return like.new_zeros(shape)
    import numpy as np
    return np.zeros(shape, like.dtype)


def _gather(table, index):
    """table[index] for a uint8 index array: index's shape + table's trailing shape."""
    if not _is_torch(table):
        return table[index]
    import torch
    flat = torch.index_select(table, 0, index.reshape(-1).int())
    return flat.reshape(tuple(index.shape) + tuple(table.shape[1:]))


def _cast(x, name):
    if _is_torch(x):
        import torch
        return x.to(getattr(torch, name))
    return x.astype(name)


# --- layouts and decode (numpy arrays or torch tensors) ------------------------------------------

def blocked_to_plain(blocked, rows, cols):
    """128x4 blocked scales (any shape, blocked_size(rows, cols) elements in memory order) -> plain
    (rows, cols), padding dropped. Byte (r, c) sits at (r//128)*Ct*512 + (c//4)*512 + (r%32)*16 +
    ((r%128)//32)*4 + c%4 (docs/design.md §1.4), so the buffer is a (Rt, Ct, 32, 4, 4) array
    indexed [r//128, c//4, r%32, (r%128)//32, c%4]; the plain matrix is that array with its axes
    put in row order (r//128, (r%128)//32, r%32) and column order (c//4, c%4)."""
    rt, ct = _cdiv(rows, 128), _cdiv(cols, 4)
    flat = blocked.reshape(-1)
    if flat.shape[0] != rt * ct * 512:
        raise ValueError("blocked scales: %d elements, expected %d for %d x %d scales (padded to %d x %d)"
                         % (flat.shape[0], rt * ct * 512, rows, cols, rt * 128, ct * 4))
    tiles = flat.reshape(rt, ct, 32, 4, 4)
    plain = _permute(tiles, (0, 3, 2, 1, 4)).reshape(rt * 128, ct * 4)
    return plain[:rows, :cols]


def plain_to_blocked(plain):
    """plain (rows, cols) -> the 1-D 128x4 blocked buffer, zero padded (the inverse of
    blocked_to_plain; the axis permutation swaps axes 1 and 3, so it is its own inverse)."""
    rows, cols = plain.shape
    rt, ct = _cdiv(rows, 128), _cdiv(cols, 4)
    padded = _zeros(plain, (rt * 128, ct * 4))
    padded[:rows, :cols] = plain
    return _permute(padded.reshape(rt, 4, 32, ct, 4), (0, 3, 2, 1, 4)).reshape(-1)


class Tables:
    """The decode tables, float64: pairs (256, 2) = the values of a byte's low and high nibble;
    e4m3 (256,) = the value of a scale byte."""

    def __init__(self, pairs, e4m3):
        self.pairs, self.e4m3 = pairs, e4m3


def make_tables(device=None):
    """numpy tables when device is None, else torch tensors on that device."""
    pairs = [[e2m1_value(b & 15), e2m1_value(b >> 4)] for b in range(256)]
    scales = [e4m3fn_value(b) for b in range(256)]
    if device is None:
        import numpy as np
        return Tables(np.array(pairs, np.float64), np.array(scales, np.float64))
    import torch
    return Tables(torch.tensor(pairs, dtype=torch.float64, device=device),
                  torch.tensor(scales, dtype=torch.float64, device=device))


def decode(packed, scales, tables):
    """packed (rows, K/2) uint8 FP4 pairs, scales (rows, K/16) uint8 E4M3FN plain -> (rows, K)
    float64, exactly: element 2j from the low nibble of byte j, times the scale of its 16-block."""
    rows, half = packed.shape
    blocks = 2 * half // 16
    if tuple(scales.shape) != (rows, blocks):
        raise ValueError("decode: scales %s, expected (%d, %d) for packed %s"
                         % (tuple(scales.shape), rows, blocks, tuple(packed.shape)))
    values = _gather(tables.pairs, packed).reshape(rows, blocks, 16)
    return (values * _gather(tables.e4m3, scales).reshape(rows, blocks, 1)).reshape(rows, 2 * half)


def _product(a, b_nk, scale_a, scale_b, tables):
    """The NVFP4 product as uint8 arrays: a (M, K/2), b_nk (N, K/2), blocked scales -> fp32 (M, N),
    the float64 dot products rounded once."""
    blocks = a.shape[1] // 8  # K/16 scale columns = (K/2 bytes) / 8
    dec_a = decode(a, blocked_to_plain(scale_a, a.shape[0], blocks), tables)
    dec_b = decode(b_nk, blocked_to_plain(scale_b, b_nk.shape[0], blocks), tables)
    return _cast(dec_a @ dec_b.T, "float32")


def scaled_mm_numpy(a, b, scale_a, scale_b, out_dtype="float32", bias=None, tables=None):
    """The kernel's numpy twin, in torch._scaled_mm's NVFP4 convention on uint8 arrays: a (M, K/2),
    b (K/2, N) (e.g. b_nk.T), blocked scales. out_dtype "float32" or "float16"; bias (N,) added in
    fp32 before the final rounding."""
    out = _product(a, b.T, scale_a, scale_b, tables or make_tables())
    if bias is not None:
        out = out + _cast(bias, "float32")
    return _cast(out, out_dtype)


# --- the torch kernel ----------------------------------------------------------------------------

_OPS = ("_scaled_mm", "_scaled_mm.out")
_state = {"lib": None, "original": {}, "tables": {}, "notice": None, "calls": 0}
# Held by install() and uninstall() for their whole body: a registration is made, or dropped, once,
# whatever threads call them (the check "installed?" and the registration are one step). Re-entrant:
# install() calls _register(), which checks installed() again.
_lock = threading.RLock()


def fp4_tensor_cores(device=None):
    """True when the CUDA device (default: the current one) has FP4 tensor cores (compute
    capability 10.0 or newer); False without CUDA."""
    import torch
    if not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device)[0] >= 10


def installed():
    return _state["lib"] is not None


def emulated_calls():
    """How many _scaled_mm calls the emulation has run (a replayed CUDA graph does not count)."""
    return _state["calls"]


def install(mode="auto"):
    """Registers the emulation (see the module docstring); returns the notice or None. Thread-safe:
    concurrent calls register once and return the same notice. RuntimeError when this torch cannot
    host it (no float4_e2m1fn_x2 dtype, no torch.library.get_kernel); nothing is registered then."""
    if mode not in ("auto", "on", "off"):
        raise ValueError("emulate_fp4.install: mode %r, expected 'auto', 'on' or 'off'" % (mode,))
    with _lock:
        if installed():
            return _state["notice"]
        if mode == "off":
            return None
        try:
            import torch
        except ImportError:
            return None
        if not torch.cuda.is_available() or (mode == "auto" and fp4_tensor_cores()):
            return None
        _register("CUDA", [torch.device("cuda", torch.cuda.current_device())])
        major, minor = torch.cuda.get_device_capability()
        cores = "FP4 tensor cores not used" if major >= 10 else "no FP4 tensor cores"
        _state["notice"] = ("FP4 emulated on %s (compute capability %d.%d, %s): torch._scaled_mm on NVFP4 "
                            "operands runs an exact-decode float64 emulation; timings are not comparable "
                            "to FP4 hardware" % (torch.cuda.get_device_name(), major, minor, cores))
        return _state["notice"]


def uninstall():
    """Removes the registration: the original kernels run again."""
    with _lock:
        if _state["lib"] is not None:
            _state["lib"]._destroy()
        _state.update(lib=None, original={}, tables={}, notice=None)


def _register(dispatch_key, devices):
    """Keeps the current kernels of _OPS for dispatch_key, then registers ours in their place, with
    decode tables on each of `devices`. install() passes "CUDA"; the torch tests pass "CPU", the
    only key a machine without a GPU can exercise. RuntimeError, nothing registered, when this torch
    lacks what the emulation needs."""
    import warnings
    import torch
    if not hasattr(torch, "float4_e2m1fn_x2"):
        raise RuntimeError("emulate_fp4: torch %s has no float4_e2m1fn_x2 dtype" % torch.__version__)
    get_kernel = getattr(torch.library, "get_kernel", None)
    if get_kernel is None:
        raise RuntimeError("emulate_fp4 needs torch.library.get_kernel (torch %s has none) to keep the "
                           "original _scaled_mm kernel for non-FP4 calls" % torch.__version__)
    with _lock:
        if installed():
            raise RuntimeError("emulate_fp4: already registered (uninstall() first)")
        original = {op: get_kernel("aten::" + op, dispatch_key) for op in _OPS}
        tables = {str(d): make_tables(d) for d in devices}
        lib = torch.library.Library("aten", "IMPL")
        try:
            with warnings.catch_warnings():
                # "Overriding a previously registered kernel": the override is the point; install's
                # notice is what the user reads instead.
                warnings.simplefilter("ignore")
                lib.impl("_scaled_mm", _scaled_mm_kernel, dispatch_key, with_keyset=True)
                lib.impl("_scaled_mm.out", _scaled_mm_out_kernel, dispatch_key, with_keyset=True)
        except BaseException:
            lib._destroy()  # both kernels or neither: a half registration would outlive the error
            raise
        _state.update(lib=lib, original=original, tables=tables)


def _is_nvfp4(a, b, scale_a, scale_b):
    import torch
    return (a.dtype == torch.float4_e2m1fn_x2 and b.dtype == torch.float4_e2m1fn_x2
            and scale_a.dtype == torch.float8_e4m3fn and scale_b.dtype == torch.float8_e4m3fn)


def _scaled_mm_kernel(keyset, a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                      use_fast_accum=False):
    if not _is_nvfp4(a, b, scale_a, scale_b):
        return _state["original"]["_scaled_mm"].call_boxed(keyset, a, b, scale_a, scale_b, bias,
                                                          scale_result, out_dtype, use_fast_accum)
    _check_call(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum)
    return _emulate(a, b, scale_a, scale_b, bias, out_dtype)


def _scaled_mm_out_kernel(keyset, a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                          use_fast_accum=False, *, out):
    if not _is_nvfp4(a, b, scale_a, scale_b):
        return _state["original"]["_scaled_mm.out"].call_boxed(keyset, a, b, scale_a, scale_b, bias,
                                                              scale_result, out_dtype, use_fast_accum,
                                                              out=out)
    if out_dtype is not None and out_dtype != out.dtype:
        raise RuntimeError("_scaled_mm: out_dtype must match output matrix type (out_dtype %s, out %s)"
                           % (out_dtype, out.dtype))
    _check_call(a, b, scale_a, scale_b, bias, out.dtype, use_fast_accum)
    result = _emulate(a, b, scale_a, scale_b, bias, out.dtype)
    if tuple(out.shape) != tuple(result.shape):
        # What the real kernel does (at::native::resize_output): an empty out is sized silently;
        # one that holds elements is warned about, then resized all the same.
        if out.numel() != 0:
            import warnings
            warnings.warn("_scaled_mm (FP4 emulation): out has shape %s with %d elements, not the result's %s; "
                          "it is resized, as torch's resize_output does with a warning (reuse an out tensor by "
                          "resizing it to zero elements first)" % (list(out.shape), out.numel(), list(result.shape)),
                          UserWarning, stacklevel=2)
        out.resize_(result.shape)  # outside any capture: a capture cannot allocate
    return out.copy_(result)


def _emulate(a, b, scale_a, scale_b, bias, out_dtype):
    """The NVFP4 product on a's device: decode, float64 GEMM, fp32, bias, out_dtype."""
    import torch
    tables = _state["tables"].get(str(a.device))
    if tables is None:
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("emulate_fp4: no decode tables on %s yet (install made them on the device "
                               "current then); call once outside the CUDA graph capture first" % a.device)
        tables = _state["tables"][str(a.device)] = make_tables(a.device)
    _state["calls"] += 1
    u8 = torch.uint8
    out = _product(a.view(u8), b.view(u8).t(), scale_a.view(u8), scale_b.view(u8), tables)
    if bias is not None:
        out = out + bias.to(torch.float32)
    return out.to(out_dtype)


def _check_call(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum):
    """Refuses what the real NVFP4 path refuses (ScaledBlas.cpp _scaled_mm_out_cuda and the meta
    kernel _check_scaled_mm_sizes, torch 2.11), so that what runs here runs on a B200 too."""
    import torch

    def fail(msg):
        raise RuntimeError("_scaled_mm (FP4 emulation): " + msg)

    if a.dim() != 2 or b.dim() != 2:
        fail("inputs must be matrices, got %d-D and %d-D" % (a.dim(), b.dim()))
    m, half = a.shape
    if b.shape[0] != half:
        fail("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)" % (m, half, b.shape[0], b.shape[1]))
    n = b.shape[1]
    if half % 16 or n % 16:
        fail("mat1 (%d x %d) needs K/2 divisible by 16 and mat2 (%d x %d) both dimensions divisible by 16"
             % (m, half, half, n))
    if m and half and not (a.stride(1) == 1 and a.stride(0) > 1):
        fail("mat1 must be row-major (M, K/2), got strides %s" % (tuple(a.stride()),))
    if half and n and not (b.stride(0) == 1 and b.stride(1) > 1):
        fail("mat2 must be column-major (the transposed view of an (N, K/2) tensor), got strides %s"
             % (tuple(b.stride()),))
    for name, scale, rows in (("scale_a", scale_a, m), ("scale_b", scale_b, n)):
        want = blocked_size(rows, 2 * half // 16)
        if scale.numel() != want or not scale.is_contiguous():
            fail("%s must be contiguous with %d elements (the 128x4 blocked layout of %d x %d scales), "
                 "got shape %s" % (name, want, rows, 2 * half // 16, tuple(scale.shape)))
    if use_fast_accum:
        fail("use_fast_accum is not supported for Float4_e2m1fn_x2 inputs")
    if out_dtype not in (torch.float32, torch.bfloat16, torch.float16):
        fail("out_dtype must be torch.float32, torch.bfloat16 or torch.float16, got %s" % (out_dtype,))
    if bias is not None:
        if out_dtype == torch.float32:
            fail("bias is not supported when out_dtype is float32")
        if bias.dtype != out_dtype or bias.numel() != n:
            fail("bias must be %s with %d elements, got %s with %d" % (out_dtype, n, bias.dtype, bias.numel()))
    devices = {t.device for t in (a, b, scale_a, scale_b) + ((bias,) if bias is not None else ())}
    if len(devices) != 1:
        fail("all tensors must be on one device, got %s" % sorted(map(str, devices)))
