"""Rehearsal test submission: every call takes 40-80 ms (jittered, so the evaluator's relative-error
rule never stops the timed repeats early), then correct."""
import random
import time

from _dual import dual_gemm

NVFP4_DATA = "numpy"
_rng = random.Random(7)


def custom_kernel(data):
    time.sleep(0.04 + 0.04 * _rng.random())
    return dual_gemm(data)
