#!/usr/bin/env python3
"""emulate_fp4_selftest.py - the FP4 emulation of torch._scaled_mm (harness/backends/nvfp4_driver/
emulate_fp4.py) checked on a CUDA device, where CPU CI cannot: install's device rule, the CUDA
kernel registration in eager mode, under torch.compile (default and max-autotune) and inside a
torch.cuda.graph capture, and that every other dtype still reaches the real kernel.

Run from the repository root on the GPU machine (torch with CUDA; nvfp4_dual optional: with it the
reference and the check are the project's exact ones, without it an independent float64 decode here):
    PYTHONPATH=build/python python3 tools/emulate_fp4_selftest.py          # all checks
    python3 tools/emulate_fp4_selftest.py --quick                          # without the 256x4096x7168 case
One line per check, PASS or FAIL with the reason (INFO lines only inform); exit 0 when every check
passes, 1 when one fails, 2 when there is no torch or no CUDA device.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness", "backends"))
from nvfp4_driver import emulate_fp4 as em  # noqa: E402

try:
    import nvfp4_dual as nd
except ImportError:
    nd = None

results = []  # (check name, passed)


def report(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, ": " + detail if detail else ""), flush=True)
    results.append((name, ok))


def run_check(name, fn):
    """fn() returns (ok, detail); an exception is a FAIL naming it."""
    try:
        ok, detail = fn()
    except Exception as e:  # noqa: BLE001 - every failure becomes one FAIL line
        ok, detail = False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    report(name, ok, detail)


# --- inputs and the exact reference (numpy, batch of one) ----------------------------------------

def make_case(M, N, K, seed):
    """(a, b1, b2, sfa, sfb1, sfb2) uint8, plain scales: nvfp4_dual's gpumode/normal cases, or
    GPU MODE's data (bytes masked with 0xBB, scale bytes of normal values below 1: 0x08..0x37)."""
    if nd is not None:
        return tuple(nd.generate((M, N, K), "gpumode" if seed % 2 else "normal", seed))
    rng = np.random.default_rng(seed)
    data = [(rng.integers(0, 256, (r, K // 2)) & 0xBB).astype(np.uint8) for r in (M, N, N)]
    scales = [rng.integers(0x08, 0x38, (r, K // 16)).astype(np.uint8) for r in (M, N, N)]
    return tuple(data + scales)


def decode64(packed, scales):
    """Bit-level float64 decode written apart from the emulation's tables (docs/design.md §1.2)."""
    lo, hi = packed & 15, packed >> 4
    codes = np.stack([lo, hi], axis=-1).reshape(packed.shape[0], -1)
    mag = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])[codes & 7] * np.where(codes & 8, -1.0, 1.0)
    e, m = (scales >> 3) & 15, (scales & 7).astype(np.float64)
    s = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e.astype(np.float64) - 7))
    s = np.where(scales & 0x80, -s, s)
    s = np.where((scales & 0x7F) == 0x7F, np.nan, s)
    return mag * np.repeat(s, 16, axis=1)


def exact_products(case):
    """(g, u) float64: nvfp4_dual's exact ones, or the float64 decode's (exact for these data)."""
    if nd is not None:
        _, g, u = nd.reference(*case)
        return g, u
    a, b1, b2, sfa, sfb1, sfb2 = case
    A = decode64(a, sfa)
    return A @ decode64(b1, sfb1).T, A @ decode64(b2, sfb2).T


def check_dual(c, case):
    """The fp16 dual-GEMM output against the reference: nvfp4_dual.check, else GPU MODE's rule."""
    if nd is not None:
        r = nd.check(c, *case)
        return r.ok, "" if r.ok else str(r).splitlines()[0]
    g, u = exact_products(case)
    with np.errstate(over="ignore"):
        ref = g / (1 + np.exp(-g)) * u
    bad = np.abs(c.astype(np.float64) - ref) > 1e-3 + 1e-3 * np.abs(ref)
    return not bad.any(), "%d of %d elements over GPU MODE's tolerance" % (bad.sum(), bad.size)


def to_device(case):
    """torch._scaled_mm's NVFP4 arguments on the GPU: a (M, K/2); b1, b2 transposed views of (N, K/2);
    1-D blocked scales (GPU MODE's to_blocked)."""
    fp4 = [torch.from_numpy(x.copy()).cuda().view(torch.float4_e2m1fn_x2) for x in case[:3]]
    sf = [torch.from_numpy(em.plain_to_blocked(x)).cuda().view(torch.float8_e4m3fn) for x in case[3:]]
    return [fp4[0], fp4[1].t(), fp4[2].t()] + sf


def dual(a, b1, b2, sa, sb1, sb2):
    g = torch._scaled_mm(a, b1, sa, sb1, bias=None, out_dtype=torch.float32)
    u = torch._scaled_mm(a, b2, sa, sb2, bias=None, out_dtype=torch.float32)
    return (torch.nn.functional.silu(g) * u).to(torch.float16)


def same_bits(x, y):
    return x.shape == y.shape and bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))


# --- the checks ----------------------------------------------------------------------------------

def check_eager(M, N, K, seed):
    case = make_case(M, N, K, seed)
    a, b1, _, sa, sb1, _ = to_device(case)
    g32 = torch.from_numpy(exact_products(case)[0]).float()
    results = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        got = torch._scaled_mm(a, b1, sa, sb1, out_dtype=dtype).cpu()
        results.append(same_bits(got.float().numpy(), g32.to(dtype).float().numpy()))
    bias = torch.linspace(-3, 3, N, dtype=torch.bfloat16, device="cuda")
    got = torch._scaled_mm(a, b1, sa, sb1, bias=bias, out_dtype=torch.bfloat16).cpu()
    results.append(torch.equal(got, (g32 + bias.cpu().float()).to(torch.bfloat16)))
    return all(results), "fp32/bf16/fp16/bf16+bias equal to the exact product rounded once: %s" % results


def check_no_sync():
    case = make_case(256, 128, 512, 21)
    args = to_device(case)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        dual(*args)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return True, "no synchronizing call under set_sync_debug_mode('error')"


def check_out_and_refusals():
    case = make_case(128, 64, 256, 22)
    a, b1, _, sa, sb1, _ = to_device(case)
    out = torch.empty(0, device="cuda")
    torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32, out=out)
    ok_out = same_bits(out.cpu().numpy(), exact_products(case)[0].astype(np.float32))
    refused = []
    for kwargs in (dict(out_dtype=torch.float32, use_fast_accum=True), dict(out_dtype=None)):
        try:
            torch._scaled_mm(a, b1, sa, sb1, **kwargs)
        except RuntimeError:
            refused.append(True)
    try:
        torch._scaled_mm(a, b1, sa[:-4], sb1, out_dtype=torch.float32)
    except RuntimeError:
        refused.append(True)
    return ok_out and len(refused) == 3, ".out overload exact: %s; refusals: %d of 3" % (ok_out, len(refused))


