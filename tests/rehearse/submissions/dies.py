"""Rehearsal test submission: correct, except where a toggle ends the process, or raises what the
evaluator's pool worker does not survive:
  segv            custom_kernel's first call kills its own process with SIGSEGV
  exit-at-import  the import calls os._exit(0)
  sysexit         custom_kernel raises SystemExit(0)
  keyboard        custom_kernel raises KeyboardInterrupt
  raise-at-import the import raises RuntimeError (an Exception: the worker survives and hands it
                  back to eval.py, which dies with it: a FAIL, not a timeout)"""
import os
import signal

from _dual import dual_gemm

NVFP4_DATA = "numpy"
NVFP4_TOGGLES = ["segv", "exit-at-import", "sysexit", "keyboard", "raise-at-import"]
_toggles = os.environ.get("NVFP4_TOGGLES", "").split("+")

if "exit-at-import" in _toggles:
    os._exit(0)
if "raise-at-import" in _toggles:
    raise RuntimeError("planted failure at import")


def custom_kernel(data):
    if "segv" in _toggles:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "sysexit" in _toggles:
        raise SystemExit(0)
    if "keyboard" in _toggles:
        raise KeyboardInterrupt()
    return dual_gemm(data)
