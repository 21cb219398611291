"""Planted: a CUDA graph captured on every call and kept in a list that is never cleared (a graph
cache whose key is new on every call). Every output is right; each graph keeps its memory pool
(the decoded operands, G and U), so the device memory held grows with every call."""
import torch

from dual_torch import dual_gemm

_graphs = []


def custom_kernel(data):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dual_gemm(data)  # one eager call before capture (allocator, cuBLAS handles)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = dual_gemm(data)
    _graphs.append(graph)
    graph.replay()
    return out
