"""GPU MODE's nvfp4_dual_gemm inputs, reference and check, reproduced for the rehearsal (rehearse.py).

What the evaluator does (gpu-mode/reference-kernels at f83cb92; docs/gpu-mode.md "Rehearsing the
evaluator" cites each line) and how this module matches it:

  data       problems/nvidia/nvfp4_dual_gemm/reference.py:80-196 generate_input(m, n, k, l, seed).
             With torch (TorchHost) the same generator calls in the same order on the same CUDA
             generator, so the bytes are the evaluator's: manual_seed(seed); randint(255) bytes of
             shape (l, rows, k/2) masked with 0xBB for a, b1, b2 (values 0, +-0.5, +-1, +-1.5); randn
             fp16 (l, m, n) for c; per scale tensor rand float32 (l, rows, k/16) in [0, 1) rounded to
             E4M3FN. Without torch (NumpyHost, NVFP4_DATA = "numpy") the same distributions from
             numpy's generator seeded with the same seed: other bytes, same law.
             The tuple handed to custom_kernel is docs/gpu-mode.md's: batch-last views of batch-first
             buffers; the permuted scale copies are the 128x4 tiled layout with zero padding (the
             evaluator leaves padding unwritten; the task's shapes have none).
  reference  the evaluator multiplies on a B200 (torch._scaled_mm, fp32 output). Here: an exact decode
             of A, B1, B2 to float64, float64 matmuls (at least as accurate as fp32 accumulation),
             G and U rounded to float32, silu(G) * U in float32, one rounding to fp16 (the
             evaluator's epilogue, reference.py:76). Never torch._scaled_mm: the reference must not
             share a code path with an emulated or real FP4 GEMM under test.
  check      utils.py:30-95 verbose_allclose with rtol = atol = 1e-3 (reference.py:199): an element
             mismatches when |out - ref| > atol + rtol * |ref| (evaluated in the output's precision,
             fp16 for fp16), or when NaN, +inf or -inf appear on one side only. The evaluator names
             the count and the first 5 indices in (m, n, l) order; so does check() here, in its own
             words.

Seeds: a secret seed is combined with each case's public seed as the evaluator does
(eval_better_bench.py:62-70, 101-104): public + (public + secret)(public + secret + 1) / 2.
"""
import math
# The host clock of the timed batches, bound when the driver imports this module, before the
# submission is imported: a submission that replaces time.perf_counter does not change the times
# measured here.
from time import perf_counter as _clock

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def combine_seed(public, secret):
    """The seed of one case under a secret seed: Cantor's pairing offset by the public seed, so a
    large secret always gives a large seed (eval_better_bench.py:62-70)."""
    s = public + secret
    return public + s * (s + 1) // 2


def e4m3_value(byte):
    """The value of one E4M3FN byte (bias 7, no infinities, NaN at 0x7F and 0xFF)."""
    if byte & 0x7F == 0x7F:
        return math.nan
    e, m = (byte >> 3) & 15, byte & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if byte & 0x80 else v


def e4m3_from_unit(np, x):
    """float32 values in [0, 1) -> E4M3FN bytes, rounded to nearest, ties to even (what
    torch.Tensor.to(torch.float8_e4m3fn) does for these values). Below 2^-6 the spacing is the
    subnormals' 2^-9; in binade [2^e, 2^(e+1)) it is 2^(e-3)."""
    x = np.asarray(x, dtype=np.float64)
    e = np.floor(np.log2(np.where(x > 0, x, 1.0)))
    spacing = np.exp2(np.maximum(e, -6.0) - 3.0)
    q = np.rint(x / spacing) * spacing  # half to even: the tie goes to the even multiple
    qe = np.floor(np.log2(np.where(q > 0, q, 1.0)))
    normal = q >= 2.0 ** -6
    code_normal = ((qe + 7).astype(np.int64) << 3) | np.rint((q / np.exp2(qe) - 1) * 8).astype(np.int64)
    code_sub = np.rint(q / 2.0 ** -9).astype(np.int64)
    return np.where(normal, code_normal, code_sub).astype(np.uint8)


