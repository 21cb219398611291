#!/usr/bin/env bash
# gpu_dist.sh — collect what tools/gpu_run.sh needs on the GPU machine into one ignored folder
# (carried to the device machine; 64 MiB at most): the harness with its backend modules (paths/),
# every gpu test executable (tests/gpu/test_*), the planted-bug GPU test with its modules
# (planted-paths/) and the fused kernels' timing probe, stripped of symbols.
#   tools/gpu_dist.sh [BUILD_DIR] [DIST_DIR] [BASE]   (defaults: build-gpu, build-gpu-dist)
# BASE: a folder holding a baseline harness and its paths/ (e.g. the build of the commit before a
# refactor), copied to DIST_DIR/base for gpu_run.sh's verifybase and benchbase phases.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-gpu}
dist=${2:-$here/build-gpu-dist}
rm -rf "$dist"
mkdir -p "$dist"
cp "$build/harness/harness" "$dist/"
mkdir -p "$dist/paths" "$dist/planted-paths"
cp "$build"/harness/paths/*.so "$dist/paths/"
if [ -x "$build/tests/planted/test_planted_gpu" ]; then
  cp "$build/tests/planted/test_planted_gpu" "$dist/"
  cp "$build"/tests/planted/paths/*.so "$dist/planted-paths/"
fi
for src in "$here"/tests/gpu/test_*.cpp "$here"/tests/gpu/test_*.cu; do
  [ -e "$src" ] || continue
  name=$(basename "${src%.*}")
  if [ -x "$build/tests/$name" ]; then cp "$build/tests/$name" "$dist/"; else echo "gpu_dist: $name not built" >&2; fi
done
# The GPU example plugin and its planted out-of-bounds build (tests/plugin), for sanitizeharness.
mkdir -p "$dist/plugins"
for so in "$build"/examples/plugin_gpu/libnvfp4_plugin_gpu.so "$build"/tests/plugin/libnvfp4_plugin_gpu_oob.so; do
  if [ -f "$so" ]; then cp "$so" "$dist/plugins/"; fi
done
# The fused kernels' timing probe (tools/fused_probe.cu), when built: `$dist/fused_probe [mode]`.
if [ -x "$build/fused_probe" ]; then cp "$build/fused_probe" "$dist/"; fi
# The dropped shared-memory-operand design's probe (tools/ss_probe.cu, docs/fused-kernel.md v5o).
if [ -x "$build/ss_probe" ]; then cp "$build/ss_probe" "$dist/"; fi
# The cluster-shared weight decode's probe (tools/xs_probe.cu, docs/fused-kernel.md v5p).
if [ -x "$build/xs_probe" ]; then cp "$build/xs_probe" "$dist/"; fi
# The 256-row epilogue alone (tools/epi_probe.cu).
if [ -x "$build/epi_probe" ]; then cp "$build/epi_probe" "$dist/"; fi
if [ -n "${3:-}" ]; then
  mkdir -p "$dist/base/paths"
  cp "$3/harness" "$dist/base/"
  cp "$3"/paths/*.so "$dist/base/paths/"
  strip --strip-unneeded "$dist"/base/harness "$dist"/base/paths/* 2>/dev/null || true
fi
strip --strip-unneeded "$dist"/* "$dist"/paths/* "$dist"/planted-paths/* "$dist"/plugins/* 2>/dev/null || true
chmod +x "$here/tools/gpu_run.sh"
du -sh "$dist"
ls -l "$dist"
