# check(), Report and assert_dual_gemm_close: accepts the reference's output, rejects a corrupted
# one with the element named, reports the flags, and renders the harness's own text and JSON.
import json
import re
import subprocess

import numpy as np
import pytest

import nvfp4_dual as nd
from conftest import GOLDEN, INPUTS, golden_cases, load_case


def corrupt(c, index, steps):
    """`c` with one element moved `steps` fp16 values away (bit pattern arithmetic)."""
    bad = c.copy()
    bits = bad.view(np.uint16)
    bits[index] = bits[index] + steps
    return bad


@pytest.mark.parametrize("case", golden_cases())
def test_golden_output_passes(case):
    g = load_case(case)
    r = nd.check(g["c"], *(g[f] for f in INPUTS))
    assert r.ok, str(r)
    d = r.to_dict()
    assert d["ok"] is True and d["metrics"]["over_tolerance"] == 0 and d["metrics"]["max_ulp"] == 0


def test_corrupted_output_fails_naming_the_element():
    x = nd.generate("64x96x256", "normal", 5)
    c, _, _ = nd.reference(*x)
    assert nd.check(c, *x).ok
    r = nd.check(corrupt(c, (17, 42), 40), *x)
    assert not r.ok
    m = r.metrics
    assert m["over_tolerance"] == 1 and m["max_ulp"] == 40
    assert (m["worst"][0]["l"], m["worst"][0]["m"], m["worst"][0]["n"]) == (0, 17, 42)
    assert m["ulp_histogram"]["33-64"] == 1 and m["ulp_histogram"]["0"] == 64 * 96 - 1
    text = str(r)
    assert "check of c against the exact reference: FAIL" in text
    assert "worst (0,17,42)" in text
    assert "GPU MODE check" in text and "FAIL (1 mismatches)" in text


def test_one_ulp_within_tolerance_and_nan_rejected():
    x = nd.generate("32x32x4096", "normal", 2)
    c, _, _ = nd.reference(*x)
    r = nd.check(corrupt(c, (3, 3), 1), *x)
    # One fp16 step is within the worst-case bound at K = 4096, but this element's G and U are exact in
    # fp32 (the exactness certificate, docs/design.md §4.11): a correct path rounds it correctly.
    assert r.max_ulp == 1 and r.metrics["over_tolerance"] == 0
    assert r.metrics["certificate"]["violations"] == 1 and not r.ok
    nan = c.copy()
    nan[5, 6] = np.nan
    r = nd.check(nan, *x)
    assert not r.ok and r.metrics["nan_mismatch"] == 1


def test_batch_last_output():
    g = load_case("batched_3x6x96x2_seed2")
    last = [np.moveaxis(g[f], 0, 2) for f in INPUTS]
    c_last = np.moveaxis(g["c"], 0, 2)
    assert nd.check(c_last, *last, batch_last=True).ok
    bad = np.moveaxis(corrupt(g["c"], (1, 2, 3), 500), 0, 2)
    r = nd.check(bad, *last, batch_last=True)
    assert not r.ok and (r.metrics["worst"][0]["l"], r.metrics["worst"][0]["m"], r.metrics["worst"][0]["n"]) == (1, 2, 3)
    with pytest.raises(nd.InputError, match="c: shape"):
        nd.check(g["c"], *last, batch_last=True)  # batch-first output with batch-last inputs


def test_output_dtype_is_checked():
    x = nd.generate("8x8x32", "normal", 1)
    c, _, _ = nd.reference(*x)
    with pytest.raises(nd.InputError, match="c: dtype float32"):
        nd.check(c.astype(np.float32), *x)
    assert nd.check(c.view(np.uint16), *x).ok  # raw fp16 bits are accepted


def test_flags_degenerate_and_suspicious_scales():
    x = nd.generate("1x1x16", "gpumode", 7)
    c, _, _ = nd.reference(*x)
    r = nd.check(c, *x)
    assert r.ok and r.degenerate and "DEGENERATE reference" in str(r)
    x = nd.generate("64x64x256", "normal", 7)
    assert not nd.check(nd.reference(*x)[0], *x).degenerate
    g = load_case("nan_scale_3x5x32_seed4")
    r = nd.check(g["c"], *(g[f] for f in INPUTS))
    assert r.ok and any("NaN scale" in w for w in r.warnings)
    assert "warning: suspicious data" in str(r)


