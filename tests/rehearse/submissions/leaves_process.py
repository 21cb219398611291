"""Rehearsal test submission: correct, but its import starts a process that outlives the mode's
child and writes that process's pid to $REHEARSE_PIDFILE (when set), so that a test can check it
was ended. By toggle:
  plain   subprocess.Popen(["sleep", "77"]): stdout and stderr inherited, so it holds the output
          pipe; kernelbot reads that pipe to EOF and would wait until the mode's limit
  setsid  a fork that calls setsid() and sleeps: the same, outside the child's process group
  quiet   subprocess.Popen(["sleep", "77"]) with stdout and stderr to /dev/null: it holds nothing
          the evaluator waits for (left behind all the same)"""
import os
import subprocess
import time

from _dual import dual_gemm

NVFP4_DATA = "numpy"
NVFP4_TOGGLES = ["setsid", "quiet"]
_toggles = os.environ.get("NVFP4_TOGGLES", "").split("+")

if "setsid" in _toggles:
    _pid = os.fork()
    if _pid == 0:
        os.setsid()
        time.sleep(77)
        os._exit(0)
elif "quiet" in _toggles:
    _pid = subprocess.Popen(["sleep", "77"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
else:
    _pid = subprocess.Popen(["sleep", "77"]).pid
if os.environ.get("REHEARSE_PIDFILE"):
    with open(os.environ["REHEARSE_PIDFILE"], "a") as f:
        f.write("%d\n" % _pid)


def custom_kernel(data):
    return dual_gemm(data)
