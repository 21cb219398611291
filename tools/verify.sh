#!/usr/bin/env bash
# verify.sh — the main job: install what is missing, build, and run `harness --verify all` on its
# embedded default suite. Installs and builds only what that needs (bootstrap.sh NVFP4_SCOPE=main:
# the harness and its path modules); tools/test.sh adds the rest. Extra arguments go to the harness
# (e.g. --json report.json).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# Without an NVIDIA driver the GPU paths can only SKIP: their CUDA build (minutes on two cores) is
# left to tools/test.sh, which builds everything. NVFP4_CUDA=ON forces it.
if [ -z "${NVFP4_CUDA:-}" ] && [ ! -e /proc/driver/nvidia/version ]; then
  echo "verify: no NVIDIA driver here: building without the CUDA paths (the gpu backend will SKIP; NVFP4_CUDA=ON builds them)"
  export NVFP4_CUDA=OFF
fi
NVFP4_SCOPE=main "$here/tools/bootstrap.sh" build
exec "$here/build/harness/harness" --verify all "$@"
