#!/usr/bin/env bash
# test.sh — install what is missing, build, and run every test: ctest (GPU tests SKIP without a
# GPU; among them package_consumer, a CMake project built against the installed package), then
# the pytest suite of the Python module nvfp4_dual (tests/python) on the module built here.
# Exit status: non-zero when either fails.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
NVFP4_PYTHON=ON "$here/tools/bootstrap.sh" build
cd "$here/build"
status=0
ctest --output-on-failure -j 2 "$@" || status=$?
cd "$here"
# The harness runs the tests start keep their references in the build tree, not in ~/.cache.
PYTHONPATH="$here/build/python" NVFP4_HARNESS_BIN="$here/build/harness/harness" \
  NVFP4_REFERENCE_CACHE="$here/build/test-reference-cache" python3 -m pytest -q -p no:cacheprovider tests/python || status=$?
exit $status
