#!/usr/bin/env bash
# Installs dependencies, builds folio (and its Python module, installed for the system python3) and
# reads the typeset sample PDF in examples/ with the shipped model (models/folio-mini-ocr-3):
# markdown on stdout, progress and figures on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" --target folio _folio
# The Python module, with the shipped model, where the system python3 finds it (docs/python.md).
cmake --install build --component python > /dev/null
./build/folio ocr examples/sample-typeset.pdf --json build/sample-typeset.json
echo "(its source: examples/sample-typeset.md; JSON with blocks and statistics: build/sample-typeset.json)" >&2
