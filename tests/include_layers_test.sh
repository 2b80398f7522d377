#!/usr/bin/env bash
# Folders are the layers, and includes point down: every `#include "DIR/..."` of a file under
# src/ names its own folder or a folder whose library its library links, directly or through
# others, as CMakeLists.txt declares them (folio_layer(NAME DIR DEPS...), and the executable's
# target_link_libraries for src/cli). Fails naming each include that runs up or sideways, and fails
# when it checked fewer than 500 includes (a broken parse cannot pass).
# Usage: include_layers_test.sh [SOURCE_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cmake="$root/CMakeLists.txt"

declare -A dir_of deps
while read -r name dir rest; do
  dir_of[$name]=$dir
  deps[$name]=$(tr ' ' '\n' <<< "$rest" | grep '^folio_' | tr '\n' ' ' || true)
done < <(tr '\n' ' ' < "$cmake" | grep -oE 'folio_layer\([a-z_]+ [a-z/]+[^)]*\)' | sed -E 's/^folio_layer\(([a-z_]+) ([a-z/]+)(.*)\)$/\1 \2 \3/')
dir_of[folio_cli]=cli
deps[folio_cli]=$(tr '\n' ' ' < "$cmake" | grep -oE 'target_link_libraries\(folio PRIVATE [^)]*\)' | tr ' ()' '\n\n\n' | grep '^folio_' | tr '\n' ' ')
[ "${#dir_of[@]}" -ge 10 ] || { echo "FAIL: found ${#dir_of[@]} layers in $cmake"; exit 1; }

# Every layer a layer may include: itself and what it links, transitively.
declare -A reach
for name in "${!dir_of[@]}"; do
  seen=" $name "
  todo="${deps[$name]:-}"
  while [ -n "${todo// /}" ]; do
    next=""
    for d in $todo; do
      [[ "$seen" == *" $d "* ]] && continue
      seen+="$d "
      next+="${deps[$d]:-} "
    done
    todo=$next
  done
  reach[$name]=$seen
done

# The layer of a path relative to src/: the layer whose folder is its longest leading folder.
layer_of() {
  local path=$1 best="" best_len=0 name d
  for name in "${!dir_of[@]}"; do
    d=${dir_of[$name]}
    if [[ "$path" == "$d/"* ]] && [ "${#d}" -gt "$best_len" ]; then best=$name best_len=${#d}; fi
  done
  echo "$best"
}

checked=0
bad=()
while IFS= read -r file; do
  rel=${file#"$root/src/"}
  own=$(layer_of "$rel")
  [ -n "$own" ] || { bad+=("$rel: in no layer's folder"); continue; }
  while IFS= read -r inc; do
    target=$(layer_of "$inc")
    [ -n "$target" ] || continue  # a third-party header
    checked=$((checked + 1))
    [[ "${reach[$own]}" == *" $target "* ]] || bad+=("$rel ($own) includes $inc ($target)")
  done < <(sed -nE 's/^#include "([^"]+)".*/\1/p' "$file")
done < <(find "$root/src" -name '*.cpp' -o -name '*.h' | sort)

[ "$checked" -ge 500 ] || { echo "FAIL: only $checked includes checked: parse broken?"; exit 1; }
if [ "${#bad[@]}" -gt 0 ]; then
  echo "FAIL: ${#bad[@]} includes run up or across the layers:"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "OK: $checked includes of src/ point down the ${#dir_of[@]} layers of CMakeLists.txt"
