"""The tensors a submission is handed (GPU MODE's `data` tuple over batch-first buffers), the ways
the driver hands a call its inputs, and the read-back of each output."""
import json
import os

from .protocol import TrialError

POISON_BITS = 0x7D5A  # harness/check/compare.hpp kPoisonBits: a signalling NaN no arithmetic produces
ARRAYS = ("a", "b1", "b2", "sfa", "sfb1", "sfb2")
ACTIVATIONS = ("a", "sfa")
# DIR/call<i>/call, written by the harness (external.hpp, SubmissionCall): how call i gets its inputs.
CALL_KINDS = ("in-place activations", "in-place all", "new")
# A note holding this is a FAIL (harness/backends/external.hpp kInputsChangedNote): after a call, a
# tensor of `data` other than c no longer held what the driver had put there.
INPUTS_CHANGED = "the inputs it was handed were changed"
# Likewise (kStreamChangedNote): after the import or a call, torch's current stream was no longer
# the caller's (the default stream the driver calls on).
STREAM_CHANGED = "the current CUDA stream was left changed"
# Likewise (kOutputReusedNote): an output read right after its call no longer held the same bits
# after the later calls: the caller's earlier result was overwritten.
OUTPUT_REUSED = "output changed by a later call"


def load_arrays(folder, np, required):
    """The .npy arrays present in `folder` as batch-first uint8 (L, rows, cols)."""
    out = {}
    for name in ARRAYS:
        path = os.path.join(folder, name + ".npy")
        if not os.path.exists(path):
            if required:
                raise TrialError("input case %s: %s.npy is missing" % (folder, name))
            continue
        arr = np.load(path, allow_pickle=False)
        if arr.dtype != np.uint8 or arr.ndim not in (2, 3):
            raise TrialError("input %s: expected a 2-D or 3-D uint8 array, got %s %s" % (path, arr.dtype, arr.shape))
        out[name] = arr[None] if arr.ndim == 2 else arr
    return out


def read_alphas(folder):
    path = os.path.join(folder, "alphas.json")
    if not os.path.exists(path):
        return 1.0, 1.0
    with open(path) as f:
        d = json.load(f)
    return float(d.get("alpha1", 1.0)), float(d.get("alpha2", 1.0))


def read_call_kind(folder):
    """How checked call i is handed its inputs: one of CALL_KINDS, or None when the folder has no
    `call` file (then the arrays present are copied in place)."""
    path = os.path.join(folder, "call")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        kind = f.read().strip()
    if kind not in CALL_KINDS:
        raise TrialError("%s: unknown call kind %r (known: %s)" % (path, kind, ", ".join(CALL_KINDS)))
    return kind


