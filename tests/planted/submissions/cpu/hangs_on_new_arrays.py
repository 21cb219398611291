"""Planted: hangs as soon as it is handed arrays it has not seen before the checked calls (a lock
or a compile keyed by the first call's arrays, say): never seen by a driver that only refills the
same arrays; the run stage's watchdog must stop it."""
import time

from dual_numpy import dual_gemm

NVFP4_DATA = "numpy"
_seen = set()


def custom_kernel(data):
    if _seen and id(data[0]) not in _seen:
        while True:
            time.sleep(1)
    _seen.add(id(data[0]))
    return dual_gemm(data)
