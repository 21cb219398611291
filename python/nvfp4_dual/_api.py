"""The reference, the check and the inputs (see the package docstring)."""
import json
from collections import namedtuple

import numpy as np

from . import _native
from ._arrays import InputError, as_bytes, as_numpy, output_bits, problem_arrays, to_caller_order

Inputs = namedtuple("Inputs", "a b1 b2 sfa sfb1 sfb2")
Inputs.__doc__ = """The six inputs of one problem, in the order reference() and check() take them."""


FLT_MAX = float(np.finfo(np.float32).max)


def _alpha(value, name):
    """A global scale as the fp32 it is (docs/design.md §1.1): finite, within fp32's range, and not
    a nonzero value that fp32 rounds to zero; InputError naming it otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} = {value!r}: expected a number") from None
    if not np.isfinite(x):
        raise InputError(f"{name} = {x}: expected a finite number")
    with np.errstate(over="ignore"):
        f = np.float32(x)
    if np.isinf(f):
        raise InputError(f"{name} = {x:.9g} is outside fp32's range (|alpha| <= {FLT_MAX:.9g}): global scales are fp32")
    if x != 0 and f == 0:
        raise InputError(f"{name} = {x:.9g} is below fp32's smallest subnormal: fp32 would make it 0")
    return x


def reference(a, b1, b2, sfa, sfb1, sfb2, alpha1=1.0, alpha2=1.0, batch_last=False):
    """The exact reference: returns (c, g, u).

    g = A·B1ᵀ and u = A·B2ᵀ exactly (float64; alpha NOT applied), c = fp16_rne(silu(alpha1·g) ·
    (alpha2·u)) (float16) — the C++ library's compute_reference, bit for bit. Shapes follow the
    inputs: (M, N) for 2-D inputs, (L, M, N), or (M, N, L) with batch_last.
    """
    arrays, shape, two_d = problem_arrays(a, b1, b2, sfa, sfb1, sfb2, batch_last)
    L, M, N, K = shape
    c, g, u = _native.reference(*arrays, L, M, N, K, _alpha(alpha1, "alpha1"), _alpha(alpha2, "alpha2"))
    c = c.view(np.float16)
    return tuple(to_caller_order(x, two_d, batch_last) for x in (c, g, u))


class Report:
    """The check of one output against the exact reference.

    ``ok``: every element within the derived tolerance (README, "The harness"); ``str(report)``:
    the harness's text for the check; ``to_dict()``: the same as JSON (the harness's writer, so
    every field the harness reports is here), with the comparison under "metrics".
    """

    def __init__(self, native):
        self._native = native

    @property
    def ok(self):
        return self._native.ok

    def to_dict(self):
        return json.loads(self._native.json())

    @property
    def metrics(self):
        """The comparison: max errors, ULP histogram, worst elements, GPU MODE check, ..."""
        return self.to_dict()["metrics"]

    @property
    def degenerate(self):
        """The reference output is mostly inf, NaN or zero: this check cannot tell right from wrong."""
        return self.to_dict()["degenerate"]

    @property
    def gpumode_ok(self):
        """GPU MODE's rule |x - ref| <= 1e-3 + 1e-3·|ref| (NaN/±inf must match), reported beside ours."""
        return self.metrics["gpumode_check"]["pass"]

    @property
    def max_ulp(self):
        return self.metrics["max_ulp"]

    @property
    def warnings(self):
        """Suspicious input bytes (NaN or negative scales)."""
        return self.to_dict()["warnings"]

    def __str__(self):
        return self._native.text()

    def __repr__(self):
        m = self.metrics
        return (f"<nvfp4_dual.Report {'PASS' if self.ok else 'FAIL'}: {m['over_tolerance']} of "
                f"{m['elements']} over tolerance, max {m['max_ulp']} ulp>")


def check(c, a, b1, b2, sfa, sfb1, sfb2, alpha1=1.0, alpha2=1.0, batch_last=False):
    """Compares an fp16 output `c` with the exact reference of the inputs: returns a Report.

    The same check as ``harness --inputs DIR --check C.npy``: per element, the tolerance derived
    from fp32 accumulation over K terms and one fp16 rounding; ULP histogram; worst elements;
    NaN/inf mismatches; GPU MODE's rule beside it; the degenerate-reference flag.
    `c` is float16 (or its uint16 bits), shaped like reference()'s output.
    """
    arrays, shape, _ = problem_arrays(a, b1, b2, sfa, sfb1, sfb2, batch_last)
    bits = output_bits(c, shape, batch_last)
    L, M, N, K = shape
    return Report(_native.check(bits, *arrays, L, M, N, K, _alpha(alpha1, "alpha1"), _alpha(alpha2, "alpha2"),
                                "arrays", "c"))