def case_shape(arrays):
    L, M, K2 = arrays["a"].shape
    N = arrays["b1"].shape[1]
    K = 2 * K2
    expect = {"a": (L, M, K // 2), "b1": (L, N, K // 2), "b2": (L, N, K // 2),
              "sfa": (L, M, K // 16), "sfb1": (L, N, K // 16), "sfb2": (L, N, K // 16)}
    if K % 16 != 0:
        raise TrialError("input case: K = %d is not a multiple of 16" % K)
    for name, shape in expect.items():
        if arrays[name].shape != shape:
            raise TrialError("input case: %s has shape %s; A and B1 imply %s" % (name, arrays[name].shape, shape))
    return M, N, K, L


def tiled_scales(np, plain):
    """(L, rows, K/16) plain scales -> the C-contiguous (L, Rt, Ct, 32, 4, 4) tiled buffer."""
    L, rows, cols = plain.shape
    rt, ct = -(-rows // 128), -(-cols // 4)
    padded = np.zeros((L, rt * 128, ct * 4), dtype=np.uint8)
    padded[:, :rows, :cols] = plain
    # row r = 128*mm + 32*mm4 + mm32, column c = 4*kk + kk4 -> buffer [l, mm, kk, mm32, mm4, kk4]
    return np.ascontiguousarray(padded.reshape(L, rt, 4, 32, ct, 4).transpose(0, 1, 4, 3, 2, 5))


# A note holding this reports process-wide settings the submission changed (not a verdict: the
# summary lists them, harness/report/report.cpp): the caller's other work runs with them.
SETTINGS_CHANGED = "changed process-wide settings"
# torch's precision settings: the fp32_precision API where this torch has it (reading it never warns
# or raises), else the legacy flags; then flags and getters of either era. Each read is guarded: a
# read that raises (torch refuses to answer allow_tf32 once legacy and new settings disagree) is
# recorded as unreadable, never an error of the trial.
TORCH_PRECISION = ("backends.fp32_precision", "backends.cuda.matmul.fp32_precision", "backends.cudnn.fp32_precision",
                   "backends.cudnn.conv.fp32_precision", "backends.cudnn.rnn.fp32_precision")
# A setting of "none" takes its parent's, and "none" at the top is torch's default, "ieee"; compared
# are the values in effect, so that a legacy `allow_tf32 = False` (which writes "ieee" where "none"
# stood, the same behaviour) is no change.
TORCH_PRECISION_PARENT = {"backends.cuda.matmul.fp32_precision": "backends.fp32_precision",
                          "backends.cudnn.fp32_precision": "backends.fp32_precision",
                          "backends.cudnn.conv.fp32_precision": "backends.cudnn.fp32_precision",
                          "backends.cudnn.rnn.fp32_precision": "backends.cudnn.fp32_precision"}
TORCH_LEGACY_PRECISION = ("backends.cuda.matmul.allow_tf32", "backends.cudnn.allow_tf32")
TORCH_FLAGS = ("backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
               "backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
               "backends.cuda.matmul.allow_fp16_accumulation", "backends.cudnn.enabled", "backends.cudnn.benchmark",
               "backends.cudnn.deterministic")
TORCH_GETTERS = (("get_default_dtype", ()), ("get_default_device", ()), ("are_deterministic_algorithms_enabled", ()),
                 ("is_grad_enabled", ()), ("is_inference_mode_enabled", ()), ("is_autocast_enabled", ("cuda",)))
_MISSING = object()


def _lookup(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def process_settings(np, torch):
    """The process-wide numeric settings a kernel's import or call may change for everybody else in
    the process: numpy's floating-point error handling; torch's fp32 precision (TF32) settings, its
    reduced-precision and fp16-accumulation matmul flags, cuDNN's, the default dtype and device,
    deterministic algorithms, grad, inference and autocast modes. name -> repr of the value
    ("unreadable (...)" where reading raises); what this torch lacks is left out. Warnings that
    reading a legacy flag emits are swallowed: they would read as the submission's."""
    import warnings

    out = {"numpy.seterr %s" % k: repr(v) for k, v in sorted(np.geterr().items())}
    if torch is None:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            modern = any(_lookup(torch, path) is not _MISSING for path in TORCH_PRECISION)
        except Exception:  # noqa: BLE001
            modern = False
        for path in (TORCH_PRECISION if modern else TORCH_LEGACY_PRECISION + ("get_float32_matmul_precision",)) \
                + TORCH_FLAGS:
            try:
                value = _lookup(torch, path)
                if value is _MISSING:
                    continue
                out["torch." + path + ("()" if callable(value) else "")] = repr(value() if callable(value) else value)
            except Exception as e:  # noqa: BLE001
                out["torch." + path] = "unreadable (%s)" % type(e).__name__
        if modern:  # the values in effect: "none" resolved through the parents
            raw = {path: out.get("torch." + path) for path in TORCH_PRECISION}
            for path in TORCH_PRECISION:
                value, at = raw[path], path
                while value == repr("none") and at in TORCH_PRECISION_PARENT:
                    at = TORCH_PRECISION_PARENT[at]
                    value = raw.get(at)
                if value == repr("none"):  # unset all the way up: torch's default, IEEE fp32
                    value = repr("ieee")
                if value is not None:
                    out["torch." + path] = value
        for name, args in TORCH_GETTERS:
            getter = getattr(torch, name, None)
            if not callable(getter):
                continue
            try:
                out["torch.%s()" % name] = repr(getter(*args))
            except Exception as e:  # noqa: BLE001 - e.g. an older signature: recorded, not fatal
                out["torch.%s()" % name] = "unreadable (%s)" % type(e).__name__
    return out


def settings_changes(before, after):
    """'name: old -> new' for each setting that differs, one that appeared or vanished included."""
    keys = list(after) + [k for k in before if k not in after]
    return ["%s: %s -> %s" % (k, before.get(k, "absent"), after.get(k, "absent"))
            for k in keys if before.get(k, "absent") != after.get(k, "absent")]


def data_name(buffer):
    """The name GPU MODE's `data` tuple gives a buffer (sfa_tiled is its sfa_permuted)."""
    return buffer.replace("_tiled", "_permuted")


class Inputs:
    """One set of buffers and the `data` tuple of views over them, built once: every call handed
    this object's data gets the same tensor objects at the same addresses (what an engine and a
    captured graph rely on). `alphas`: (alpha1, alpha2) appended to `data` as float32 arrays of
    shape (1,) (tensors on the device with torch), or None when the submission takes none.
    `expected` holds, on the host, what every buffer but c must hold: what the driver last put there
    (changed_inputs() compares)."""

    def __init__(self, np, arrays, torch=None, alphas=None):
        self.np, self.torch = np, torch
        self.M, self.N, self.K, self.L = case_shape(arrays)
        host = dict(arrays)
        for name in ("sfa", "sfb1", "sfb2"):
            host[name + "_tiled"] = tiled_scales(np, arrays[name])
        host["c"] = np.zeros((self.L, self.M, self.N), dtype=np.float16)
        if alphas is not None:
            host["alpha1"] = np.array([alphas[0]], dtype=np.float32)
            host["alpha2"] = np.array([alphas[1]], dtype=np.float32)
        if torch is None:
            self.buffers = {k: np.ascontiguousarray(v).copy() for k, v in host.items()}
        else:
            self.buffers = {k: torch.from_numpy(np.ascontiguousarray(v)).to("cuda") for k, v in host.items()}
        # The driver's own host arrays (never handed to the submission: its buffers are copies).
        self.expected = {k: np.ascontiguousarray(v) for k, v in host.items() if k != "c"}
        self.data = self._views()

    def _views(self):
        b = self.buffers
        if self.torch is None:
            last = lambda x: x.transpose(1, 2, 0)
            tiled = lambda x: x.transpose(3, 4, 1, 5, 2, 0)
            fp4 = fp8 = lambda x: x
        else:
            t = self.torch
            last = lambda x: x.permute(1, 2, 0)
            tiled = lambda x: x.permute(3, 4, 1, 5, 2, 0)
            fp4 = lambda x: x.view(t.float4_e2m1fn_x2)
            fp8 = lambda x: x.view(t.float8_e4m3fn)
        data = (fp4(last(b["a"])), fp4(last(b["b1"])), fp4(last(b["b2"])),
                fp8(last(b["sfa"])), fp8(last(b["sfb1"])), fp8(last(b["sfb2"])),
                fp8(tiled(b["sfa_tiled"])), fp8(tiled(b["sfb1_tiled"])), fp8(tiled(b["sfb2_tiled"])),
                last(b["c"]))
        if "alpha1" in b:
            data += (b["alpha1"], b["alpha2"])
        return data

    def clone(self):
        """A second set of buffers with this one's contents (the driver's graph captures over one, so
        that whatever a call brings, in place or in new tensors, is copied into it whole)."""
        other = object.__new__(Inputs)
        other.np, other.torch = self.np, self.torch
        other.M, other.N, other.K, other.L = self.M, self.N, self.K, self.L
        other.buffers = {k: (v.copy() if self.torch is None else v.clone()) for k, v in self.buffers.items()}
        other.expected = dict(self.expected)
        other.data = other._views()
        return other

    def update(self, arrays, alphas=None):
        """Copies new arrays (and alphas) into the existing buffers: same addresses, new contents."""
        for name, arr in arrays.items():
            if arr.shape != tuple(self.buffers[name].shape):
                raise TrialError("fresh input %s has shape %s; the case has %s"
                                 % (name, arr.shape, tuple(self.buffers[name].shape)))
            self._copy(name, arr)
            if name.startswith("sf"):
                self._copy(name + "_tiled", tiled_scales(self.np, arr))
        if alphas is not None and "alpha1" in self.buffers:
            for name, value in zip(("alpha1", "alpha2"), alphas):
                self._copy(name, self.np.array([value], dtype=self.np.float32))

    def copy_from(self, other):
        """Every buffer of `other` (same case shape) copied into this one's, on the current stream;
        what they must hold is what `other`'s must."""
        for name, buf in self.buffers.items():
            if self.torch is None:
                buf[...] = other.buffers[name]
            else:
                buf.copy_(other.buffers[name])
        self.expected = dict(other.expected)

    def _copy(self, name, arr):
        arr = self.np.ascontiguousarray(arr)
        if self.torch is None:
            self.buffers[name][...] = arr
        else:
            self.buffers[name].copy_(self.torch.from_numpy(arr))
        if name != "c":
            self.expected[name] = arr  # the driver's array, copied into the buffer above

    def changed_inputs(self):
        """The buffers other than c whose bytes differ from what the driver last put there, as
        "b1 (3 of 1024 bytes, first at byte 40)" texts in `data`'s order; [] when none. Read after
        the device is synchronized (a copy to the host with torch)."""
        np, found = self.np, []
        for name, want in self.expected.items():
            buf = self.buffers[name]
            got = np.ascontiguousarray(buf if self.torch is None else buf.cpu().numpy())
            diff = np.flatnonzero(got.view(np.uint8).reshape(-1) != want.view(np.uint8).reshape(-1))
            if diff.size:
                found.append("%s (%d of %d bytes, first at byte %d)" % (data_name(name), diff.size, want.nbytes, diff[0]))
        return found

    def negate_activation(self, i):
        """Flips the sign bit of one E2M1 code of A, at a position chosen by i (the bench's timed calls:
        inputs no earlier call had, outside the timed region)."""
        a = self.expected["a"].copy()
        flat = a.reshape(-1)
        flat[(i * 7919 + 13) % flat.size] ^= 0x08 if i % 2 == 0 else 0x80
        self._copy("a", a)

    def holds(self, out):
        """Whether `out` lies in this set's c buffer (the driver rewrites that buffer before an
        in-place call: poison() or set_output_bits())."""
        c = self.buffers["c"]
        if self.torch is None:
            return bool(self.np.may_share_memory(out, c))
        L, M, N = c.shape  # contiguous fp16: its bytes are [data_ptr, data_ptr + 2*L*M*N)
        return c.data_ptr() <= out.data_ptr() < c.data_ptr() + 2 * L * M * N

    def poison(self):
        self.set_output_bits(None)

    def set_output_bits(self, bits):
        """The output buffer filled with the poison pattern (bits None) or with (L, M, N) uint16 bits."""
        c = self.buffers["c"]
        if self.torch is None:
            c.view(self.np.uint16)[...] = POISON_BITS if bits is None else bits
        elif bits is None:
            c.view(self.torch.int16).fill_(POISON_BITS)  # below 0x8000: the same bits as int16
        else:
            c.view(self.torch.int16).copy_(self.torch.from_numpy(bits.view(self.np.int16)))

    def check_output(self, out):
        """TrialError unless `out` is what custom_kernel must return: float16 of shape (M, N, L)."""
        np, want = self.np, (self.M, self.N, self.L)
        kind = np.ndarray if self.torch is None else self.torch.Tensor
        if isinstance(out, kind) and type(out) is not kind:
            # A subclass can do its work when it is read (lazy evaluation), after the call and its
            # timing have ended; the caller would time and check different things.
            raise TrialError("custom_kernel returned a %s, a subclass of %s.%s; expected a plain one (a subclass "
                             "can compute when it is read, outside the timed call)"
                             % (type(out).__name__, kind.__module__, kind.__name__))
        if self.torch is None:
            if not isinstance(out, np.ndarray):
                raise TrialError("custom_kernel returned %s; expected a float16 numpy array of shape %s"
                                 % (type(out).__name__, want))
            if out.dtype != np.float16 or out.shape != want:
                raise TrialError("custom_kernel returned %s %s; expected float16 %s" % (out.dtype, out.shape, want))
            return
        t = self.torch
        if not isinstance(out, t.Tensor):
            raise TrialError("custom_kernel returned %s; expected a torch.float16 tensor of shape %s"
                             % (type(out).__name__, want))
        if out.dtype != t.float16 or tuple(out.shape) != want:
            raise TrialError("custom_kernel returned %s %s; expected torch.float16 %s"
                             % (out.dtype, tuple(out.shape), want))
        if not out.is_cuda:
            raise TrialError("custom_kernel returned a tensor on %s; expected one on the GPU" % out.device)


class BoundCuda:
    """The torch.cuda functions the driver synchronizes, reads and times with, bound before the
    submission is imported (like the stage clock, protocol.py): a submission that patches
    torch.cuda.synchronize, a stream's synchronize or torch.cuda.Event's methods afterwards (a no-op
    synchronize, an elapsed_time that returns less) changes its own calls, not the driver's."""

    def __init__(self, torch):
        cuda = torch.cuda
        self.synchronize, self.current_stream = cuda.synchronize, cuda.current_stream
        self.default_stream, self.set_stream, self.stream = cuda.default_stream, cuda.set_stream, cuda.stream
        self._stream_sync = cuda.Stream.synchronize  # current_stream()'s class; binding it starts no context
        event = cuda.Event
        self._event, self._record = event, event.record
        self._event_sync, self._elapsed = event.synchronize, event.elapsed_time

    def stream_synchronize(self, stream):
        self._stream_sync(stream)

    def event(self):
        return self._event(enable_timing=True)

    def record(self, event):
        """`event` recorded on the caller's stream, whatever stream is current."""
        self._record(event, self.default_stream())

    def seconds(self, start, end):
        """Seconds from event `start` to event `end`, once `end` has completed."""
        self._event_sync(end)
        return self._elapsed(start, end) / 1e3


class ReadBack:
    """Reads outputs as (L, M, N) uint16 bit patterns. With torch, twice: first by a copy ordered on
    the calling stream, the default stream (no device-wide synchronize before it: what an engine or a
    timed caller reading on its own stream sees), then after torch.cuda.synchronize(). The pinned host buffer is
    allocated once, before any call, so that no allocation can synchronize the device in between."""

    def __init__(self, np, shape, torch=None, cuda=None):
        self.np, self.torch, self.cuda = np, torch, cuda
        L, M, N = shape
        self.host = None if torch is None else torch.empty((L, M, N), dtype=torch.int16, pin_memory=True)

    def read(self, out):
        """(stream-ordered bits, bits after a device-wide synchronize); the same array twice without torch."""
        np, t = self.np, self.torch
        if t is None:
            bits = np.ascontiguousarray(out.transpose(2, 0, 1)).view(np.uint16)
            return bits, bits
        stream = self.cuda.default_stream()  # the caller's, even if the submission left another current
        with self.cuda.stream(stream):
            self.host.copy_(out.permute(2, 0, 1).contiguous().view(t.int16), non_blocking=True)
        self.cuda.stream_synchronize(stream)
        ordered = self.host.numpy().view(np.uint16).copy()
        self.cuda.synchronize()
        synced = out.permute(2, 0, 1).contiguous().view(t.int16).cpu().numpy().view(np.uint16)
        return ordered, synced
