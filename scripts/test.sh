#!/usr/bin/env bash
# Installs dependencies (Debian packages), builds folio in Release and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)"
# One test per core at a time: most are short runs waiting on sockets or child processes.
cd build && ctest --output-on-failure --timeout 600 -j"$(nproc)"