def check_case_dir(directory, output=None, batch_last=False):
    """``harness --inputs DIR --check OUTPUT``: checks a .npy output (default DIR/c.npy) against a
    case directory's exact reference; the Report's text is the CLI's."""
    directory = str(directory)
    output = str(output) if output is not None else directory.rstrip("/") + "/c.npy"
    return Report(_native.check_case_dir(directory, output, bool(batch_last)))


def assert_dual_gemm_close(actual, a, b1, b2, sfa, sfb1, sfb2, alpha1=1.0, alpha2=1.0, batch_last=False,
                           msg=None):
    """Raises AssertionError, with the report's text, unless check(...) passes (the
    torch.testing.assert_close idiom). `msg`: a string put before the report, or a callable that
    receives the report's text and returns the message. Returns the Report when it passes."""
    report = check(actual, a, b1, b2, sfa, sfb1, sfb2, alpha1, alpha2, batch_last)
    if not report.ok:
        text = str(report)
        if callable(msg):
            raise AssertionError(msg(text))
        raise AssertionError(text if msg is None else f"{msg}\n{text}")
    return report


def quantize(x):
    """NVFP4-quantizes float data (..., K), K a multiple of 16: returns (packed, scales).

    packed (..., K/2) uint8, element 2j in the low nibble of byte j; scales (..., K/16) uint8
    E4M3FN, plain layout; per 16 elements scale = E4M3(amax/6), codes rounded to nearest even
    (reference/quantize.hpp). The data are converted to float32 first; NaN/inf raise InputError.
    """
    arr = np.ascontiguousarray(as_numpy(x), dtype=np.float32)
    if arr.ndim < 1 or arr.shape[-1] % 16 or arr.shape[-1] == 0:
        raise InputError(f"quantize: shape {arr.shape}: the last dimension (K) must be a positive multiple of 16")
    K = arr.shape[-1]
    rows = arr.size // K
    packed, scales = _native.quantize(arr.reshape(rows, K), rows, K)
    lead = arr.shape[:-1]
    return packed.reshape(*lead, K // 2), scales.reshape(*lead, K // 16)


def dequantize(packed, scales):
    """Decodes NVFP4 (packed (..., K/2), scales (..., K/16)) to float64 (..., K), exactly."""
    p = np.ascontiguousarray(as_bytes(packed, "packed", False))
    s = np.ascontiguousarray(as_bytes(scales, "scales", True))
    if p.ndim == 0 or p.size == 0:
        raise InputError(f"dequantize: packed has shape {p.shape}; expected (..., K/2) with no empty dimension")
    K = 2 * p.shape[-1]
    rows = p.size // p.shape[-1]
    if s.shape[:-1] != p.shape[:-1] or s.shape[-1] * 16 != K:
        raise InputError(f"dequantize: packed {p.shape} and scales {s.shape} disagree (want (..., K/2), (..., K/16))")
    return _native.dequantize(p.reshape(rows, -1), s.reshape(rows, -1), rows, K).reshape(*p.shape[:-1], K)


def distributions():
    """The names generate() accepts (reference/distributions.hpp describes each)."""
    return list(_native.distributions())


def _parse_shape(shape):
    if isinstance(shape, str):
        parts = shape.split("x")
    else:
        parts = list(shape)
    if len(parts) not in (3, 4):
        raise InputError(f"bad shape {shape!r}: expected 'MxNxK', 'MxNxKxL' or (M, N, K[, L])")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise InputError(f"bad shape {shape!r}: expected positive integers") from None
    return vals + [1] * (4 - len(vals))


def generate(shape, dist="normal", seed=0, batch_last=False):
    """The harness's named, seeded inputs: returns Inputs(a, b1, b2, sfa, sfb1, sfb2).

    `shape`: 'MxNxK[xL]' or (M, N, K[, L]); `dist`: one of distributions() (normal, uniform,
    edge, gpumode, ones, identity); the same (shape, dist, seed) gives the same bytes everywhere.
    Arrays are 2-D when L = 1, else (L, rows, cols), or (rows, cols, L) with batch_last.
    """
    M, N, K, L = _parse_shape(shape)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2 ** 64:
        raise InputError(f"seed = {seed!r}: expected an integer in [0, 2^64)")
    arrays = _native.generate(M, N, K, L, str(dist), int(seed))
    return Inputs(*(to_caller_order(x, L == 1, batch_last) for x in arrays))
