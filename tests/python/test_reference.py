# The exact reference from Python: bit for bit the golden cases (data/README.md; the C++ library is
# held to the same files by tests/reference/test_golden.cpp) and the C++ harness's own output.
import re
import subprocess

import numpy as np
import pytest

import nvfp4_dual as nd
from conftest import GOLDEN, INPUTS, golden_cases, load_case


def same_bits(x, y):
    """Equal bit patterns (NaN equals NaN of the same pattern; +0 differs from -0)."""
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x.view(np.uint8 if x.dtype.itemsize == 1 else f"u{x.dtype.itemsize}"),
        y.view(np.uint8 if y.dtype.itemsize == 1 else f"u{y.dtype.itemsize}"))


@pytest.mark.parametrize("case", golden_cases())
def test_golden_bit_for_bit(case):
    g = load_case(case)
    c, gg, uu = nd.reference(*(g[f] for f in INPUTS))
    # C: the same fp16 bits, NaN where the golden C is NaN (its NaN payload is numpy's; the one
    # the library writes is compared with the CLI's below).
    nan = np.isnan(g["c"])
    assert c.shape == g["c"].shape and np.array_equal(np.isnan(c), nan)
    assert same_bits(c[~nan], g["c"][~nan])
    # G and U: exact values; NaN exactly where the golden data has NaN.
    for got, want in ((gg, g["g"]), (uu, g["u"])):
        assert got.shape == want.shape and got.dtype == np.float64
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("case", golden_cases())
def test_equals_the_cli(case, harness_bin, tmp_path):
    out = tmp_path / "c.npy"
    subprocess.run([harness_bin, "--inputs", str(GOLDEN / case), "--save-output", str(out)], check=True,
                   capture_output=True)
    c, _, _ = nd.reference(*(load_case(case)[f] for f in INPUTS))
    assert same_bits(c, np.load(out))


def test_batch_last_and_views():
    g = load_case("batched_3x6x96x2_seed2")
    # GPU MODE's order: (rows, cols, L) views over batch-first memory.
    last = [np.moveaxis(g[f], 0, 2) for f in INPUTS]
    c, gg, _ = nd.reference(*last, batch_last=True)
    assert c.shape == (3, 6, 2)
    assert same_bits(np.ascontiguousarray(np.moveaxis(c, 2, 0)), g["c"])
    assert np.array_equal(np.moveaxis(gg, 2, 0), g["g"])
    # The same arrays copied into batch-last memory.
    c2, _, _ = nd.reference(*(np.ascontiguousarray(x) for x in last), batch_last=True)
    assert same_bits(c2, c)


class DLPackOnly:
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayOnly:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


def test_dlpack_and_array_protocol_inputs():
    g = load_case("ragged_5x7x64_seed1")
    for wrap in (DLPackOnly, ArrayOnly):
        c, _, _ = nd.reference(*(wrap(g[f]) for f in INPUTS))
        assert same_bits(c, g["c"])
        assert nd.check(wrap(g["c"]), *(wrap(g[f]) for f in INPUTS)).ok


def test_one_byte_dtypes_are_taken_as_bytes():
    g = load_case("ragged_5x7x64_seed1")
    c, _, _ = nd.reference(*(g[f].view(np.int8) for f in INPUTS))
    assert same_bits(c, g["c"])


def test_alpha():
    x = nd.generate("16x24x64", "normal", 3)
    c1, g, u = nd.reference(*x)
    c2, g2, u2 = nd.reference(*x, alpha1=2.0, alpha2=0.5)
    assert np.array_equal(g, g2) and np.array_equal(u, u2)  # alpha is not applied to G, U
    assert not same_bits(c1, c2)
    assert nd.check(c2, *x, alpha1=2.0, alpha2=0.5).ok
    assert not nd.check(c1, *x, alpha1=2.0, alpha2=0.5).ok


