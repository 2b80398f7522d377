#!/usr/bin/env bash
# Issue 5 figures on the shipped mini model: quantised KV (q8, q4) against bf16 on the 20-page
# held-out set, sparse against rswa, rolling on composed 100- and 500-page documents, and the KV
# bytes each policy reads per decoded token at 10 and 100 pages of reference (sparse with the page
# being read in focus: also at 10, 20 and 100 pages of the held-out documents). Writes
# docs/benchmarks/archive/kv_*.json, then re-renders docs/benchmarks.md from the JSON files.
# Takes about an hour on 2 idle cores (the 500-page run alone ~8 minutes). Resumable: runs whose
# JSON exists are skipped.
set -euo pipefail
source "$(dirname "$0")/bench_archive.sh"
run() { archive "$@"; }
run kv_acc_p20_q8.json bench accuracy --pages 20 --docs 3 --kv-dtype q8 --baseline-policy rswa --baseline-kv-dtype bf16
run kv_acc_p20_q4.json bench accuracy --pages 20 --docs 3 --kv-dtype q4 --baseline-policy rswa --baseline-kv-dtype bf16
run kv_acc_p20_sparse8.json bench accuracy --pages 20 --docs 1 --policy sparse --sparse-top-k 8 --sparse-focus-pages 0 --kv-dtype bf16 --baseline-policy rswa --baseline-kv-dtype bf16
for p in 10 20 100; do
  run kv_acc_p${p}_sparse8_focus1.json bench accuracy --pages $p --docs 1 --policy sparse --sparse-top-k 8 --sparse-focus-pages 1 --kv-dtype bf16 --baseline-policy rswa --baseline-kv-dtype bf16
done
# The same 100 pages with the reference in a tiered store: 4 MiB of RAM, the rest in a mapped file.
mkdir -p build/kv-offload
run kv_acc_p100_sparse8_focus1_offload.json bench accuracy --pages 100 --docs 1 --policy sparse --sparse-top-k 8 --sparse-focus-pages 1 --kv-dtype bf16 --kv-offload build/kv-offload --kv-hot-bytes 4194304 --baseline-policy sparse --baseline-kv-dtype bf16
run kv_acc_p100_rolling.json bench accuracy --pages 100 --docs 1 --policy rolling --kv-dtype bf16 --baseline-policy rolling --baseline-kv-dtype bf16
run kv_acc_p500_rolling.json bench accuracy --pages 500 --docs 1 --policy rolling --kv-dtype bf16 --baseline-policy rolling --baseline-kv-dtype bf16
for pol in sparse rswa; do
  for ref in 3300 33000; do
    run "kv_dec_${pol}_ref${ref}.json" bench decode --model models/folio-mini-ocr --policy $pol --kv-dtype bf16 --ref-tokens $ref --gen-tokens 512 --sample-every 128
  done
done
"$B" bench report --out docs/benchmarks --render-only
