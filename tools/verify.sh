#!/usr/bin/env bash
# verify.sh — the main job: install what is missing, build, and run `harness --verify all` on its
# embedded default suite. Extra arguments go to the harness (e.g. --json report.json).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/bootstrap.sh" build
exec "$here/build/harness/harness" --verify all "$@"
