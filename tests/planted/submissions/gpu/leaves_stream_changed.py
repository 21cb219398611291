"""Planted: a stream of its own made current and never restored ("init at import" that picks a
stream for the kernel's work, joined to nothing): every output is right once the caller
synchronizes, but the caller's next work runs on the submission's stream."""
import torch

from dual_torch import dual_gemm

_stream = None


def custom_kernel(data):
    global _stream
    if _stream is None:
        _stream = torch.cuda.Stream()
    _stream.wait_stream(torch.cuda.current_stream())
    torch.cuda.set_stream(_stream)
    out = dual_gemm(data)
    _stream.synchronize()
    return out
