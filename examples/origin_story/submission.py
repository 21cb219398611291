"""The origin story's submission, replayable: the NVFP4 dual GEMM in PyTorch on an H100, in GPU
MODE's convention custom_kernel(data) -> output (data as harness/backends/submission_driver.py describes it:
a, b1, b2 float4_e2m1fn_x2 (rows, K/2, L); sfa, sfb1, sfb2 float8_e4m3fn (rows, K/16, L); the tiled
scale copies, unused here; c float16 (M, N, L)).

The computation, per batch index l:
  1. decode FP4 through a 16-entry lookup table to bf16 and multiply by the E4M3 scales, also in
     bf16: exact, since e2m1 * e4m3 has at most 6 significant bits and bf16 keeps 8 with fp32's
     exponent range;
  2. two fp32 matmuls, A B1^T and A B2^T (TF32 off: a bf16- or TF32-rounded GEMM would miss the
     harness's tolerance, which assumes fp32 accumulation of exact products);
  3. the epilogue silu(g) * u in fp32, rounded once to fp16, written into c.

Four toggles (NVFP4_TOGGLES), each one of the story's four changes:
  autotune-epilogue  the epilogue runs through torch.compile(mode="max-autotune")
  cuda-graph         the first call for a given set of tensors captures the whole computation in a
                     torch.cuda.CUDAGraph (after one eager call on a side stream); every call
                     with the same tensors replays it (keyed by their addresses and shapes: an
                     in-place refill replays, new tensors get a graph of their own)
  warmup-10          the first call for a given set of tensors runs the computation 10 times first
  init-at-import     at import: the decode table is built on the GPU, cuBLAS is initialized with a
                     small matmul and, with autotune-epilogue, the compiled epilogue is called once
                     on a (256, 4096) tensor pair, so its compilation happens at import
"""
import os

import torch

NVFP4_TOGGLES = ["autotune-epilogue", "cuda-graph", "warmup-10", "init-at-import"]
_ON = set(filter(None, os.environ.get("NVFP4_TOGGLES", "").split("+")))

torch.backends.cuda.matmul.allow_tf32 = False

_E2M1 = None  # bf16 values of the 16 E2M1 codes, on the GPU


def _init():
    global _E2M1
    if _E2M1 is None:
        mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
        _E2M1 = torch.tensor(mag + [-m for m in mag], dtype=torch.bfloat16, device="cuda")


def _epilogue_eager(g, u):
    return (torch.nn.functional.silu(g) * u).to(torch.float16)


_epilogue = torch.compile(_epilogue_eager, mode="max-autotune") if "autotune-epilogue" in _ON else _epilogue_eager


def _decode(packed, scales):
    """(rows, K/2) uint8 FP4 pairs (low nibble first) and (rows, K/16) E4M3 scales -> (rows, K) bf16."""
    rows, half = packed.shape
    lo = _E2M1[(packed & 0xF).long()]
    hi = _E2M1[(packed >> 4).long()]
    values = torch.stack((lo, hi), dim=-1).reshape(rows, 2 * half)
    return values * scales.to(torch.bfloat16).repeat_interleave(16, dim=1)


def _compute(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    for l in range(a.shape[2]):
        A = _decode(a[:, :, l].view(torch.uint8), sfa[:, :, l]).float()
        B1 = _decode(b1[:, :, l].view(torch.uint8), sfb1[:, :, l]).float()
        B2 = _decode(b2[:, :, l].view(torch.uint8), sfb2[:, :, l]).float()
        c[:, :, l] = _epilogue(A @ B1.t(), A @ B2.t())
    return c


if "init-at-import" in _ON:
    _init()
    x = torch.ones((64, 64), device="cuda")
    (x @ x).sum().item()
    if "autotune-epilogue" in _ON:
        _epilogue(torch.randn((256, 4096), device="cuda"), torch.randn((256, 4096), device="cuda"))
    torch.cuda.synchronize()

_warmed = set()
_graphs = {}


def custom_kernel(data):
    _init()
    key = tuple((t.data_ptr(), tuple(t.shape)) for t in data)
    if "warmup-10" in _ON and key not in _warmed:
        for _ in range(10):
            _compute(data)
        _warmed.add(key)
    if "cuda-graph" not in _ON:
        return _compute(data)
    if key not in _graphs:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            _compute(data)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = _compute(data)
        _graphs[key] = (graph, out)
    graph, out = _graphs[key]
    graph.replay()
    return out
