"""harness/backends/nvfp4_driver/emulate_fp4.py: the FP4 emulation of torch._scaled_mm (issue 34).

Without torch (CI): the format facts over every code (against ml_dtypes), the decode over every byte
and scale (against nvfp4_dual.dequantize), the blocked <-> plain conversion (against nvfp4_dual's
to_blocked/from_blocked, the closed formula of docs/design.md §1.4, GPU MODE's to_blocked tensor
operations replayed in numpy, and the CuTe permuted view the example submission reads), and the
emulated GEMM and dual GEMM of the numpy twin against the exact reference (nvfp4_dual.reference and
check). With torch (CPU only is enough): the kernel registered on the CPU dispatch key, the one a
machine without a GPU can exercise: eager, the .out overload, the fallback of every other dtype to
the original kernel, the refusals, torch.compile, uninstall, and examples/gpumode_b200 end to end.
The CUDA-only parts (install's device rule, graph capture) are tools/emulate_fp4_selftest.py's.

nvfp4_dual is the project's module (python/); it is looked for on sys.path, then in
$NVFP4_PYTHON_DIR, then in BUILD/python of this checkout (tools/test.sh builds it there).
Plain unittest (python3 -m pytest tests/python_driver, or tests/python_driver/run_tests.py).
"""
import importlib.util
import os
import sys
import types
import unittest
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "harness", "backends"))
from nvfp4_driver import emulate_fp4 as em  # noqa: E402

del sys.path[0]


def _import_optional(name, extra_dirs=()):
    try:
        return __import__(name)
    except ImportError:
        pass
    for folder in extra_dirs:
        if folder and os.path.isdir(os.path.join(folder, name)):
            sys.path.insert(0, folder)
            try:
                return __import__(name)
            except ImportError:
                sys.path.remove(folder)
    return None


nd = _import_optional("nvfp4_dual", (os.environ.get("NVFP4_PYTHON_DIR"), os.path.join(ROOT, "build", "python")))
ml_dtypes = _import_optional("ml_dtypes")
torch = _import_optional("torch")
needs_nd = unittest.skipIf(nd is None, "nvfp4_dual not importable (NVFP4_PYTHON=ON tools/bootstrap.sh build)")
needs_torch = unittest.skipIf(torch is None, "torch not installed")

# rows x scale columns: rows below, at and above 128; K/16 below 4, a multiple of 4, and not.
SCALE_SHAPES = [(1, 1), (5, 3), (128, 4), (130, 5), (77, 6), (300, 9), (256, 448)]
# (shape, distribution, seed) of the GEMM cases; N % 16 == 0 and K % 32 == 0 as torch's contract asks.
GEMM_CASES = [("128x128x256", "normal", 1), ("100x48x96", "gpumode", 2), ("300x80x352", "uniform", 3),
              ("64x16x32", "edge", 4), ("1x16x64", "normal", 5), ("130x144x448", "suspicious", 6)]


def design_offset(r, c, cols):
    """docs/design.md §1.4, written out: the blocked byte offset of plain element (r, c)."""
    ct = -(-cols // 4)
    return (r // 128) * (ct * 512) + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)


def random_scales(rows, cols, seed):
    return np.random.default_rng(seed).integers(0, 256, (rows, cols), dtype=np.uint8)


def same_bits(x, y):
    """Equal values with NaN where the other has NaN (fp32/fp16 arrays of one shape)."""
    return x.shape == y.shape and bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))


class FormatTest(unittest.TestCase):
    @unittest.skipIf(ml_dtypes is None, "ml_dtypes not installed")
    def test_every_e4m3fn_byte(self):
        expect = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        got = np.array([em.e4m3fn_value(b) for b in range(256)])
        self.assertTrue(np.array_equal(np.isnan(got), np.isnan(expect)))
        ok = ~np.isnan(expect)
        self.assertTrue(np.array_equal(got[ok], expect[ok]))
        self.assertTrue(np.array_equal(np.signbit(got[ok]), np.signbit(expect[ok])))

    @unittest.skipIf(ml_dtypes is None or not hasattr(ml_dtypes, "float4_e2m1fn"), "ml_dtypes without float4_e2m1fn")
    def test_every_e2m1_code(self):
        expect = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        got = np.array([em.e2m1_value(c) for c in range(16)])
        self.assertTrue(np.array_equal(got, expect) and np.array_equal(np.signbit(got), np.signbit(expect)))

    @needs_nd
    def test_decode_every_byte_with_every_scale(self):
        # Row r: the 256 byte values starting at r, scale byte of block j = (r + 3 j) % 256, so every
        # byte meets every scale byte across the rows.
        rows = np.arange(256)[:, None]
        packed = ((rows + np.arange(256)[None, :]) % 256).astype(np.uint8)
        scales = ((rows + 3 * np.arange(32)[None, :]) % 256).astype(np.uint8)
        got = em.decode(packed, scales, em.make_tables())
        self.assertTrue(same_bits(got, nd.dequantize(packed, scales)))

    def test_decode_refuses_mismatched_scales(self):
        with self.assertRaises(ValueError):
            em.decode(np.zeros((4, 16), np.uint8), np.zeros((4, 3), np.uint8), em.make_tables())


