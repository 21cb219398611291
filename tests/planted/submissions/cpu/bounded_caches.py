"""Correct, with caches that are bounded: what must not be taken for memory that grows with calls.
  - decode tables built on the first call (lazy initialization, once);
  - a workspace per output shape (one per shape the process sees);
  - a scratch buffer per output buffer, keyed by id(c), at most 8 of them (least recently used
    evicted): still filling in the first window of calls that measure the memory held (the
    trial's warm-up, checked and later calls hand it 4 distinct buffers, the measuring calls 8
    more, nvfp4_driver/memory.py), full after it.
Every output is right; the memory held stops growing once the caches are full. Passes with no note
about memory."""
from collections import OrderedDict

import numpy as np

from dual_numpy import decode, epilogue

NVFP4_DATA = "numpy"
SCRATCH_ENTRIES = 8
_tables = {}
_workspace = {}
_scratch = OrderedDict()


def custom_kernel(data):
    if not _tables:
        _tables["ones"] = np.ones(256, dtype=np.float32)
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    c = data[9]
    work = _workspace.get(c.shape)
    if work is None:
        work = _workspace[c.shape] = np.empty(c.shape, dtype=np.float32)
    scratch = _scratch.pop(id(c), None)
    if scratch is None:
        scratch = (c, np.empty(c.shape, dtype=np.float16))  # holds c: its id() is never reused
    _scratch[id(c)] = scratch
    while len(_scratch) > SCRATCH_ENTRIES:
        _scratch.popitem(last=False)
    result = epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2)).transpose(1, 2, 0)
    work[...] = result
    scratch[1][...] = work
    c[...] = scratch[1]
    return c