def fp8_call():
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(64, 128, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(96, 128, device="cuda", generator=g).to(torch.float8_e4m3fn).t()
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    return a, b, sa, sb, torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)


def check_fallback(before):
    a, b, sa, sb, _ = fp8_call()
    calls = em.emulated_calls()
    got = fp8_call()[4]
    close = torch.allclose(got.float(), (a.float() @ b.float()), rtol=2e-2, atol=1e-1)
    same = torch.equal(got, before)
    return (em.emulated_calls() == calls and same and close,
            "fp8 e4m3 tensorwise: emulation not called %s, identical to before install %s, close to fp32 %s"
            % (em.emulated_calls() == calls, same, close))


def check_compile(mode):
    torch._dynamo.reset()
    fn = torch.compile(dual, mode=mode, fullgraph=True)
    cases = [make_case(256, 256, 512, 30 + i) for i in range(4)]
    before = em.emulated_calls()
    oks = []
    for case in cases:  # max-autotune's CUDA graph trees: warm-up, record, then replays
        out = fn(*to_device(case)).cpu().numpy()
        oks.append(check_dual(out, case)[0])
    calls = em.emulated_calls() - before
    return all(oks) and calls >= 2, "outputs right on 4 input sets %s; emulated calls %d" % (oks, calls)


