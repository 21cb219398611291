"""Planted: a CUDA graph per shape whose static output is returned. The first call of a shape
captures the computation into tensors of its own (static inputs and output); every call copies its
inputs in, replays, and returns the static output itself instead of copying it into `data`'s c.
Every output is right when it is read at once; a caller that keeps its outputs finds each earlier
one overwritten by the next replay."""
import torch

from dual_torch import dual_gemm

_graphs = {}


def custom_kernel(data):
    key = tuple(tuple(t.shape) for t in data)
    if key not in _graphs:
        static = tuple(t.clone() for t in data)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dual_gemm(static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = dual_gemm(static)
        _graphs[key] = (graph, static, out)
    graph, static, out = _graphs[key]
    for mine, theirs in zip(static[:9], data[:9]):
        mine.copy_(theirs)
    graph.replay()
    return out
