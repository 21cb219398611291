#!/usr/bin/env bash
# render_html.sh — renders a harness HTML report (harness --html) with headless Chromium, offline.
#   tools/render_html.sh PAGE.html OUT.png [WIDTH,HEIGHT] [#FRAGMENT]
# Writes the screenshot to OUT.png and the DOM after the page's script ran to OUT.png.dom.html
# (the browser test, tests/report/html_chromium.sh, looks there for the script's markers).
# FRAGMENT selects a trial ("#r0t31") as a click on its grid cell would.
# Exit: 0 rendered; 125 no Chromium here (Debian's `chromium`; tools/bootstrap.sh installs it);
# 2 bad usage; anything else: Chromium failed.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
page=$1 out=$2 size=${3:-1400,1000} fragment=${4:-}
browser=""
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "render_html.sh: no chromium here (SKIP)" >&2
  exit 125
fi
[ -f "$page" ] || { echo "render_html.sh: no file $page" >&2; exit 2; }
url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")$fragment"
profile=$(mktemp -d /tmp/nvfp4-chromium-XXXXXX)
trap 'rm -rf "$profile"' EXIT
# No network is needed or wanted: the page is self-contained; the proxy setting makes any request fail.
flags=(--headless --disable-gpu --no-sandbox --no-first-run --disable-extensions --disable-dev-shm-usage
       --hide-scrollbars --proxy-server=127.0.0.1:9 --user-data-dir="$profile" --virtual-time-budget=5000)
"$browser" "${flags[@]}" --window-size="$size" --screenshot="$out" "$url" >/dev/null 2>"$profile/screenshot.log" || {
  cat "$profile/screenshot.log" >&2
  exit 1
}
"$browser" "${flags[@]}" --dump-dom "$url" >"$out.dom.html" 2>"$profile/dom.log" || {
  cat "$profile/dom.log" >&2
  exit 1
}
[ -s "$out" ] || { echo "render_html.sh: chromium wrote no screenshot" >&2; exit 1; }