def test_to_dict_is_the_harness_json():
    x = nd.generate("16x16x64", "uniform", 3)
    c, _, _ = nd.reference(*x)
    r = nd.check(corrupt(c, (0, 0), 3000), *x)
    d = r.to_dict()
    assert set(d) >= {"ok", "case", "shape", "degenerate", "warnings", "metrics"}
    assert d["shape"] == "16x16x64" and d["ok"] is False
    assert d["metrics"]["gpumode_check"]["pass"] is False
    assert json.loads(json.dumps(d)) == d
    assert r.to_dict() is not d  # a fresh copy each time


def test_assert_dual_gemm_close():
    x = nd.generate("24x40x128", "normal", 9)
    c, _, _ = nd.reference(*x)
    assert nd.assert_dual_gemm_close(c, *x).ok
    bad = corrupt(c, (2, 3), 100)
    report_text = _normalize(str(nd.check(bad, *x)))
    with pytest.raises(AssertionError) as e:
        nd.assert_dual_gemm_close(bad, *x)
    assert _normalize(str(e.value)) == report_text and "worst (0,2,3)" in report_text
    with pytest.raises(AssertionError, match="^my kernel\ncase: arrays"):
        nd.assert_dual_gemm_close(bad, *x, msg="my kernel")
    with pytest.raises(AssertionError, match="^wrapped: case: arrays"):
        nd.assert_dual_gemm_close(bad, *x, msg=lambda text: "wrapped: " + text)


def _normalize(text):
    return re.sub(r"exact reference in [0-9.]+ s", "exact reference in T s", text)


@pytest.mark.parametrize("wrong", [False, True])
def test_text_is_the_clis(wrong, harness_bin, tmp_path):
    """str(check_case_dir(...)) is byte for byte what `harness --inputs DIR --check C.npy` prints."""
    g = load_case("ragged_9x11x512_seed6")
    for f in INPUTS:
        np.save(tmp_path / f"{f}.npy", g[f])
    out = tmp_path / "out.npy"
    c = g["c"].copy()
    if wrong:  # the largest finite element negated, and one more moved by 3 steps
        big = np.unravel_index(np.nanargmax(np.where(np.isfinite(c), np.abs(c), 0)), c.shape)
        c[big] = -c[big]
        c = corrupt(c, (0, 0), 3)
    np.save(out, c)
    cli = subprocess.run([harness_bin, "--inputs", str(tmp_path), "--check", str(out)], capture_output=True,
                         text=True)
    r = nd.check_case_dir(tmp_path, out)
    assert r.ok != wrong and cli.returncode == (1 if wrong else 0)
    assert _normalize(str(r)) == _normalize(cli.stdout)
    # check() on the same arrays renders the same comparison (only the names differ).
    arrays = nd.check(np.load(out), *(g[f] for f in INPUTS))
    assert str(arrays).splitlines()[2:] == str(r).splitlines()[2:]


def test_json_fields_are_the_clis(harness_bin, tmp_path):
    """to_dict()["metrics"] has the fields of a trial's metrics in `harness --json` (a field added to
    the harness's report must reach Python: this fails until it does)."""
    g = load_case("ragged_5x7x64_seed1")
    for f in INPUTS:
        np.save(tmp_path / f"{f}.npy", g[f])
    report = tmp_path / "report.json"
    subprocess.run([harness_bin, "--inputs", str(tmp_path), "--verify", "plain", "--backend", "cpu", "--json",
                    str(report)], check=True, capture_output=True)
    trial = json.loads(report.read_text())["trials"][0]
    optional = {"g_out_of_bound", "u_out_of_bound"}  # present only for paths exposing intermediates
    cli_keys = set(trial["metrics"]) - optional
    ours = set(nd.check(g["c"], *(g[f] for f in INPUTS)).metrics) - optional
    assert ours == cli_keys


def test_a_wrong_output_is_named_by_what_it_computes():
    # The output of a kernel that reads B1's nibbles high first, made by swapping them in the inputs:
    # the report names the misreading and its JSON carries it (docs/design.md §4.14).
    x = nd.generate("64x96x256", "normal", 8)
    swapped = x._replace(b1=((x.b1 << 4) | (x.b1 >> 4)).astype(np.uint8))
    c, _, _ = nd.reference(*swapped)
    r = nd.check(c, *x)
    assert not r.ok
    assert "misreading: the output matches B1's FP4 nibbles read high first," in str(r)
    assert r.metrics["misreading"].startswith("the output matches B1's FP4 nibbles read high first,")
    good, _, _ = nd.reference(*x)
    assert nd.check(good, *x).metrics["misreading"] == ""
