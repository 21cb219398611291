# Refusals of the arrays other tools hand over by mistake: each names what the array most likely
# is and the fix (the same advice as the CLI's, tests/harness/test_intake.cpp, in Python's terms):
# scales in the blocked layout (2-D, flat, also for L > 1: the advised call is run) or GPU MODE's
# 6-D permuted view, unpacked FP4 told from MX-style scales (one per 32) by the bytes, a dtype wrong
# for the argument's role, float32 scale bytes, GPU MODE's (rows, cols, L) order without
# batch_last=True; and a (M, N, 1) output for L = 1, which is the same output and is accepted.
import re
import subprocess

import numpy as np
import pytest

import nvfp4_dual as nd


def case(shape, seed=1):
    return list(nd.generate(shape, "normal", seed))


def unpack(packed):
    """One code per byte (element 2j from the low nibble)."""
    out = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), np.uint8)
    out[..., 0::2] = packed & 15
    out[..., 1::2] = packed >> 4
    return out


def test_blocked_scales_of_a_batch_get_the_blocked_hint():
    a, b1, b2, sfa, sfb1, sfb2 = case("40x24x128x2", 6)
    c = nd.reference(a, b1, b2, sfa, sfb1, sfb2)[0]
    with pytest.raises(nd.InputError) as e:
        nd.check(c, a, b1, b2, nd.to_blocked(sfa), sfb1, sfb2)
    msg = str(e.value)
    assert "blocked layout" in msg and "from_blocked" in msg, msg
    assert "pass batch_last=True" not in msg, msg


def test_flat_blocked_and_permuted_scales_are_named():
    a, b1, b2, sfa, sfb1, sfb2 = case("40x24x128", 6)
    with pytest.raises(nd.InputError, match=r"sfa: .*blocked layout.*nvfp4_dual\.from_blocked\(sfa, 40, 8\)"):
        nd.reference(a, b1, b2, nd.to_blocked(sfa).reshape(-1), sfb1, sfb2)
    with pytest.raises(nd.InputError, match=r"sfb1: .*CuTe-permuted view.*from_cute_permuted\(sfb1, 24, 8\)"):
        nd.reference(a, b1, b2, sfa, nd.to_cute_permuted(sfb1), sfb2)


def advised_from_blocked(msg):
    """The nvfp4_dual.from_blocked(...) call a refusal advises, with its array named x."""
    m = re.search(r"nvfp4_dual\.(from_blocked\((\w+)(\.reshape\([^)]*\))?, \d+, \d+\))", msg)
    assert m, msg
    return m.group(1).replace(m.group(2), "x", 1)


def test_flat_blocked_scales_of_a_batch_get_a_call_that_works():
    a, b1, b2, sfa, sfb1, sfb2 = case("128x64x128x3", 1)
    flat = nd.to_blocked(sfa).reshape(-1)
    with pytest.raises(nd.InputError) as e:
        nd.reference(a, b1, b2, flat, sfb1, sfb2)
    call = advised_from_blocked(str(e.value))
    assert call == "from_blocked(x.reshape(3, -1), 128, 8)", str(e.value)
    assert np.array_equal(eval("nd." + call, {"nd": nd, "x": flat}), sfa)


