"""The correct numpy computation the rehearsal's test submissions share: the planted suite's
(tests/planted/submissions/cpu/dual_numpy.py), put on sys.path here."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "planted", "submissions", "cpu"))
from dual_numpy import dual_gemm  # noqa: E402,F401
