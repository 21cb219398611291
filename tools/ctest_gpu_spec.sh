#!/usr/bin/env bash
# ctest_gpu_spec.sh — prints a ctest resource spec file (JSON) with one "gpus" resource per GPU of this
# machine, so that `ctest -L gpu -j N --resource-spec-file FILE` runs each gpu test on its own GPU
# (the tests ask for RESOURCE_GROUPS gpus:1; tests/support/gpu_main.cpp and the harness read ctest's
# CTEST_RESOURCE_GROUP_* variables). GPUs are counted without CUDA: /proc/driver/nvidia/gpus/, else
# `nvidia-smi -L`.
#   tools/ctest_gpu_spec.sh > gpus.json && ctest --test-dir build -L gpu -j 8 --resource-spec-file gpus.json
set -euo pipefail
n=0
if [ -d /proc/driver/nvidia/gpus ]; then
  n=$(find /proc/driver/nvidia/gpus -mindepth 1 -maxdepth 1 | wc -l)
elif command -v nvidia-smi > /dev/null; then
  n=$(nvidia-smi -L | grep -c '^GPU ' || true)
fi
entries=""
for ((i = 0; i < n; i++)); do entries+="${entries:+, }{\"id\": \"$i\", \"slots\": 1}"; done
echo "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [$entries]}]}"
