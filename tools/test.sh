#!/usr/bin/env bash
# test.sh — install what is missing, build, and run every test (ctest; GPU tests SKIP without a GPU).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/bootstrap.sh" build
cd "$here/build"
ctest --output-on-failure -j 2 "$@"