@pytest.mark.parametrize("bad, message", [
    (lambda x: x._replace(a=x.a[:, :7]), "a: K = 14"),
    (lambda x: x._replace(sfa=x.sfa[:3]), "sfa: 3 rows, but a has 5"),
    (lambda x: x._replace(sfa=nd.to_blocked(x.sfa).reshape(128, 4)), "sfa: 128 rows, but a has 5; its 512 bytes are the 128x4 blocked"),
    (lambda x: x._replace(b2=x.b2[:, :8]), "b2: 8 bytes per row"),
    (lambda x: x._replace(sfb1=x.sfb1.astype(np.float32)), "sfb1: dtype float32, expected E4M3FN scale bytes: uint8"),
    (lambda x: x._replace(a=x.a.reshape(5, 32, 1)), "a: K = 2 (from a, 1 bytes per row) is not a multiple of 16 (one "
                                                    "E4M3 scale per 16 elements); read batch-first as (L, rows, cols): "
                                                    "for GPU MODE's (rows, cols, L) order pass batch_last=True"),
    (lambda x: x._replace(b1=x.b1[None, None]), "b1: shape (1, 1, 7, 32) has 4 dimension(s)"),
])
def test_bad_input_names_the_argument(bad, message):
    x = nd.generate("5x7x64", "normal", 1)
    with pytest.raises(nd.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        nd.reference(*bad(x))
    assert issubclass(nd.InputError, ValueError)


def test_one_byte_floats_of_other_formats_are_refused_not_reinterpreted():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = nd.generate("5x7x64", "normal", 1)
    c, _, _ = nd.reference(*x)
    # E4M3FN scales as ml_dtypes' float8_e4m3fn: the same bytes, the same result.
    same = x._replace(sfa=x.sfa.view(ml_dtypes.float8_e4m3fn), sfb1=x.sfb1.view(ml_dtypes.float8_e4m3fn))
    assert same_bits(nd.reference(*same)[0], c)
    for other in ("float8_e5m2", "float8_e4m3fnuz", "float8_e8m0fnu", "float8_e4m3b11fnuz"):
        with pytest.raises(nd.InputError, match=r"sfb2: dtype %s, expected E4M3FN scale bytes: uint8 or float8_e4m3fn "
                                                r"\(%s stores other values" % (other, other)):
            nd.reference(*x._replace(sfb2=x.sfb2.view(getattr(ml_dtypes, other))))
        with pytest.raises(nd.InputError, match="scales: dtype %s" % other):
            nd.dequantize(x.a, x.sfa.view(getattr(ml_dtypes, other)))
    # Packed E2M1 given as scales' type, or unpacked one value per byte.
    with pytest.raises(nd.InputError, match=r"a: dtype float8_e4m3fn, expected packed E2M1 bytes"):
        nd.reference(*x._replace(a=x.a.view(ml_dtypes.float8_e4m3fn)))
    with pytest.raises(nd.InputError, match=r"b1: dtype float4_e2m1fn, .*one E2M1 value per byte: pack two per byte"):
        nd.reference(*x._replace(b1=x.b1.view(ml_dtypes.float4_e2m1fn)))
    with pytest.raises(nd.InputError, match="dtype bool"):
        nd.reference(*x._replace(sfa=x.sfa.astype(bool)))


@pytest.mark.parametrize("alpha, message", [
    (float("inf"), "alpha1 = inf: expected a finite number"),
    (float("nan"), "alpha1 = nan: expected a finite number"),
    (1e40, "alpha1 = 1e+40 is outside fp32's range (|alpha| <= 3.40282347e+38)"),
    (3.4028236e38, "alpha1 = 3.4028236e+38 is outside fp32's range"),
    (-1e-50, "alpha1 = -1e-50 is below fp32's smallest subnormal: fp32 would make it 0"),
    ("x", "alpha1 = 'x': expected a number"),
])
def test_alphas_outside_fp32_are_refused(alpha, message):
    x = nd.generate("4x4x16", "normal", 1)
    for f in (lambda: nd.reference(*x, alpha1=alpha), lambda: nd.check(nd.reference(*x)[0], *x, alpha1=alpha)):
        with pytest.raises(nd.InputError, match=re.escape(message)):
            f()
    # fp32's extremes themselves are fine, and so is a decimal that rounds to them (as --alpha takes it)
    nd.reference(*x, alpha1=float(np.finfo(np.float32).max), alpha2=float(np.float32(1e-45)))
    nd.reference(*x, alpha1=3.4028235e38, alpha2=1e-45)


def test_other_bad_arguments_are_input_errors():
    with pytest.raises(nd.InputError, match="dequantize: packed has shape"):
        nd.dequantize(np.zeros((4, 0), np.uint8), np.zeros((4, 0), np.uint8))
    for seed in (-1, 2 ** 64, 1.5, True):
        with pytest.raises(nd.InputError, match="seed = .*expected an integer in"):
            nd.generate("4x4x16", "normal", seed)


def test_an_output_in_the_other_byte_order_is_read_by_value():
    x = nd.generate("5x7x64", "normal", 1)
    c, _, _ = nd.reference(*x)
    assert nd.check(c.astype(">f2"), *x).ok
