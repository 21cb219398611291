# tests/python: the pytest suite of package nvfp4_dual (numpy only; torch is never needed).
# Run from the repository: `PYTHONPATH=build/python python3 -m pytest tests/python` (tools/test.sh),
# or against an installed package: `python3 -m pytest tests/python`.
# Tests that compare with the C++ CLI need NVFP4_HARNESS_BIN (the harness binary; tools/test.sh sets
# it) and are skipped without it.
import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "data" / "golden"
INPUTS = ("a", "b1", "b2", "sfa", "sfb1", "sfb2")


def golden_cases():
    return sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def load_case(name):
    d = GOLDEN / name
    return {f: np.load(d / f"{f}.npy") for f in INPUTS + ("c", "g", "u")}


@pytest.fixture(autouse=True, scope="session")
def reference_cache(tmp_path_factory):
    # The harness runs below keep their references in a directory of this session (tools/test.sh
    # names one in the build tree), never in the user's ~/.cache.
    if not os.environ.get("NVFP4_REFERENCE_CACHE"):
        os.environ["NVFP4_REFERENCE_CACHE"] = str(tmp_path_factory.mktemp("reference-cache"))


@pytest.fixture
def harness_bin():
    path = os.environ.get("NVFP4_HARNESS_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("NVFP4_HARNESS_BIN is not set to the harness binary")
    return path
