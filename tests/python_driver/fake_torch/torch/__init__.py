"""A numpy stand-in for the few torch calls harness/backends/submission_driver.py makes, so that the driver's
torch paths (tensors on the "device", in-place refills, new tensors, the poison, the two read-backs)
run in CI, where there is no torch and no GPU. Not torch: only what the driver and the tests'
submissions use, with torch's names and semantics as far as they go.

Streams: the default stream runs every operation at once. Writes made while another stream is current
(`with torch.cuda.stream(s)`) are queued on that stream and happen only when it is synchronized, when
the device is (torch.cuda.synchronize()), or when a stream waits for it (wait_stream): work on a side
stream that is never joined is still pending when the default stream reads the output.
"""
import contextlib
import time as _time

import numpy as _np


class dtype:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, _np.dtype(np_dtype)

    def __repr__(self):
        return "torch." + self.name


uint8 = dtype("uint8", _np.uint8)
int16 = dtype("int16", _np.int16)
float16 = dtype("float16", _np.float16)
float32 = dtype("float32", _np.float32)
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", _np.uint8)
float8_e4m3fn = dtype("float8_e4m3fn", _np.uint8)
_BY_NP = {_np.dtype(_np.uint8): uint8, _np.dtype(_np.int16): int16, _np.dtype(_np.float16): float16,
          _np.dtype(_np.float32): float32}


class device:
    def __init__(self, kind):
        self.type = kind

    def __repr__(self):
        return self.type


class Tensor:
    def __init__(self, array, dt=None, is_cuda=False):
        self._a = array
        self.dtype = dt or _BY_NP[array.dtype]
        self.is_cuda = is_cuda
        self.device = device("cuda" if is_cuda else "cpu")

    @property
    def shape(self):
        return tuple(self._a.shape)

    def dim(self):
        return self._a.ndim

    def data_ptr(self):
        return self._a.__array_interface__["data"][0]

    def to(self, where):
        if where != "cuda":
            raise ValueError("fake torch: only .to('cuda')")
        return Tensor(_np.array(self._a, copy=True), self.dtype, True)

    def cpu(self):
        return Tensor(_np.array(self._a, copy=True), self.dtype, False)

    def numpy(self):
        if self.is_cuda:
            raise TypeError("can't convert cuda tensor to numpy")
        return self._a

    def view(self, dt):
        if dt.np.itemsize != self._a.dtype.itemsize:
            raise RuntimeError("fake torch: view() between dtypes of different sizes")
        return Tensor(self._a.view(dt.np), dt, self.is_cuda)

    def permute(self, *dims):
        return Tensor(self._a.transpose(dims), self.dtype, self.is_cuda)

    def contiguous(self):
        if self._a.flags["C_CONTIGUOUS"]:
            return self
        return Tensor(_np.ascontiguousarray(self._a), self.dtype, self.is_cuda)

    def copy_(self, src, non_blocking=False):
        def write(dst=self._a, value=src._a):
            dst[...] = value.view(dst.dtype) if value.dtype.itemsize == dst.dtype.itemsize else value
        _enqueue(write)
        return self

    def fill_(self, value):
        _enqueue(lambda dst=self._a: dst.fill(value))
        return self

    def zero_(self):
        return self.fill_(0)


def from_numpy(array):
    return Tensor(array)


def empty(shape, dtype=float32, pin_memory=False, device=None):
    return Tensor(_np.empty(shape, dtype=dtype.np), dtype, device == "cuda")


class _Cuda:
    class Stream:
        def __init__(self, device=None):
            self.pending = []

        def synchronize(self):
            pending, self.pending = self.pending, []
            for op in pending:
                op()

        def wait_stream(self, other):
            other.synchronize()

    def __init__(self):
        self.default = self.Stream()
        self.current = self.default
        self.streams = [self.default]

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self, stream=None):
            self.t = _time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

    def is_available(self):
        return True

    def get_device_capability(self, device=None):
        # A device with FP4 tensor cores: the driver's FP4 emulation (auto) installs nothing here.
        return (10, 0)

    def current_stream(self, device=None):
        return self.current

    def default_stream(self, device=None):
        return self.default

    def set_stream(self, s):
        if s not in self.streams:
            self.streams.append(s)
        self.current = s

    def synchronize(self):
        for s in self.streams:
            s.synchronize()

    @contextlib.contextmanager
    def stream(self, s):
        if s not in self.streams:
            self.streams.append(s)
        before, self.current = self.current, s
        try:
            yield
        finally:
            self.current = before


cuda = _Cuda()


class _Flags:
    def __init__(self, **flags):
        self.__dict__.update(flags)


# The process-wide flags the driver watches (torch.backends), with torch's defaults.
backends = _Flags(cuda=_Flags(matmul=_Flags(allow_tf32=False)), cudnn=_Flags(allow_tf32=True, benchmark=False))


def _enqueue(op):
    if cuda.current is cuda.default:
        op()
    else:
        cuda.current.pending.append(op)
