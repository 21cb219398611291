"""Rehearsal test submission for the leaderboard's recheck: correct on every fresh data object, but
from the second timed repeat on it spoils one output of each repeat: the first (a bad output the
evaluator never sees: it keeps the verdict of a repeat's last output only), or with toggle `last`
the last one (which fails the case). A timed repeat calls the same N data objects in order each
time (REHEARSE_N, default 50, objects per benchmark); the checked pass calls new clones."""
import os

import numpy as np

from _dual import dual_gemm

NVFP4_DATA = "numpy"
NVFP4_TOGGLES = ["last"]
_N = int(os.environ.get("REHEARSE_N", "50"))
_LAST = "last" in os.environ.get("NVFP4_TOGGLES", "").split("+")
_seen = {}  # id -> the tuple itself, so that no id is reused while remembered
_streak = [0]  # consecutive calls on objects seen before


def custom_kernel(data):
    c = dual_gemm(data)
    if id(data) in _seen:
        _streak[0] += 1
        if (_streak[0] - 1) % _N == (_N - 1 if _LAST else 0):
            c[0, 0, 0] = np.float16(1000)
    else:
        _seen[id(data)] = data
        _streak[0] = 0
    return c
