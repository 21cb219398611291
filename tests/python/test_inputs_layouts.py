# generate, quantize/dequantize and the scale layouts (plain, 128x4 blocked, CuTe permuted view).
import numpy as np
import pytest

import nvfp4_dual as nd


def test_generate_is_seeded_and_shaped():
    a = nd.generate("5x7x64", "uniform", 11)
    b = nd.generate((5, 7, 64), "uniform", 11)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a.a, nd.generate("5x7x64", "uniform", 12).a)
    assert [x.shape for x in a] == [(5, 32), (7, 32), (7, 32), (5, 4), (7, 4), (7, 4)]
    assert all(x.dtype == np.uint8 for x in a)
    batched = nd.generate("5x7x64x3", "edge", 1)
    assert batched.a.shape == (3, 5, 32)
    last = nd.generate("5x7x64x3", "edge", 1, batch_last=True)
    assert last.sfb2.shape == (7, 4, 3) and np.array_equal(np.moveaxis(last.sfb2, 2, 0), batched.sfb2)
    assert set(nd.distributions()) >= {"normal", "uniform", "edge", "gpumode", "ones", "identity"}
    with pytest.raises(nd.InputError, match="nosuch"):
        nd.generate("5x7x64", "nosuch", 1)
    with pytest.raises(nd.InputError, match="multiple of 16"):
        nd.generate("5x7x40", "normal", 1)


def test_quantize_known_block():
    # One block with amax 6: scale E4M3(6/6) = 1.0 = 0x38; the values are E2M1 codes exactly.
    vals = np.array([1, 6, -0.5, 0, 1.5, -6, 2, 3, 4, -4, 0.5, -1, -1.5, -2, -3, 0], np.float32)
    packed, scales = nd.quantize(vals)
    assert scales.tolist() == [0x38]
    codes = [2, 7, 9, 0, 3, 15, 4, 5, 6, 14, 1, 10, 11, 12, 13, 0]
    assert packed.tolist() == [codes[2 * j] | (codes[2 * j + 1] << 4) for j in range(8)]  # low nibble first
    assert np.array_equal(nd.dequantize(packed, scales), vals.astype(np.float64))


def test_quantize_shapes_and_errors():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 64)).astype(np.float32)
    packed, scales = nd.quantize(x)
    assert packed.shape == (2, 3, 32) and scales.shape == (2, 3, 4)
    # Row by row gives the same bytes (the leading dimensions are only a batch of rows).
    for i in range(2):
        for j in range(3):
            p1, s1 = nd.quantize(x[i, j])
            assert np.array_equal(p1, packed[i, j]) and np.array_equal(s1, scales[i, j])
    # Every element within half the widest E2M1 gap (2, between codes 4 and 6) of its block's scale.
    back = nd.dequantize(packed, scales)
    scale = nd.dequantize(np.full_like(packed, 0x22), scales)  # code 2 is 1.0: the decoded scale
    assert np.all(np.abs(back - x) <= scale * 1.0)
    x[1, 2, 5] = np.nan
    with pytest.raises(nd.InputError):
        nd.quantize(x)
    with pytest.raises(nd.InputError, match="multiple of 16"):
        nd.quantize(np.ones((4, 40), np.float32))


def blocked_offset(r, c, l, rows, cols):
    """docs/design.md §1, written out independently of the library."""
    Rt, Ct = -(-rows // 128), -(-cols // 4)
    return l * Rt * Ct * 512 + (r // 128) * Ct * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


@pytest.mark.parametrize("L, rows, cols", [(1, 1, 1), (1, 130, 5), (2, 257, 9), (3, 128, 4)])
def test_blocked_layout(L, rows, cols):
    rng = np.random.default_rng(rows)
    plain = rng.integers(1, 256, (L, rows, cols), dtype=np.uint8)
    blocked = nd.to_blocked(plain)
    Rt, Ct = -(-rows // 128), -(-cols // 4)
    assert blocked.shape == (L, Rt * Ct * 512)
    flat = blocked.reshape(-1)
    expect = np.zeros_like(flat)
    for l in range(L):
        for r in range(rows):
            for c in range(cols):
                expect[blocked_offset(r, c, l, rows, cols)] = plain[l, r, c]
    assert np.array_equal(flat, expect)  # also: padding is zero
    assert np.array_equal(nd.from_blocked(blocked, rows, cols), plain)
    assert nd.compare_scale_layouts(plain, blocked) is None
    if L == 1:
        assert np.array_equal(nd.to_blocked(plain[0]), blocked[0])
        assert np.array_equal(nd.from_blocked(blocked[0], rows, cols), plain[0])
    broken = blocked.copy()
    broken.reshape(-1)[blocked_offset(rows - 1, cols - 1, L - 1, rows, cols)] ^= 1
    msg = nd.compare_scale_layouts(plain, broken)
    assert msg is not None and f"(l {L - 1}, r {rows - 1}, c {cols - 1})" in msg, msg


@pytest.mark.parametrize("L, rows, cols", [(1, 256, 448), (2, 130, 6), (1, 7, 3)])
def test_cute_permuted_view(L, rows, cols):
    rng = np.random.default_rng(cols)
    plain = rng.integers(1, 256, (L, rows, cols), dtype=np.uint8)
    perm = nd.to_cute_permuted(plain)
    Rt, Ct = -(-rows // 128), -(-cols // 4)
    assert perm.shape == (32, 4, Rt, 4, Ct, L)
    assert perm.strides == (16, 4, Ct * 512, 1, 512, Rt * Ct * 512)
    r, c, l = np.meshgrid(np.arange(rows), np.arange(cols), np.arange(L), indexing="ij")
    assert np.array_equal(perm[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l], plain[l, r, c])
    # Uninitialized padding (as GPU MODE's generator leaves it) is ignored on the way back.
    filled = np.full((L, Rt, Ct, 32, 4, 4), 0xFF, np.uint8).transpose(3, 4, 1, 5, 2, 0)
    filled[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l] = plain[l, r, c]
    assert np.array_equal(nd.from_cute_permuted(filled, rows, cols), plain)
    last = nd.from_cute_permuted(perm, rows, cols, batch_last=True)
    assert last.shape == (rows, cols, L) and np.array_equal(np.moveaxis(last, 2, 0), plain)
    assert np.array_equal(nd.to_cute_permuted(last, batch_last=True), perm)
    with pytest.raises(nd.InputError, match="permuted: shape"):
        nd.from_cute_permuted(perm, rows + 128, cols)