def check_graph():
    first, second = make_case(192, 128, 384, 40), make_case(192, 128, 384, 41)
    static = to_device(first)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dual(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = dual(*static)
    graph.replay()
    ok_first = check_dual(out.cpu().numpy(), first)[0]
    for dst, src in zip(static, to_device(second)):
        dst.view(torch.uint8).copy_(src.view(torch.uint8))
    calls = em.emulated_calls()
    graph.replay()
    torch.cuda.synchronize()
    ok_second, detail = check_dual(out.cpu().numpy(), second)
    return (ok_first and ok_second and em.emulated_calls() == calls,
            "replay right on the captured set %s and after new values were copied in %s %s"
            % (ok_first, ok_second, detail))


def time_emulated(M, N, K):
    args = to_device(make_case(M, N, K, 50))
    for _ in range(2):
        dual(*args)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        dual(*args)
    end.record()
    torch.cuda.synchronize()
    print("INFO emulated dual GEMM %dx%dx%d: %.3f ms per call (emulated, not comparable to FP4 hardware)"
          % (M, N, K, start.elapsed_time(end) / 5), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 256x4096x7168 case and the timing")
    args = parser.parse_args()
    global torch
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return 2
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 2
    cc = torch.cuda.get_device_capability()
    print("INFO %s, compute capability %d.%d, torch %s, reference: %s" % (
        torch.cuda.get_device_name(), cc[0], cc[1], torch.__version__,
        "nvfp4_dual (exact)" if nd is not None else "float64 decode in this script"), flush=True)
    fp8_before = fp8_call()[4]
    try:
        a, b1, _, sa, sb1, _ = to_device(make_case(128, 64, 256, 1))
        torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32)
        torch.cuda.synchronize()
        print("INFO before install, the real kernel ran an NVFP4 _scaled_mm", flush=True)
    except Exception as e:  # noqa: BLE001
        print("INFO before install, the real kernel refused NVFP4: %s" % str(e).splitlines()[0], flush=True)

    notice = em.install("auto")
    expected = not em.fp4_tensor_cores()  # auto installs exactly where FP4 tensor cores are missing
    report("install-auto", (notice is not None) == expected == em.installed(),
           notice or "not installed: this device has FP4 tensor cores")
    if notice is None:
        notice = em.install("on")
    report("install-idempotent", em.install("auto") == notice and em.installed(), notice)

    shapes = [(128, 128, 256), (200, 96, 96), (1, 16, 32), (300, 144, 448)]
    if not args.quick:
        shapes.append((256, 4096, 7168))
    for i, (M, N, K) in enumerate(shapes):
        run_check("eager-%dx%dx%d" % (M, N, K), lambda: check_eager(M, N, K, 10 + i))
    run_check("no-host-sync", check_no_sync)
    run_check("out-overload-and-refusals", check_out_and_refusals)
    run_check("fallback-fp8", lambda: check_fallback(fp8_before))
    run_check("compile-default", lambda: check_compile(None))
    run_check("compile-max-autotune", lambda: check_compile("max-autotune"))
    run_check("cuda-graph-capture-replay", check_graph)
    if not args.quick:
        time_emulated(256, 4096, 7168)
    failed = [name for name, ok in results if not ok]
    print("%d passed, %d failed%s" % (len(results) - len(failed), len(failed),
                                      ": " + " ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
