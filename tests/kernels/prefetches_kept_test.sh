#!/usr/bin/env bash
# The decode kernels' software prefetches are in their machine code. GCC 12 once dropped
# __builtin_prefetch from a kernel's loops without a word (the interleaved q6_k product then read 8
# GB/s on one core where it reads 12: docs/benchmarks.md); prefetch_line is inline asm since, and
# this keeps it so. Every function of the kernels' library whose demangled name is one of the
# product and attention-stream kernels below must hold a prefetch instruction, and each kind must
# be found (a broken parse cannot pass). Exit 77 (skipped) for a build that is not optimised: there
# the helpers are calls, not inlined.
# Usage: prefetches_kept_test.sh LIBFOLIO_KERNELS.a BUILD_TYPE
set -euo pipefail
lib=$1
case "${2:-}" in Release|RelWithDebInfo|MinSizeRel) ;; *) echo "SKIP: build type '${2:-}' is not optimised"; exit 77 ;; esac
command -v objdump > /dev/null || { echo "FAIL: objdump (binutils) not found"; exit 1; }
kinds=('::qgemv<' '::x16_groups_by_inputs<' '_group_tiles[<(]' '::q6k_group_dots<' '::gemv<' '::axpy_block<' '::dot_rows<')
counts=$(objdump -d --no-show-raw-insn -C "$lib" |
  awk '/^[0-9a-f]+ <.*>:$/ { fn = $0; n[fn] = 0 } /\tprefetch/ { n[fn]++ } END { for (f in n) print n[f] "\t" f }')
fail=0
for k in "${kinds[@]}"; do
  found=$(grep -cE "$k" <<< "$counts" || true)
  [ "$found" -gt 0 ] || { echo "FAIL: no function matching '$k' in $lib"; fail=1; continue; }
  bare=$(grep -E "$k" <<< "$counts" | awk -F'\t' '$1 == 0 { print $2 }')
  if [ -n "$bare" ]; then
    echo "FAIL: functions matching '$k' without a prefetch:"
    echo "$bare"
    fail=1
  else
    echo "ok: $found functions matching '$k' hold prefetches"
  fi
done
exit $fail
