"""Planted: a CUDA graph captured over the first call's tensors, cached by shape (M, N, K, L) and
replayed for any later data of that shape. Right while the same tensors are refilled in place;
wrong as soon as a call brings new tensors (GPU MODE's evaluator does on every call)."""
import torch

from dual_torch import dual_gemm

_graphs = {}


def custom_kernel(data):
    a, b1, c = data[0], data[1], data[9]
    key = (a.shape[0], b1.shape[0], 2 * a.shape[1], a.shape[2])
    if key not in _graphs:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dual_gemm(data)  # one eager call before capture (allocator, cuBLAS handles)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = dual_gemm(data)
        _graphs[key] = (graph, out)
    graph, out = _graphs[key]
    graph.replay()
    return out
