"""Rehearsal test submission: every call of custom_kernel sleeps until the process is killed (a
kernel that never finishes, a deadlock)."""
import time

from _dual import dual_gemm  # noqa: F401

NVFP4_DATA = "numpy"


def custom_kernel(data):
    while True:
        time.sleep(1)
