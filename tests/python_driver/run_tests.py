#!/usr/bin/env python3
"""Runs the submission driver's tests with unittest (no pytest needed); exit 125 (ctest SKIP)
when numpy, which the driver's CPU mode needs, is not installed."""
import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(125)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
