"""Planted: the work runs on a private CUDA stream that waits for the caller's stream but is never
joined back to it: the caller's stream reaches the output before it is written. (The sleep stands
for a long kernel, so the race is lost on every call, not only on large shapes.)"""
import torch

from dual_torch import dual_gemm

_side = {}


def custom_kernel(data):
    dev = data[0].device
    if dev not in _side:
        _side[dev] = torch.cuda.Stream(device=dev)
    side = _side[dev]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        dual_gemm(data)
    return data[9]  # missing: torch.cuda.current_stream().wait_stream(side)
