#!/usr/bin/env python3
"""Checks, on a GPU with torch, that the rehearsal's data generator (harness/backends/nvfp4_driver/
gpumode_data.py TorchHost) gives GPU MODE's bytes, and that its exact-decode reference passes GPU
MODE's check against GPU MODE's own reference where that one runs (a B200; elsewhere it is skipped).

    python3 tools/gpumode_data_check.py REFERENCE_KERNELS_CHECKOUT

REFERENCE_KERNELS_CHECKOUT: a checkout of gpu-mode/reference-kernels (snapshot f83cb92); its
problems/nvidia/nvfp4_dual_gemm/reference.py and problems/nvidia/utils.py are imported from there.
Prints one line per case and exits 1 on the first difference.
"""
import os
import sys
import types

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "backends"))
from nvfp4_driver.gpumode_data import TorchHost  # noqa: E402


def main(checkout):
    sys.path.insert(0, os.path.join(checkout, "problems", "nvidia", "nvfp4_dual_gemm"))
    sys.path.insert(0, os.path.join(checkout, "problems", "nvidia"))
    if "task" not in sys.modules:
        task = types.ModuleType("task")
        task.input_t, task.output_t = tuple, object
        sys.modules["task"] = task
    import reference as gpumode  # the task's reference.py: generate_input, ref_kernel, check_implementation
    host = TorchHost(np, torch)
    cases = [(256, 512, 256, 1, 1111), (1536, 512, 7168, 1, 1153), (256, 4096, 7168, 1, 1111 + 42 * 50),
             (128, 256, 512, 2, 7)]
    for m, n, k, l, seed in cases:
        theirs = gpumode.generate_input(m, n, k, l, seed)
        ours = host.generate(m, n, k, l, seed)
        for i, (a, b) in enumerate(zip(theirs[:6] + theirs[9:], ours[:6] + ours[9:])):
            same = a.shape == b.shape and torch.equal(a.view(torch.uint8) if a.element_size() == 1 else a,
                                                      b.view(torch.uint8) if b.element_size() == 1 else b)
            if not same:
                print("%dx%dx%dx%d seed %d: item %d differs" % (m, n, k, l, seed, i))
                return 1
        for i in (6, 7, 8):  # the permuted copies: equal where GPU MODE wrote them (no padding here)
            if not torch.equal(theirs[i].view(torch.uint8), ours[i].view(torch.uint8)):
                print("%dx%dx%dx%d seed %d: permuted scales %d differ" % (m, n, k, l, seed, i))
                return 1
        verdict = "bytes equal"
        try:
            good, message = gpumode.check_implementation(theirs, host.reference(ours))
            verdict += "; exact reference %s GPU MODE's check" % ("passes" if good else "FAILS " + message)
        except RuntimeError as e:  # torch._scaled_mm on FP4 needs a B200
            verdict += "; GPU MODE's reference does not run here (%s)" % str(e).splitlines()[0]
        print("%dx%dx%dx%d seed %d: %s" % (m, n, k, l, seed, verdict))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
