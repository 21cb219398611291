#!/usr/bin/env bash
# bootstrap.sh — install what is missing (Debian packages, Python tools), configure and build.
#   tools/bootstrap.sh [BUILD_DIR]      (default: build)
# Environment: NVFP4_CUDA=AUTO|ON|OFF (default AUTO: CUDA paths are built when nvcc is found),
#              NVFP4_PYTHON=AUTO|ON|OFF (default AUTO: the Python module nvfp4_dual is built in
#              BUILD_DIR/python when Python's headers and nanobind are found),
#              NVFP4_JOBS (default: number of cores),
#              NVFP4_SCOPE=all|main (default all: everything the tests need, and every target;
#              main: only what `harness verify all` needs — the compilers, Eigen, Boost, doctest and
#              nlohmann-json for the configure step — and only the harness and its path modules).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cd "$here"

need_pkgs=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
scope=${NVFP4_SCOPE:-all}
main_pkgs=(cmake g++ make libeigen3-dev doctest-dev libboost-program-options-dev nlohmann-json3-dev)
test_pkgs=(clang libclang-rt-14-dev python3-pip python3-dev)
pkgs=("${main_pkgs[@]}")
[ "$scope" = main ] || pkgs+=("${test_pkgs[@]}")
for p in "${pkgs[@]}"; do
  have_pkg "$p" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
if [ "$scope" = main ]; then
  # The main job: the harness and the path modules it loads (target harness depends on them).
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DNVFP4_CUDA="${NVFP4_CUDA:-AUTO}" \
    -DNVFP4_PYTHON="${NVFP4_PYTHON:-OFF}" >/dev/null
  cmake --build "$build" -j "${NVFP4_JOBS:-$(nproc)}" --target harness
  exit 0
fi
# For the report tests (tests/report/: headless Chromium renders the HTML report, xmllint validates
# the JUnit XML). Optional: when they cannot be installed those tests SKIP, so a failure here warns.
report_pkgs=()
for p in chromium libxml2-utils; do
  have_pkg "$p" || report_pkgs+=("$p")
done
if [ ${#report_pkgs[@]} -gt 0 ]; then
  echo "bootstrap: installing ${report_pkgs[*]} (report tests)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${report_pkgs[@]}" >/dev/null; } ||
    echo "bootstrap: could not install ${report_pkgs[*]}; the report tests will SKIP" >&2
fi
if ! python3 -c 'import junitparser' 2>/dev/null; then
  echo "bootstrap: installing junitparser (pip; the JUnit consumer test)"
  python3 -m pip install -q junitparser || echo "bootstrap: pip failed; the JUnit consumer test will SKIP" >&2
fi
# Python: the tools around the product (golden data, the reference speed comparison) and the
# Python module nvfp4_dual (nanobind to build it, pytest for tests/python).
if ! python3 -c 'import numpy, ml_dtypes, nanobind, pytest' 2>/dev/null; then
  echo "bootstrap: installing numpy, ml_dtypes, nanobind and pytest (pip)"
  python3 -m pip install -q numpy ml_dtypes matplotlib nanobind pytest ||
    echo "bootstrap: pip failed; the Python module and tools will be unavailable" >&2
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DNVFP4_CUDA="${NVFP4_CUDA:-AUTO}" \
  -DNVFP4_PYTHON="${NVFP4_PYTHON:-AUTO}" -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$build" -j "${NVFP4_JOBS:-$(nproc)}"
