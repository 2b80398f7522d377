#!/usr/bin/env bash
# Installs dependencies (Debian packages), builds folio in Release and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure --timeout 600
