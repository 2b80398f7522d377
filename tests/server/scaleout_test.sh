#!/usr/bin/env bash
# scripts/scaleout_demo.sh, bounded: 3 replicas behind HAProxy on loopback, 36 OCR requests at
# concurrency 6. First undisturbed: every request answered, every replica used. Then, without the
# caches (so requests take long enough to be in flight), with replica 1 killed (SIGKILL) a third
# of the way in: no request lost, every failure visible to its client
# (at most the requests in flight on the killed replica), the rest answered by the survivors.
# Usage: scaleout_test.sh FOLIO_BINARY WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
folio=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
field() { sed -n "s|.*\"$1\": *\([0-9-]*\).*|\1|p" "$2"; }
fail() { echo "FAIL: $*"; cat "$3/summary.json" 2> /dev/null; exit 1; }

bash "$root/scripts/scaleout_demo.sh" --folio "$folio" --replicas 3 --requests 36 --concurrency 6 --out "$work/calm"
s=$work/calm/summary.json
[ "$(field ok "$s")" = 36 ] || fail "not every request answered" "" "$work/calm"
for i in 1 2 3; do
  n=$(sed -n "s|.*\"folio$i\": *\([0-9]*\).*|\1|p" "$s")
  [ "${n:-0}" -gt 0 ] || fail "replica $i answered nothing" "" "$work/calm"
done

bash "$root/scripts/scaleout_demo.sh" --folio "$folio" --replicas 3 --requests 36 --concurrency 6 --kill --no-cache --out "$work/kill"
s=$work/kill/summary.json
ok=$(field ok "$s"); errors=$(field errors "$s"); lost=$(field lost "$s")
[ "$lost" = 0 ] || fail "$lost requests lost" "" "$work/kill"
[ $((ok + errors)) = 36 ] || fail "ok + errors != 36" "" "$work/kill"
[ "$errors" -le 6 ] || fail "$errors errors: more than the requests in flight on one replica" "" "$work/kill"
grep -q '"folio1": null' "$s" || fail "replica 1 still answers after SIGKILL" "" "$work/kill"
echo "scaleout_test: calm $(cat "$work/calm/summary.json")"
echo "scaleout_test: kill $(cat "$s")"