class LayoutTest(unittest.TestCase):
    @needs_nd
    def test_blocked_to_plain_inverts_nvfp4_dual_to_blocked(self):
        for i, (rows, cols) in enumerate(SCALE_SHAPES):
            plain = random_scales(rows, cols, i)
            blocked = nd.to_blocked(plain)
            self.assertTrue(np.array_equal(em.blocked_to_plain(blocked, rows, cols), plain), (rows, cols))
            # Any shape of the same memory is accepted (torch only asks for the element count).
            self.assertTrue(np.array_equal(em.blocked_to_plain(blocked.reshape(-1, 16), rows, cols), plain))

    @needs_nd
    def test_plain_to_blocked_equals_nvfp4_dual_with_zero_padding(self):
        for i, (rows, cols) in enumerate(SCALE_SHAPES):
            plain = random_scales(rows, cols, 100 + i)
            mine = em.plain_to_blocked(plain)
            self.assertTrue(np.array_equal(mine, nd.to_blocked(plain)), (rows, cols))
            self.assertTrue(np.array_equal(nd.from_blocked(mine, rows, cols), plain))

    def test_closed_formula_and_padding(self):
        for i, (rows, cols) in enumerate(SCALE_SHAPES):
            plain = random_scales(rows, cols, 200 + i) | 1  # no zero byte: padding is told apart
            blocked = em.plain_to_blocked(plain)
            self.assertEqual(blocked.size, em.blocked_size(rows, cols))
            r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            offsets = design_offset(r, c, cols)
            self.assertTrue(np.array_equal(blocked[offsets], plain), (rows, cols))
            padding = np.ones(blocked.size, bool)
            padding[offsets.ravel()] = False
            self.assertFalse(blocked[padding].any(), (rows, cols))
            self.assertTrue(np.array_equal(em.blocked_to_plain(blocked, rows, cols), plain))

    def test_gpumode_to_blocked_replayed(self):
        # GPU MODE's reference.py to_blocked on a padded matrix: view (Rt, 128, Ct, 4), permute
        # (0, 2, 1, 3), reshape (-1, 4, 32, 4), transpose (1, 2), flatten.
        for i, (rows, cols) in enumerate(SCALE_SHAPES):
            plain = random_scales(rows, cols, 300 + i)
            rt, ct = -(-rows // 128), -(-cols // 4)
            padded = np.zeros((rt * 128, ct * 4), np.uint8)
            padded[:rows, :cols] = plain
            theirs = padded.reshape(rt, 128, ct, 4).transpose(0, 2, 1, 3).reshape(-1, 4, 32, 4)
            theirs = theirs.transpose(0, 2, 1, 3).reshape(-1)
            self.assertTrue(np.array_equal(em.plain_to_blocked(plain), theirs), (rows, cols))

    @needs_nd
    def test_cute_permuted_view_per_batch_is_blocked(self):
        # examples/gpumode_b200 takes sf*_permuted[..., l].permute(2, 4, 0, 1, 3) as the blocked scales.
        rows, cols, L = 200, 10, 3
        plain = np.random.default_rng(7).integers(0, 256, (L, rows, cols), dtype=np.uint8)
        permuted = nd.to_cute_permuted(plain)
        for l in range(L):
            blocked = np.ascontiguousarray(permuted[..., l].transpose(2, 4, 0, 1, 3)).reshape(-1)
            self.assertTrue(np.array_equal(em.blocked_to_plain(blocked, rows, cols), plain[l]))

    def test_wrong_size_refused(self):
        with self.assertRaises(ValueError):
            em.blocked_to_plain(np.zeros(511, np.uint8), 1, 1)


def dual_gemm_numpy(case):
    """GPU MODE's computation on the numpy twin: two fp32 products, silu(g) * u in fp32, fp16."""
    a, b1, b2, sfa, sfb1, sfb2 = case
    sa = em.plain_to_blocked(sfa)
    g = em.scaled_mm_numpy(a, b1.T, sa, em.plain_to_blocked(sfb1))
    u = em.scaled_mm_numpy(a, b2.T, sa, em.plain_to_blocked(sfb2))
    with np.errstate(over="ignore", invalid="ignore"):
        return g, u, (g / (np.float32(1) + np.exp(-g)) * u).astype(np.float16)


@needs_nd
class NumpyTwinTest(unittest.TestCase):
    def test_products_are_the_exact_reference_rounded_once(self):
        for shape, dist, seed in GEMM_CASES:
            case = nd.generate(shape, dist, seed)
            _, g_ref, u_ref = nd.reference(*case)
            g, u, _ = dual_gemm_numpy(case)
            name = "%s %s seed %d" % (shape, dist, seed)
            self.assertTrue(same_bits(g, g_ref.astype(np.float32)), name)
            self.assertTrue(same_bits(u, u_ref.astype(np.float32)), name)

    def test_dual_gemm_passes_the_check(self):
        for shape, dist, seed in GEMM_CASES:
            case = nd.generate(shape, dist, seed)
            _, _, c = dual_gemm_numpy(case)
            report = nd.check(c, *case)
            self.assertTrue(report.ok, "%s %s seed %d\n%s" % (shape, dist, seed, report))

    def test_fp16_output_and_bias(self):
        case = nd.generate("64x32x64", "normal", 9)
        _, g_ref, _ = nd.reference(*case)
        bias = np.linspace(-2, 2, 32).astype(np.float16)
        got = em.scaled_mm_numpy(case.a, case.b1.T, em.plain_to_blocked(case.sfa), em.plain_to_blocked(case.sfb1),
                                 out_dtype="float16", bias=bias)
        expect = (g_ref.astype(np.float32) + bias.astype(np.float32)).astype(np.float16)
        self.assertTrue(same_bits(got, expect))


class InstallWithoutDeviceTest(unittest.TestCase):
    def test_bad_mode_refused(self):
        with self.assertRaises(ValueError):
            em.install("always")

    @needs_torch
    def test_nothing_installed_without_cuda_or_when_off(self):
        if torch.cuda.is_available():
            self.skipTest("a CUDA device is present: tools/emulate_fp4_selftest.py covers install there")
        self.assertIsNone(em.install("off"))
        self.assertIsNone(em.install("auto"))
        self.assertIsNone(em.install("on"))
        self.assertFalse(em.installed())
        self.assertFalse(em.fp4_tensor_cores())


def torch_case(shape, dist, seed):
    """One nvfp4_dual case as torch._scaled_mm's NVFP4 arguments on the CPU: a (M, K/2), b1 and b2
    as transposed views of (N, K/2), blocked scales 1-D (GPU MODE's to_blocked's shape)."""
    case = nd.generate(shape, dist, seed)
    fp4 = [torch.from_numpy(x.copy()).view(torch.float4_e2m1fn_x2) for x in case[:3]]
    scales = [torch.from_numpy(em.plain_to_blocked(x)).view(torch.float8_e4m3fn) for x in case[3:]]
    return case, fp4[0], fp4[1].t(), fp4[2].t(), scales


@needs_torch
@needs_nd
class TorchKernelTest(unittest.TestCase):
    """The registration on the CPU key: install() registers the same two kernels on CUDA."""

    @classmethod
    def setUpClass(cls):
        em._register("CPU", [torch.device("cpu")])

    @classmethod
    def tearDownClass(cls):
        em.uninstall()

    def test_eager_fp32_is_the_exact_reference_rounded_once(self):
        for shape, dist, seed in GEMM_CASES:
            case, a, b1, _, (sa, sb1, _) = torch_case(shape, dist, seed)
            got = torch._scaled_mm(a, b1, sa, sb1, bias=None, out_dtype=torch.float32)
            self.assertTrue(same_bits(got.numpy(), nd.reference(*case)[1].astype(np.float32)), shape)

    def test_bf16_fp16_outputs_and_bias(self):
        case, a, b1, _, (sa, sb1, _) = torch_case("96x64x128", "normal", 11)
        g32 = torch.from_numpy(nd.reference(*case)[1]).float()
        for dtype in (torch.bfloat16, torch.float16):
            bias = torch.linspace(-1, 1, 64).to(dtype)
            got = torch._scaled_mm(a, b1, sa, sb1, out_dtype=dtype)
            self.assertTrue(torch.equal(got, g32.to(dtype)), dtype)
            got = torch._scaled_mm(a, b1, sa, sb1, bias=bias, out_dtype=dtype)
            self.assertTrue(torch.equal(got, (g32 + bias.float()).to(dtype)), dtype)

    def test_out_overload(self):
        case, a, b1, _, (sa, sb1, _) = torch_case("100x48x96", "gpumode", 12)
        out = torch.empty(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an empty out is sized without a word
            torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32, out=out)
        self.assertTrue(same_bits(out.numpy(), nd.reference(*case)[1].astype(np.float32)))

    def test_out_of_another_shape_is_warned_about_and_resized(self):
        # torch's resize_output (the real kernel's): a non-empty out of the wrong shape is resized
        # with a warning.
        case, a, b1, _, (sa, sb1, _) = torch_case("100x48x96", "gpumode", 12)
        out = torch.empty(5, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32, out=out)
        self.assertTrue(any("out has shape [5, 5] with 25 elements, not the result's [100, 48]" in str(w.message)
                            for w in caught), [str(w.message) for w in caught])
        self.assertTrue(same_bits(out.numpy(), nd.reference(*case)[1].astype(np.float32)))

    def test_other_dtypes_reach_the_original_kernel(self):
        a = torch.randn(32, 64).to(torch.float8_e4m3fn)
        b = torch.randn(48, 64).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0)
        before = em.emulated_calls()
        got = torch._scaled_mm(a, b, one, one, out_dtype=torch.float32)
        original = em._state["original"]["_scaled_mm"].call_boxed(
            torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), a, b, one, one, None, None, torch.float32, False)
        self.assertEqual(em.emulated_calls(), before)
        self.assertTrue(torch.equal(got, original))
        self.assertTrue(torch.allclose(got, a.float() @ b.float(), rtol=1e-5, atol=1e-4))

    def test_refusals_match_the_real_path(self):
        _, a, b1, _, (sa, sb1, _) = torch_case("128x64x128", "normal", 13)
        bad = [dict(use_fast_accum=True, out_dtype=torch.float32), dict(out_dtype=None),
               dict(out_dtype=torch.float32, bias=torch.zeros(64, dtype=torch.bfloat16))]
        for kwargs in bad:
            with self.assertRaises(RuntimeError, msg=str(kwargs)):
                torch._scaled_mm(a, b1, sa, sb1, **kwargs)
        row_major = b1.view(torch.uint8).contiguous().view(torch.float4_e2m1fn_x2)  # no strided FP4 copy in torch
        with self.assertRaisesRegex(RuntimeError, "column-major"):
            torch._scaled_mm(a, row_major, sa, sb1, out_dtype=torch.float32)
        with self.assertRaisesRegex(RuntimeError, "scale_a must be contiguous with"):
            torch._scaled_mm(a, b1, sa[:-4], sb1, out_dtype=torch.float32)

    def test_torch_compile_calls_the_emulation(self):
        case, a, b1, b2, (sa, sb1, sb2) = torch_case("64x32x128", "gpumode", 14)

        def dual(a, b1, b2, sa, sb1, sb2):
            g = torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32)
            u = torch._scaled_mm(a, b2, sa, sb2, out_dtype=torch.float32)
            return (torch.nn.functional.silu(g) * u).to(torch.float16)

        before = em.emulated_calls()
        got = torch.compile(dual, fullgraph=True)(a, b1, b2, sa, sb1, sb2)
        self.assertGreaterEqual(em.emulated_calls() - before, 2)
        report = nd.check(got.numpy(), *case)
        self.assertTrue(report.ok, str(report))


