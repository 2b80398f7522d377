#!/usr/bin/env bash
# scripts/scaleout_demo.sh, bounded: 3 replicas behind HAProxy on loopback, 36 OCR requests at
# concurrency 6. First undisturbed: every request answered, every replica used. Then, without the
# caches (so requests take long enough to be in flight), with replica 1 killed (SIGKILL) a third
# of the way in: no request lost, every failure visible to its client
# (at most the requests in flight on the killed replica), the rest answered by the survivors.
# Last, OCR and chat requests alternately on a tiny Unlimited-OCR checkpoint (which serves both)
# with the replicas sharing a Redis, replica 1 killed mid-load: none lost, and every answered
# request of a kind got the one answer a single process gives it (its hash, from bench serve).
# Usage: scaleout_test.sh FOLIO_BINARY WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
folio=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
# The first (top-level) numeric field $1 of summary file $2 (by_kind repeats ok and errors later).
field() { grep -o "\"$1\": *[0-9-]*" "$2" | head -1 | sed 's|.*: *||'; }
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
"$folio" make-model --arch unlimited-ocr --preset tiny --seed 5 --dtype f32 --out "$work/uocr" > /dev/null
"$folio" bench serve --model "$work/uocr" --kind mixed --file "$root/examples/sample-1page.pdf" --requests 4 --concurrency 2 --threads 1 \
  --json "$work/alone.json" > "$work/alone.txt"
source "$root/tests/server/bench_json.sh"
bash "$root/scripts/scaleout_demo.sh" --folio "$folio" --model "$work/uocr" --kind mixed --redis --kill --replicas 3 --requests 36 \
  --concurrency 16 --out "$work/mixed"
s=$work/mixed/summary.json
ok=$(field ok "$s"); errors=$(field errors "$s"); lost=$(field lost "$s")
[ "$lost" = 0 ] || fail "$lost requests lost (mixed)" "" "$work/mixed"
[ $((ok + errors)) = 36 ] || fail "ok + errors != 36 (mixed)" "" "$work/mixed"
[ "$errors" -le 16 ] || fail "$errors errors: more than the requests in flight on one replica (mixed)" "" "$work/mixed"
for kind in ocr chat; do
  want=$(hash_of "$kind" "$work/alone.json")
  got=$(hash_of "$kind" "$work/mixed/load.json")
  [ -n "$want" ] && [ "$want" = "$got" ] || fail "$kind answers differ from one process's ($got vs $want)" "" "$work/mixed"
done
# Every run, the killed replica's included: one distinct answer per kind (requests that failed
# visibly aside).
for run in calm kill mixed; do
  for n in $(grep -o '"distinct_answers": *[0-9]*' "$work/$run/summary.json" | sed 's|.*: *||'); do
    [ "$n" -le 1 ] || fail "$run: $n distinct answers to one request" "" "$work/$run"
  done
done
echo "scaleout_test: calm $(cat "$work/calm/summary.json")"
echo "scaleout_test: kill $(cat "$work/kill/summary.json")"
echo "scaleout_test: mixed $(cat "$s")"
