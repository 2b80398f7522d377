#!/usr/bin/env bash
# Installs dependencies, builds folio and runs it end to end on a small checkpoint made on the spot:
# a random-weight Unlimited-OCR decoder (tiny preset), decoded under R-SWA with KV statistics.
# (OCR of the sample PDF with the shipped model replaces this once the model and the vision
# encoder land; see the open issues.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" --target folio
./build/folio make-model --arch unlimited-ocr-decoder --preset tiny --seed 1 --out build/demo-model
./build/folio inspect --model build/demo-model
./build/folio generate --model build/demo-model --prompt "The reference stays pinned." --max-tokens 200 \
  --policy rswa --window 32 --stats
