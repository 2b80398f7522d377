#!/usr/bin/env bash
# Issue 5 logit divergence on the full-size random-weight Unlimited-OCR decoder: q8, q4 and sparse
# KV against f32 KV under rswa, teacher-forced (folio bench divergence). Makes the checkpoint first
# if it is not there (folio make-model, about 6 GB). Writes docs/benchmarks/archive/div_*.json, then
# re-renders docs/benchmarks.md. About 15 minutes on 2 cores. Resumable.
set -euo pipefail
source "$(dirname "$0")/bench_archive.sh"
M=${FOLIO_FULL_DECODER:-build/models/uocr-full-bf16}
[ -s "$M/config.json" ] || "$B" make-model --arch unlimited-ocr-decoder --preset full --seed 1 --dtype bf16 --out "$M"
run() {
  local name=$1; shift
  archive "$name" bench divergence --model "$M" --ref-tokens 1024 --gen-tokens 48 --threads 2 "$@"
}
run div_full_q8.json --policy rswa --kv-dtype q8
run div_full_q4.json --policy rswa --kv-dtype q4
run div_full_sparse8.json --policy sparse --sparse-top-k 8 --kv-dtype f32
"$B" bench report --out docs/benchmarks --render-only
