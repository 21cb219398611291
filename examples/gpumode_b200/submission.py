"""A B200-style NVFP4 dual GEMM for GPU MODE's nvfp4_dual_gemm, written the way a team writes one for
the leaderboard: cuBLASLt's block-scaled FP4 GEMM through torch._scaled_mm, no kernel of its own.
data is the task's ten-tuple (harness/backends/submission_driver.py documents it): a, b1, b2
float4_e2m1fn_x2 (rows, K/2, L); sfa, sfb1, sfb2 plain scales (unused here); sfa_permuted,
sfb1_permuted, sfb2_permuted the same scales as (32, 4, Rt, 4, Ct, L) views whose memory, batch by
batch, is the 128x4 blocked layout _scaled_mm reads; c float16 (M, N, L).

Per batch index l:
  r1 = _scaled_mm(A_l, B1_l^T), r2 = _scaled_mm(A_l, B2_l^T)   fp32 out, scales from the permuted views
  c[:, :, l] = fp16(silu(r1) * r2)                              the epilogue, in fp32

Without FP4 tensor cores (an H100) it runs only under the harness's FP4 emulation
(harness/backends/nvfp4_driver/emulate_fp4.py), which the driver must install before the import.

Toggles (NVFP4_TOGGLES; README.md says which pair breaks, where and why):
  graph-cache        per shape, static copies of the inputs and one torch.cuda.CUDAGraph of the whole
                     computation (after one eager call on a side stream); every call copies its
                     inputs into the static copies, replays, and copies the static output into c
  autotune-epilogue  the epilogue through torch.compile(mode="max-autotune")
  warmup-10          the first call of each new shape runs the computation 10 times first
  init-at-import     at import: one small FP4 _scaled_mm (CUDA context, cuBLASLt) and, with
                     autotune-epilogue, the epilogue compiled for the task's four benchmark shapes
"""
import os

import torch
from task import input_t, output_t

NVFP4_TOGGLES = ["graph-cache", "autotune-epilogue", "warmup-10", "init-at-import"]
_ON = set(filter(None, os.environ.get("NVFP4_TOGGLES", "").split("+")))
BENCHMARK_MN = ((256, 4096), (512, 4096), (256, 3072), (512, 3072))  # task.yml's benchmarks


def _epilogue_eager(r1, r2):
    return (torch.nn.functional.silu(r1) * r2).to(torch.float16)


_epilogue = torch.compile(_epilogue_eager, mode="max-autotune") if "autotune-epilogue" in _ON else _epilogue_eager


def _blocked(sf_permuted, l):
    """Batch l of a (32, 4, Rt, 4, Ct, L) permuted scale view as the flat blocked buffer: its element
    [r%32, (r%128)//32, r//128, c%4, c//4] sits at byte (r//128, c//4, r%32, (r%128)//32, c%4) of
    the batch, so this permute is contiguous and the reshape a view (no copy)."""
    return sf_permuted[..., l].permute(2, 4, 0, 1, 3).reshape(-1)


def _compute(data):
    a, b1, b2, _, _, _, sfa_p, sfb1_p, sfb2_p, c = data
    for l in range(a.shape[2]):
        sfa = _blocked(sfa_p, l)
        # (M, K/2) row-major times the (K/2, N) column-major view of (N, K/2): the TN layout cuBLASLt needs.
        r1 = torch._scaled_mm(a[:, :, l], b1[:, :, l].t(), sfa, _blocked(sfb1_p, l), bias=None,
                              out_dtype=torch.float32)
        r2 = torch._scaled_mm(a[:, :, l], b2[:, :, l].t(), sfa, _blocked(sfb2_p, l), bias=None,
                              out_dtype=torch.float32)
        c[:, :, l] = _epilogue(r1, r2)
    return c


def _bytes(t):
    return t.view(torch.uint8)  # every tensor of data is one byte or fp16 wide: copies as raw bytes


def _static_copy(t):
    """A tensor of t's shape, strides and dtype holding t's values (clone keeps a dense layout)."""
    return t.clone() if t.dtype == torch.float16 else _bytes(t).clone().view(t.dtype)


_graphs = {}  # shape key -> (graph, static inputs and output)


def _graphed(data, key):
    if key not in _graphs:
        static = tuple(_static_copy(t) for t in data)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            _compute(static)  # lazy initialization outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _compute(static)
        _graphs[key] = (graph, static)
    graph, static = _graphs[key]
    for dst, src in zip(static[:9], data[:9]):
        if dst.dtype == torch.float16:
            dst.copy_(src)
        else:
            _bytes(dst).copy_(_bytes(src))
    graph.replay()
    return data[9].copy_(static[9])


_warmed = set()


def custom_kernel(data: input_t) -> output_t:
    key = tuple(tuple(t.shape) for t in data)
    if "warmup-10" in _ON and key not in _warmed:
        for _ in range(10):
            _compute(data)
        _warmed.add(key)
    if "graph-cache" in _ON:
        return _graphed(data, key)
    return _compute(data)


if "init-at-import" in _ON:
    x = torch.zeros((128, 32), dtype=torch.uint8, device="cuda").view(torch.float4_e2m1fn_x2)
    s = torch.zeros(128 * 4, dtype=torch.float8_e4m3fn, device="cuda")
    torch._scaled_mm(x, x.t(), s, s, out_dtype=torch.float32)
    if "autotune-epilogue" in _ON:
        for m, n in BENCHMARK_MN:
            r = torch.zeros((m, n), device="cuda")
            _epilogue(r, r)
    torch.cuda.synchronize()
