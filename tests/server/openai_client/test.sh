#!/usr/bin/env bash
# The official openai npm client (installed from the npm registry into WORK_DIR) against two
# `folio serve`s on free loopback ports: a tiny random text model made here, and the shipped OCR
# model. Usage: test.sh FOLIO_BINARY WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
folio=$1
work=$2
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/client.mjs" "$work/"
(cd "$work" && { [ -d node_modules/openai ] || npm ci --no-audit --no-fund --silent; })
[ -d "$work/tiny" ] || "$folio" make-model --arch llama --preset tiny --seed 5 --dtype f32 --out "$work/tiny" > /dev/null
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; wait $p 2>/dev/null || true; done' EXIT
"$folio" serve --server.port 0 --server.access_log off --model.path "$work/tiny" > "$work/text.log" 2>&1 &
pids+=($!)
"$folio" serve --server.port 0 --server.access_log off > "$work/ocr.log" 2>&1 &
pids+=($!)
source "$here/../../../scripts/serve_url.sh"
text_url=$(url_of "$work/text.log")
ocr_url=$(url_of "$work/ocr.log")
node "$work/client.mjs" "$text_url/v1" "$ocr_url/v1" "$here/../../fixtures/mini2/layout_page.png"
