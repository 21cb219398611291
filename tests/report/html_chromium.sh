#!/usr/bin/env bash
# html_chromium.sh HARNESS — `harness --html` rendered by a real browser (ctest label cpu):
#   1. a CPU lattice run (with a fault drill, so FAIL and BLOCKED cells are drawn) writes --html;
#   2. headless Chromium (tools/render_html.sh) renders it to a PNG and dumps the DOM after the
#      page's script ran, with a BLOCKED trial selected (its arrow drawn);
#   3. the DOM must hold the grid and the script's "report-ready" marker and no "script-error";
#   4. a copy of the page with a failing script must show "script-error" (the check can fail).
# Exit 125 (SKIP) when Chromium is not installed; tools/bootstrap.sh installs it.
set -euo pipefail
harness=$1
here=$(cd "$(dirname "$0")" && pwd)
render="$here/../../tools/render_html.sh"
command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  { echo "html_chromium.sh: no chromium (SKIP)"; exit 125; }
dir=$(mktemp -d /tmp/nvfp4-html-XXXXXX)
trap 'rm -rf "$dir"' EXIT

rc=0
"$harness" --verify all --backend cpu --dist normal,edge --inject corrupt@run:if=fused \
  --json "$dir/r.json" --html "$dir/r.html" >"$dir/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$dir/out.txt"; echo "html_chromium.sh: expected exit 1 from the drill run, got $rc"; exit 1; }
# The first BLOCKED trial's id, to open the page with it selected.
blocked=$(python3 -c 'import json,sys; print(next(t["index"] for t in json.load(open(sys.argv[1]))["trials"] if t["outcome"] == "BLOCKED"))' "$dir/r.json")

"$render" "$dir/r.html" "$dir/r.png" 1400,1000 "#r0t$blocked"
dom="$dir/r.png.dom.html"
fail() { echo "html_chromium.sh: $*"; exit 1; }
grep -q 'id="script-error"' "$dom" && fail "the page's script failed: $(grep -o 'script error[^<]*' "$dom")"
grep -q 'id="report-ready"' "$dom" || fail "the page's script did not finish (no report-ready marker)"
grep -q '<table class="grid" id="grid-cpu">' "$dom" || fail "no grid in the rendered page"
grep -q "<section class=\"trial shown\" id=\"r0t$blocked\">" "$dom" || fail "the selected trial's details are not shown"
grep -q '<line [^>]*marker-end="url(#arrowhead)"' "$dom" || fail "no arrow from the BLOCKED cell to its blocker"
# The PNG: a real image of the requested size (width and height in the IHDR chunk).
python3 - "$dir/r.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1400, 1000), (w, h)
print(f"html_chromium.sh: screenshot {w}x{h}, {len(data)} bytes")
PY

# Negative control: a page whose script throws must be caught by the marker check above.
sed 's|</body>|<script>undefined_function_of_the_test();</script></body>|' "$dir/r.html" >"$dir/bad.html"
"$render" "$dir/bad.html" "$dir/bad.png" 800,600
grep -q 'id="script-error"' "$dir/bad.png.dom.html" || fail "a failing script was not detected"
echo "html_chromium.sh: PASS"
