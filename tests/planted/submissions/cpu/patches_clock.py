"""Correct results, but it patches the clocks at import (time.perf_counter, time.monotonic and
time.time return 0) and takes 0.3 s a call: the stage times the harness reports must still be the
real ones, and no verdict may rest on a time the submission's process reports."""
import time

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_sleep = time.sleep
time.perf_counter = time.monotonic = time.time = lambda: 0.0


def custom_kernel(data):
    _sleep(0.3)
    return dual_gemm(data)
