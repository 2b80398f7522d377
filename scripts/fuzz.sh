#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan/UBSan) in build-fuzz and runs each for a bounded
# time. scripts/test.sh (so CI) runs it for 20 s per target: see docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#
# Each target starts from a fresh work corpus, build-fuzz/corpus/<target>/, seeded from
# fuzz/corpus/<target>/ (the repository's seeds are never written to). Exits 1 when any target
# found a crash, a sanitizer report, a timeout or a memory blow-up; the reproducer files are named
# at the end (re-run one with: build-fuzz/fuzz/<target> <file>).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(chat_request_fuzz ocr_request_fuzz document_fuzz)
build=$root/build-fuzz
jobs=${FUZZ_BUILD_JOBS:-1}

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DFOLIO_FUZZ=ON -DFOLIO_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -g" -DCMAKE_C_FLAGS_RELEASE="-O2 -g" > /dev/null
cmake --build "$build" --target "${targets[@]}" -j"$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/fuzz/lsan.supp:print_suppressions=0}
failed=()
for t in "${targets[@]}"; do
  work=$build/corpus/$t
  art=$build/artifacts/$t
  rm -rf "$work"
  mkdir -p "$work" "$art"
  cp "$root/fuzz/corpus/$t/"* "$work/"
  echo "== $t: ${secs}s from $(ls "$work" | wc -l) seeds"
  dict=()
  [ -f "$root/fuzz/${t%_fuzz}.dict" ] && dict=(-dict="$root/fuzz/${t%_fuzz}.dict")
  status=0
  "$build/fuzz/$t" "$work" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" 2> "$build/$t.log" || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ *DONE' "$build/$t.log" || true
  if [ "$status" -ne 0 ]; then
    echo "!! $t failed (exit $status); log: $build/$t.log"
    grep -E 'ERROR: |runtime error:|Test unit written to' "$build/$t.log" | head -5 || true
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "findings in: ${failed[*]}; reproducers:"
  for t in "${failed[@]}"; do ls -1 "$build/artifacts/$t/"* 2> /dev/null | sed 's/^/  /'; done
  exit 1
fi
echo "no findings"
