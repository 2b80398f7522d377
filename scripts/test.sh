#!/usr/bin/env bash
# Installs dependencies (Debian packages), builds folio in Release and runs the whole test suite,
# then each libFuzzer target for a bounded time (FOLIO_FUZZ_SECONDS per target, default 20; 0 skips
# them; scripts/fuzz.sh, docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)"
# The Python module where the system python3 finds it, as scripts/demo.sh leaves it.
cmake --install build --component python > /dev/null
# One test per core at a time: most are short runs waiting on sockets or child processes.
(cd build && ctest --output-on-failure --timeout 600 -j"$(nproc)")
fuzz_seconds=${FOLIO_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ]; then FUZZ_BUILD_JOBS=$(nproc) bash scripts/fuzz.sh "$fuzz_seconds"; fi