@needs_torch
class InstallConcurrencyTest(unittest.TestCase):
    """install() from many threads at once registers once: the check and the registration are one
    step under the module's lock. The device is stood in for (install's CUDA queries patched), and
    the registration is a slow stand-in that widens the window a race would need."""

    def test_threads_register_once(self):
        import threading
        import time
        from unittest import mock
        calls = []

        def slow_register(key, devices):
            if em.installed():
                raise RuntimeError("emulate_fp4: already registered (uninstall() first)")
            calls.append(key)
            time.sleep(0.05)
            em._state["lib"] = types.SimpleNamespace(_destroy=lambda: None)

        patches = [mock.patch.object(em, "_register", slow_register),
                   mock.patch.object(torch.cuda, "is_available", lambda: True),
                   mock.patch.object(torch.cuda, "current_device", lambda: 0),
                   mock.patch.object(torch.cuda, "get_device_capability", lambda device=None: (9, 0)),
                   mock.patch.object(torch.cuda, "get_device_name", lambda device=None: "stand-in")]
        for p in patches:
            p.start()
        try:
            notices, errors = [], []

            def install():
                try:
                    notices.append(em.install("on"))
                except Exception as e:  # a second registration racing the first
                    errors.append(e)
            threads = [threading.Thread(target=install) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual((calls, errors), (["CUDA"], []))
            self.assertEqual(len(set(notices)), 1)
            self.assertIn("FP4 emulated on stand-in", notices[0])
        finally:
            em.uninstall()
            for p in patches:
                p.stop()


@needs_torch
@needs_nd
class TorchUninstallTest(unittest.TestCase):
    def test_uninstall_restores_the_original_kernel(self):
        _, a, b1, _, (sa, sb1, _) = torch_case("128x64x128", "normal", 15)
        em._register("CPU", [torch.device("cpu")])
        self.assertTrue(em.installed())
        torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32)
        em.uninstall()
        self.assertFalse(em.installed())
        calls = em.emulated_calls()
        try:
            torch._scaled_mm(a, b1, sa, sb1, out_dtype=torch.float32)
        except (RuntimeError, NotImplementedError):
            pass  # the CPU kernel has no NVFP4 path: what matters is that ours did not run
        self.assertEqual(em.emulated_calls(), calls)


