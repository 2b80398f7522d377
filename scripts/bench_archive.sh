# Shared by the scripts that write docs/benchmarks/archive (source it): $B is the folio binary, $O
# the archive directory, and `archive NAME.json ARGS...` runs `folio ARGS... --json` into it unless
# the file is already there (so a script can be stopped and rerun), writing through a .tmp file so
# that a run that fails leaves nothing behind.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=${FOLIO:-build/folio}
O=docs/benchmarks/archive
mkdir -p "$O"
archive() {
  local out=$O/$1; shift
  [ -s "$out" ] && return
  "$B" "$@" --json "$out.tmp" && mv "$out.tmp" "$out"
}
