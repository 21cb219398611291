# Refusals of the arrays other tools hand over by mistake: each names what the array most likely
# is and the fix (the same advice as the CLI's, tests/harness/test_intake.cpp, in Python's terms):
# scales in the blocked layout (2-D, flat) or GPU MODE's 6-D permuted view, unpacked FP4, a dtype
# wrong for the argument's role, GPU MODE's (rows, cols, L) order without batch_last=True; and a
# (M, N, 1) output for L = 1, which is the same output and is accepted.
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


def test_unpacked_fp4_is_named_on_the_operand():
    a, b1, b2, sfa, sfb1, sfb2 = case("8x16x64", 3)
    with pytest.raises(nd.InputError, match=r"^a: holds 64 bytes per row.*one FP4 code per byte\? pack two"):
        nd.reference(unpack(a), b1, b2, sfa, sfb1, sfb2)


def test_dtype_refusals_say_what_the_role_needs():
    a, b1, b2, sfa, sfb1, sfb2 = case("4x8x32", 4)
    with pytest.raises(nd.InputError, match=r"sfa: dtype float32.*float8_e4m3fn"):
        nd.reference(a, b1, b2, sfa.astype(np.float32), sfb1, sfb2)
    with pytest.raises(nd.InputError, match=r"a: dtype uint16, expected packed E2M1.*astype\(np.uint8\)"):
        nd.reference(a.astype(np.uint16), b1, b2, sfa, sfb1, sfb2)
    c = nd.reference(a, b1, b2, sfa, sfb1, sfb2)[0]
    with pytest.raises(nd.InputError, match=r"c: dtype float32, expected float16.*astype\(np.float16\)"):
        nd.check(c.astype(np.float32), a, b1, b2, sfa, sfb1, sfb2)


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