@needs_torch
@needs_nd
class ExampleSubmissionTest(unittest.TestCase):
    """examples/gpumode_b200/submission.py on the CPU with the emulation on the CPU key, with data
    laid out as the submission driver builds it (batch-last views, the CuTe permuted scales)."""

    @classmethod
    def setUpClass(cls):
        cls.own_task = "task" not in sys.modules
        if cls.own_task:  # GPU MODE's task module, as the driver provides it
            task = type(sys)("task")
            task.input_t, task.output_t = tuple, object
            sys.modules["task"] = task
        em._register("CPU", [torch.device("cpu")])

    @classmethod
    def tearDownClass(cls):
        em.uninstall()
        if cls.own_task:
            del sys.modules["task"]

    def load(self, toggles):
        saved = os.environ.get("NVFP4_TOGGLES")
        os.environ["NVFP4_TOGGLES"] = toggles  # read at import, as the driver hands it over
        try:
            path = os.path.join(ROOT, "examples", "gpumode_b200", "submission.py")
            spec = importlib.util.spec_from_file_location("gpumode_b200_" + toggles.replace("-", "_"), path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        finally:
            if saved is None:
                del os.environ["NVFP4_TOGGLES"]
            else:
                os.environ["NVFP4_TOGGLES"] = saved

    def data(self, M, N, K, L, seed):
        case = [x.reshape((L,) + x.shape[-2:]) for x in nd.generate((M, N, K, L), "gpumode", seed)]
        fp4 = [torch.from_numpy(x.copy()).permute(1, 2, 0).view(torch.float4_e2m1fn_x2) for x in case[:3]]
        sf = [torch.from_numpy(x.copy()).permute(1, 2, 0).view(torch.float8_e4m3fn) for x in case[3:]]
        perm = [torch.from_numpy(np.ascontiguousarray(nd.to_cute_permuted(x).transpose(5, 2, 4, 0, 1, 3)))
                .permute(3, 4, 1, 5, 2, 0).view(torch.float8_e4m3fn) for x in case[3:]]
        c = torch.zeros((L, M, N), dtype=torch.float16).permute(1, 2, 0)
        return case, tuple(fp4 + sf + perm + [c])

    def test_toggles_without_cuda(self):
        for toggles in ("", "warmup-10", "autotune-epilogue"):  # graph-cache and init-at-import need CUDA
            module = self.load(toggles)
            for M, N, K, L, seed in ((128, 64, 256, 1, 1), (96, 32, 128, 2, 2)):
                case, data = self.data(M, N, K, L, seed)
                out = module.custom_kernel(data)
                report = nd.check(out.permute(2, 0, 1).contiguous().numpy(), *case)
                self.assertTrue(report.ok, "%s %s\n%s" % (toggles, (M, N, K, L), report))


if __name__ == "__main__":
    unittest.main()