def test_the_clis_flat_blocked_advice_works(harness_bin, tmp_path):
    x = case("40x24x128x3", 6)
    flat = nd.to_blocked(x[4]).reshape(-1)
    for name, v in zip(("a", "b1", "b2", "sfa", "sfb1", "sfb2"), x[:4] + [flat] + x[5:]):
        np.save(tmp_path / f"{name}.npy", v)
    r = subprocess.run([harness_bin, "check", "--inputs", str(tmp_path), "--save-output", str(tmp_path / "o.npy")],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    call = advised_from_blocked(r.stdout + r.stderr)
    assert np.array_equal(eval("nd." + call, {"nd": nd, "x": flat}), x[4])


def test_unpacked_fp4_is_named_on_the_operand():
    a, b1, b2, sfa, sfb1, sfb2 = case("8x16x64", 3)
    with pytest.raises(nd.InputError, match=r"^a: holds 64 bytes per row.*one FP4 code per byte\? pack two"):
        nd.reference(unpack(a), b1, b2, sfa, sfb1, sfb2)


def test_packed_operands_with_one_scale_per_32_blame_the_scales():
    # The shapes of unpacked FP4 with NVFP4 scales; the bytes (some >= 16) say the operands are packed.
    a, b1, b2, sfa, sfb1, sfb2 = case("8x16x64", 3)
    mx = [np.ascontiguousarray(s[:, ::2]) for s in (sfa, sfb1, sfb2)]
    with pytest.raises(nd.InputError) as e:
        nd.reference(a, b1, b2, *mx)
    msg = str(e.value)
    assert msg.startswith("sfa: 2 scales per row, but K = 64"), msg
    assert "one scale per 32 elements? NVFP4 has one E4M3 scale per 16" in msg, msg
    assert "one FP4 code per byte" not in msg, msg


def test_dtype_refusals_say_what_the_role_needs():
    a, b1, b2, sfa, sfb1, sfb2 = case("4x8x32", 4)
    with pytest.raises(nd.InputError, match=r"sfa: dtype float32.*float8_e4m3fn"):
        nd.reference(a, b1, b2, sfa.astype(np.float32), sfb1, sfb2)
    # Packed bytes seen as uint16 (two per element): the advice gives the bytes back; astype would truncate.
    wide = a.view(np.uint16)
    with pytest.raises(nd.InputError) as e:
        nd.reference(wide, b1, b2, sfa, sfb1, sfb2)
    assert re.search(r"^a: dtype uint16, expected packed E2M1.*pass the array's bytes, x\.view\(np\.uint8\)",
                     str(e.value)), str(e.value)
    assert np.array_equal(wide.view(np.uint8), a)
    c = nd.reference(a, b1, b2, sfa, sfb1, sfb2)[0]
    with pytest.raises(nd.InputError, match=r"c: dtype float32, expected float16.*astype\(np.float16\)"):
        nd.check(c.astype(np.float32), a, b1, b2, sfa, sfb1, sfb2)


def test_scales_as_a_float32_arrays_bytes_are_named_as_the_cli_names_them():
    a, b1, b2, sfa, sfb1, sfb2 = case("4x8x32", 4)
    # 4 bytes per scale (K/16 = 2 scales, 8 columns): the CLI's words (reference/case_dir.cpp check_sf).
    with pytest.raises(nd.InputError, match=r"^sfa: 8 scales per row, but K = 32 .*needs K/16 = 2; 4 bytes per "
                                            r"scale: the bytes of a float32 array\? pass the scales' E4M3FN bytes"):
        nd.reference(a, b1, b2, sfa.astype(np.float32).view(np.uint8), sfb1, sfb2)


def test_batch_last_arrays_without_the_keyword_name_it():
    # L = 8: (rows, K/2, L) read batch-first passes the K check; the scales are refused, with the order named.
    x = case("16x16x64x8", 5)
    last = [np.moveaxis(v, 0, 2) for v in x]
    with pytest.raises(nd.InputError, match=r"pass batch_last=True"):
        nd.reference(*last)
    assert np.array_equal(nd.reference(*last, batch_last=True)[0], np.moveaxis(nd.reference(*x)[0], 0, 2))


def test_output_of_shape_m_n_1_for_l_1_is_accepted():
    x = case("4x8x32", 7)
    c = nd.reference(*x)[0]
    assert nd.check(c[:, :, None], *x).ok
    assert nd.check(c[None], *x).ok
    with pytest.raises(nd.InputError, match=re.escape("c: shape (8, 4) does not match the problem: expected "
                                                      "(1, 4, 8), (4, 8, 1) or (4, 8)")):
        nd.check(np.ascontiguousarray(c.T), *x)
