#!/usr/bin/env bash
# Installs dependencies, builds folio and reads the sample PDF in examples/ with the shipped model
# (models/folio-mini-ocr): markdown on stdout, progress and figures on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" --target folio
./build/folio ocr examples/sample-3page.pdf --json build/sample-3page.json
echo "(expected text: examples/sample-3page.txt; JSON with blocks and statistics: build/sample-3page.json)" >&2
