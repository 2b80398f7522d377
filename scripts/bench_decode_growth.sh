#!/usr/bin/env bash
# The engine-core decode benchmark: full-size random-weight Unlimited-OCR decoder (bf16), 4096
# reference tokens, 16384 generated tokens, rswa and full, 2 threads. Writes
# docs/benchmarks/archive/decode_{rswa,full}.json. Takes about 35 minutes on 2 cores; needs ~7 GB of RAM
# and 6 GB of disk for the checkpoint (made once under $MODEL_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/benchmarks/archive
MODEL_DIR=${MODEL_DIR:-/work/models/uocr-full-bf16}
GEN=${GEN:-16384}
GEN_FULL=${GEN_FULL:-8192}  # full grows, so 8192 already shows it (and takes ~15 min instead of ~35)
[ -f "$MODEL_DIR/model.safetensors" ] || ./build/folio make-model --arch unlimited-ocr-decoder --preset full --seed 1 --dtype bf16 --out "$MODEL_DIR"
for policy in ${POLICIES:-rswa full}; do
  ./build/folio bench decode --model "$MODEL_DIR" --policy "$policy" --window 128 --kv-dtype bf16 \
    --ref-tokens 4096 --gen-tokens "$([ "$policy" = full ] && echo "$GEN_FULL" || echo "$GEN")" --sample-every 1024 --sample-bandwidth --threads 2 --json "docs/benchmarks/archive/decode_${policy}.json"
done