def tiled_scales(np, plain):
    """(L, rows, K/16) plain scales -> the C-contiguous (L, Rt, Ct, 32, 4, 4) 128x4 tiled buffer,
    zero-padded (element [l, r/128, c/4, r%32, (r%128)/32, c%4] is the scale of row r, column c)."""
    L, rows, cols = plain.shape
    rt, ct = -(-rows // 128), -(-cols // 4)
    padded = np.zeros((L, rt * 128, ct * 4), dtype=plain.dtype)
    padded[:, :rows, :cols] = plain
    return np.ascontiguousarray(padded.reshape(L, rt, 4, 32, ct, 4).transpose(0, 1, 4, 3, 2, 5))


def case_text(case):
    """"256x4096x7168x1 seed 1153" for a report."""
    return "%dx%dx%dx%d seed %d" % (case["m"], case["n"], case["k"], case["l"], case["seed"])


# ---- numpy (NVFP4_DATA = "numpy"; CPU) -------------------------------------------------------------

class NumpyHost:
    """Data, reference, check and clock for a numpy submission: arrays on the CPU, host clock, no
    L2 to clear."""
    kind = "numpy"
    clock = "host clock (time.perf_counter)"

    def __init__(self, np):
        self.np = np
        self.e2m1 = np.array(E2M1_VALUES, dtype=np.float64)
        self.e4m3 = np.array([e4m3_value(b) for b in range(256)], dtype=np.float64)

    def generate(self, m, n, k, l, seed):
        """The task's ten-tuple for one case: numpy's generator, the evaluator's distributions."""
        np = self.np
        rng = np.random.default_rng(seed)
        fp4 = lambda rows: rng.integers(0, 255, size=(l, rows, k // 2), dtype=np.uint8) & np.uint8(0xBB)
        a, b1, b2 = fp4(m), fp4(n), fp4(n)
        c = rng.standard_normal((l, m, n), dtype=np.float32).astype(np.float16)
        sf_k = -(-k // 16)
        sfa, sfb1, sfb2 = (e4m3_from_unit(np, rng.random((l, rows, sf_k), dtype=np.float32)) for rows in (m, n, n))
        last = lambda x: x.transpose(1, 2, 0)
        tiled = lambda x: tiled_scales(np, x).transpose(3, 4, 1, 5, 2, 0)
        return (last(a), last(b1), last(b2), last(sfa), last(sfb1), last(sfb2),
                tiled(sfa), tiled(sfb1), tiled(sfb2), last(c))

    def clone(self, data):
        """New arrays with the same contents and memory layout (torch's clone keeps strides too)."""
        return tuple(self.np.array(x, copy=True, order="K") for x in data)

    def _decode(self, packed, scales):
        """(rows, K/2, L) FP4 pairs, low nibble first, and (rows, K/16, L) E4M3 -> (L, rows, K) float64."""
        np = self.np
        p = packed.transpose(2, 0, 1)
        values = np.empty(p.shape[:2] + (2 * p.shape[2],))
        values[..., 0::2] = self.e2m1[p & 15]
        values[..., 1::2] = self.e2m1[p >> 4]
        return values * np.repeat(self.e4m3[scales.transpose(2, 0, 1)], 16, axis=2)[..., :values.shape[2]]

    def reference(self, data):
        """(M, N, L) float16: exact decode, float64 GEMMs, float32 epilogue, one fp16 rounding."""
        np = self.np
        A = self._decode(data[0], data[3])
        g = np.matmul(A, self._decode(data[1], data[4]).transpose(0, 2, 1)).astype(np.float32)
        u = np.matmul(A, self._decode(data[2], data[5]).transpose(0, 2, 1)).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (g / (np.float32(1) + np.exp(-g)) * u).astype(np.float16)
        return out.transpose(1, 2, 0)

    def check(self, expected, out, rtol, atol):
        """(good, message, mismatches): the evaluator's rule on (M, N, L) arrays. Only a plain
        numpy array of real numbers (floating point or integer) is compared; anything else (a
        subclass such as a masked array, complex, bool, object, bytes, str dtypes) fails with its
        reason, as the evaluator's arithmetic on such an output cannot give a valid check."""
        np = self.np
        if not isinstance(out, np.ndarray):
            return False, "custom_kernel returned %s, not an array of shape %s" % (type(out).__name__, expected.shape), -1
        if type(out) is not np.ndarray:
            return False, ("custom_kernel returned a %s.%s, a subclass of numpy.ndarray; the check takes a plain array "
                           "(the evaluator a plain tensor)" % (type(out).__module__, type(out).__name__)), -1
        if out.dtype.kind not in "fiu":
            return False, ("custom_kernel returned an array of dtype %s; the check compares real numbers (the task's "
                           "output is float16)" % out.dtype), -1
        if out.shape != expected.shape:
            return False, "output has shape %s; the reference has %s" % (out.shape, expected.shape), -1
        e32 = expected.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            if out.dtype == np.float16:
                # Each fp16 operation as a GPU performs it: in float32, rounded to fp16.
                diff = np.abs((out.astype(np.float32) - e32).astype(np.float16))
                tol = (np.float32(atol) + (np.float32(rtol) * np.abs(e32)).astype(np.float16).astype(np.float32))
                tol = tol.astype(np.float16)
            else:
                diff = np.abs(out.astype(np.float64) - e32)
                tol = atol + rtol * np.abs(e32.astype(np.float64))
            bad = diff > tol
        for side in (np.isnan, np.isposinf, np.isneginf):
            bad |= side(out) != side(expected)
        count = int(np.count_nonzero(bad))
        if count == 0:
            return True, "", 0
        first = [tuple(int(i) for i in idx) for idx in np.argwhere(bad)[:5]]
        return False, mismatch_text(count, bad.size, first, [(float(out[i]), float(expected[i])) for i in first],
                                    rtol, atol), count

    def sync(self):
        pass

    def timed(self, body):
        """(seconds of the region, L2-clear seconds, body's result): the host clock around body()."""
        t0 = _clock()
        result = body()
        return _clock() - t0, 0.0, result

    def l2_note(self):
        return "none (CPU data; no device cache to clear)"


def mismatch_text(count, total, first, values, rtol, atol):
    """The check's message: the count, the rule and the first mismatching elements."""
    shown = "; ".join("(%d, %d, %d) output %r reference %r" % (i + v) for i, v in zip(first, values))
    more = "" if count <= len(first) else "; ... %d more" % (count - len(first))
    return ("%d of %d elements mismatch (|output - reference| > %g + %g*|reference|, or NaN/+inf/-inf on one side "
            "only); first at (m, n, l): %s%s" % (count, total, atol, rtol, shown, more))


# ---- torch (GPU) ------------------------------------------------------------------------------------

# The evaluator clears the L2 before each timed batch by filling a fresh randn tensor of
# 16000 x 1024 x 1024 float32 (62.5 GiB; utils.py:191-196, eval_better_bench.py:26, 257). The same
# tensor here when the device has room for it; else the largest number of 1024 x 1024 float32 slabs
# that leaves 2 GiB free, at least 64 (256 MiB, larger than any L2): the clear's cost then is smaller
# than the evaluator's, and the report says so.
EVALUATOR_L2_SLABS = 16000
SLAB_BYTES = 1024 * 1024 * 4


class TorchHost:
    """The same for a torch submission: the evaluator's generator calls on the GPU, CUDA-event
    timing, the L2 cleared as the evaluator does."""
    kind = "torch"
    clock = "CUDA events"

    def __init__(self, np, torch):
        self.np, self.torch = np, torch
        self.e2m1 = torch.tensor(E2M1_VALUES, dtype=torch.float64, device="cuda")
        self.e4m3 = torch.tensor([e4m3_value(b) for b in range(256)], dtype=torch.float64, device="cuda")
        self.slabs = None

    def generate(self, m, n, k, l, seed):
        t = self.torch
        t.manual_seed(seed)
        # The generator calls of reference.py:111-146, in its order: a, b1, b2, c, sfa, sfb1, sfb2.
        fp4 = lambda rows: t.randint(255, size=(l, rows, k // 2), dtype=t.uint8, device="cuda") & 0xBB
        a, b1, b2 = fp4(m), fp4(n), fp4(n)
        c = t.randn((l, m, n), dtype=t.float16, device="cuda")
        sf_k = -(-k // 16)
        scales = [t.rand((l, rows, sf_k), dtype=t.float32, device="cuda").to(t.float8_e4m3fn) for rows in (m, n, n)]
        last = lambda x: x.permute(1, 2, 0)
        fp4v = lambda x: last(x).view(t.float4_e2m1fn_x2)
        data = (fp4v(a), fp4v(b1), fp4v(b2)) + tuple(last(s) for s in scales)
        data += tuple(self._tiled(s) for s in scales)
        return data + (last(c),)

    def _tiled(self, plain):
        """(L, rows, K/16) e4m3 -> the (32, 4, Rt, 4, Ct, L) view of a zero-padded tiled buffer."""
        t = self.torch
        L, rows, cols = plain.shape
        rt, ct = -(-rows // 128), -(-cols // 4)
        padded = t.zeros((L, rt * 128, ct * 4), dtype=t.uint8, device="cuda")
        padded[:, :rows, :cols] = plain.view(t.uint8)
        buf = padded.reshape(L, rt, 4, 32, ct, 4).permute(0, 1, 4, 3, 2, 5).contiguous()
        return buf.view(t.float8_e4m3fn).permute(3, 4, 1, 5, 2, 0)

    def clone(self, data):
        return tuple(x.clone() for x in data)

    def _decode(self, packed, scales):
        t = self.torch
        p = packed.view(t.uint8).permute(2, 0, 1).long()
        values = t.stack((self.e2m1[p & 15], self.e2m1[p >> 4]), dim=-1).reshape(p.shape[0], p.shape[1], -1)
        s = self.e4m3[scales.view(t.uint8).permute(2, 0, 1).long()].repeat_interleave(16, dim=2)
        return values * s[..., :values.shape[2]]

    def reference(self, data):
        t = self.torch
        A = self._decode(data[0], data[3])
        g = t.matmul(A, self._decode(data[1], data[4]).transpose(1, 2)).float()
        u = t.matmul(A, self._decode(data[2], data[5]).transpose(1, 2)).float()
        return (t.nn.functional.silu(g) * u).to(t.float16).permute(1, 2, 0)

    def check(self, expected, out, rtol, atol):
        """The evaluator's rule on tensors. An output on another device than the reference (a
        CPU tensor) fails: the evaluator computes output - reference (utils.py:51) and torch
        raises on the device mismatch; so does an output of a dtype that arithmetic refuses or
        makes meaningless (bool, complex, FP8, FP4)."""
        t = self.torch
        if not isinstance(out, t.Tensor):
            return False, "custom_kernel returned %s, not a tensor of shape %s" % (type(out).__name__,
                                                                                  tuple(expected.shape)), -1
        if tuple(out.shape) != tuple(expected.shape):
            return False, "output has shape %s; the reference has %s" % (tuple(out.shape), tuple(expected.shape)), -1
        if out.device != expected.device:
            return False, ("custom_kernel returned a tensor on %s; the reference is on %s: the evaluator's check "
                           "computes output - reference (utils.py:51), torch raises on the device mismatch and "
                           "eval.py dies" % (out.device, expected.device)), -1
        if out.dtype not in (t.float16, t.bfloat16, t.float32, t.float64, t.int8, t.int16, t.int32, t.int64, t.uint8):
            return False, ("custom_kernel returned a tensor of dtype %s; the evaluator's check needs real numbers "
                           "it can subtract (the task's output is float16)" % out.dtype), -1
        with t.no_grad():
            bad = t.abs(out - expected) > atol + rtol * t.abs(expected)
            for side in (t.isnan, t.isposinf, t.isneginf):
                bad |= t.logical_xor(side(out), side(expected))
            count = int(bad.count_nonzero().item())
            if count == 0:
                return True, "", 0
            first = [tuple(i) for i in t.nonzero(bad)[:5].tolist()]
            values = [(float(out[i]), float(expected[i])) for i in first]
        return False, mismatch_text(count, bad.numel(), first, values, rtol, atol), count

    def sync(self):
        self.torch.cuda.synchronize()

    def _clear_l2(self):
        t = self.torch
        # The size is chosen from the device's free memory at the first clear. Later, the caching
        # allocator may carve the next data objects out of the freed clear tensor's block, so the
        # same size no longer fits: then the cached blocks go back to the driver and the size is
        # chosen again (the evaluator, on a device of 180 GB, never meets this).
        for attempt in range(2):
            if self.slabs is None:
                free, _ = t.cuda.mem_get_info()
                room = (free - (2 << 30)) // SLAB_BYTES
                self.slabs = int(max(64, min(EVALUATOR_L2_SLABS, room)))
            try:
                dummy = t.randn((self.slabs, 1024, 1024), device="cuda")
                del dummy
                return
            except t.cuda.OutOfMemoryError:
                if attempt:
                    raise
                t.cuda.empty_cache()
                self.slabs = None

    def timed(self, body):
        """(seconds of body's region, seconds of the L2 clear before it, body's result), as the
        evaluator times a batch: clear, start event, the calls, end event, synchronize
        (eval_better_bench.py:254-268); one more event before the clear measures the clear."""
        t = self.torch
        before, start, end = (t.cuda.Event(enable_timing=True) for _ in range(3))
        before.record()
        self._clear_l2()
        start.record()
        result = body()
        end.record()
        t.cuda.synchronize()
        return start.elapsed_time(end) / 1e3, before.elapsed_time(start) / 1e3, result

    def l2_note(self):
        if self.slabs is None:
            return "not cleared yet"
        size = "%d x 1024 x 1024 float32 randn (%.1f GiB)" % (self.slabs, self.slabs * SLAB_BYTES / 2.0 ** 30)
        if self.slabs >= EVALUATOR_L2_SLABS:
            return size + ", the evaluator's"
        return size + ": the evaluator fills 62.5 GiB, which this device has no room for; its clear costs more"
