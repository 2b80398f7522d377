#!/usr/bin/env bash
# Issue 6 load figures: `folio bench serve` against the shipped mini model, with the page and
# reference KV caches (the same document every request: decode-bound) and without them (every
# request encoded and prefilled, as distinct documents are). Writes docs/benchmarks/archive/serve_*.json,
# then re-renders docs/benchmarks.md. About 10 minutes on 2 idle cores. Resumable.
set -euo pipefail
source "$(dirname "$0")/bench_archive.sh"
run() {
  local name=$1; shift
  archive "$name" bench serve --threads 2 "$@"
}
run serve_c1.json --concurrency 1 --requests 100
run serve_c8.json --concurrency 8 --requests 200
run serve_c16.json --concurrency 16 --requests 200
run serve_c1_nocache.json --concurrency 1 --requests 100 --no-cache
run serve_c8_nocache.json --concurrency 8 --requests 200 --no-cache
"$B" bench report --out docs/benchmarks --render-only
