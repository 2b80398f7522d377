#!/usr/bin/env bash
# Every config key `folio serve` accepts is documented: each dotted key that `FOLIO_BINARY serve
# --help` lists (its option lines, `  --server.port TEXT ...`) must appear in the key column of the
# table in docs/server.md (the first cell of a table row; one cell may name several keys, comma
# separated). Fails naming the missing keys, and fails if the help gave fewer than 20 keys, so a
# broken extraction cannot pass.
# Usage: config_keys_documented_test.sh FOLIO_BINARY [DOC]   (DOC: default docs/server.md)
set -euo pipefail
folio=${1:?usage: config_keys_documented_test.sh FOLIO_BINARY [DOC]}
doc=${2:-$(dirname "$0")/../../docs/server.md}
fail() { echo "FAIL: $*"; exit 1; }
[ -r "$doc" ] || fail "cannot read $doc"

help=$("$folio" serve --help) || fail "'$folio serve --help' exited with $?"
# Option lines start with whitespace and the flag; a dotted flag is a config key. Descriptions that
# mention other keys (overriding inference.kv_dtype) are not at the start of a line.
keys=$(printf '%s\n' "$help" | sed -nE 's/^[[:space:]]+--([a-z0-9_]+(\.[a-z0-9_]+)+)([[:space:],].*)?$/\1/p' | sort -u)
count=$(printf '%s\n' "$keys" | grep -c . || true)
[ "$count" -ge 20 ] || fail "only $count config keys found in '$folio serve --help' (want at least 20): extraction broken?"

# The key column: the first cell of every table row, split at commas, trimmed, backticks dropped.
documented=$(sed -nE 's/^\|([^|]*)\|.*$/\1/p' "$doc" | tr ',' '\n' | tr -d '`' | sed -E 's/^[[:space:]]+//; s/[[:space:]]+$//' | sort -u)

missing=()
while IFS= read -r key; do
  grep -qxF -- "$key" <<< "$documented" || missing+=("$key")
done <<< "$keys"

if [ "${#missing[@]}" -gt 0 ]; then
  echo "FAIL: ${#missing[@]} of $count config keys are not in the key column of $doc:"
  printf '  %s\n' "${missing[@]}"
  exit 1
fi
echo "OK: all $count config keys of '$folio serve --help' are documented in $doc"
