#!/usr/bin/env bash
# Issue 3 figures on the full-size random-weight Unlimited-OCR checkpoint (DeepEncoder + decoder,
# bf16, written by `folio make-model` when missing): the encoder's milliseconds per page in Base
# mode, and a 40-page document (synthetic A4 pages encoded by the model, its multi-page prompt)
# followed by 40,000 generated tokens under rswa: decode tokens/s, KV bytes every 1,000 tokens and
# peak RSS. 40 pages (10,932 tokens) + 40,000 is past the checkpoint's 32K positions: --context lets
# RoPE continue (random weights, so only speed and memory mean anything). Writes
# docs/benchmarks/archive/ocr_*.json, then re-renders docs/benchmarks.md. About 1.5 hours on 2 idle
# cores. Resumable (a finished run is not repeated).
set -euo pipefail
source "$(dirname "$0")/bench_archive.sh"
MODEL=${MODEL:-$HOME/.cache/folio/uocr-ocr-full}
[ -s "$MODEL/model.safetensors" ] ||
  "$B" make-model --arch unlimited-ocr --preset full --seed 1 --dtype bf16 --out "$MODEL"
archive ocr_encode_base.json bench encode --model "$MODEL" --mode base --runs 3 --threads 2
archive ocr_40pages_rswa.json bench decode --model "$MODEL" --pages 40 --gen-tokens 40000 --context 65536 --sample-every 1000 \
  --policy rswa --window 128 --kv-dtype bf16 --threads 2
"$B" bench report --out docs/benchmarks --render-only
