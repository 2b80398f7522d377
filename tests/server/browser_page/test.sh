#!/usr/bin/env bash
# The page `folio serve` answers at /, in a real headless browser: Debian's chromium driven by
# puppeteer-core (installed from the npm registry into WORK_DIR at its first run), against two
# servers on free loopback ports, one open and one with API keys (page.mjs says what is checked).
# Usage: test.sh FOLIO_BINARY WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
folio=$1
work=$2
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/page.mjs" "$work/"
(cd "$work" && { [ -d node_modules/puppeteer-core ] || npm ci --no-audit --no-fund --silent; })
command -v "${CHROMIUM:-/usr/bin/chromium}" > /dev/null || { echo "FAIL: chromium not installed (scripts/install-deps.sh)"; exit 1; }
key=browser-test-key-1
printf '%s\n' "$key" > "$work/keys"
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; wait $p 2>/dev/null || true; done' EXIT
"$folio" serve --server.port 0 --server.access_log off --inference.threads 1 > "$work/open.log" 2>&1 &
pids+=($!)
"$folio" serve --server.port 0 --server.access_log off --inference.threads 1 --server.api_keys_file "$work/keys" > "$work/keyed.log" 2>&1 &
pids+=($!)
source "$here/../../../scripts/serve_url.sh"
open_url=$(url_of "$work/open.log")
keyed_url=$(url_of "$work/keyed.log")
HOME="$work" node "$work/page.mjs" "$open_url" "$keyed_url" "$key" "$(realpath "$here/../../../examples/sample-typeset.pdf")" \
  "$(realpath "$here/../../../tests/fixtures/mini2/figure_page.png")"
