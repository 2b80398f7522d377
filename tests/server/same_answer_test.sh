#!/usr/bin/env bash
# Same request, same answer (issue 44): one `folio serve` (in-process in `folio bench serve`) under
# 64 identical requests at concurrency 24 (2 threads) gives every one of them the answer a lone
# request gets from a server on 1 thread (a replica started with other --threads answers alike),
# for OCR (examples/sample-1page.pdf) and greedy chat (320 tokens), each with and without the
# caches (without, every request prefills, so prefill chunks share steps with other requests'
# decode rows; chat answers carry each token's logprob, so any bit of the logits counts), on a
# tiny Unlimited-OCR checkpoint (MoE decoder) and on its Q8_0 and Q4_K_M GGUF conversions (text model + mmproj).
# Usage: same_answer_test.sh FOLIO_BINARY WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
folio=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
pdf=$root/examples/sample-1page.pdf
fail() { echo "FAIL: $*"; exit 1; }
source "$root/tests/server/bench_json.sh"

"$folio" make-model --arch unlimited-ocr --preset tiny --seed 3 --out "$work/uocr" > /dev/null
"$folio" convert --model "$work/uocr" --out "$work/q8.gguf" --mmproj-out "$work/mmproj.gguf" --type q8_0 > /dev/null
"$folio" convert --model "$work/uocr" --out "$work/q4.gguf" --type q4_k_m > /dev/null

# check NAME KIND MODEL_ARGS... : the lone answer on 1 thread, then 64 at concurrency 24 on 2 (and
# without caches).
check() {
  local name=$1 kind=$2
  shift 2
  local tokens=()
  [ "$kind" = chat ] && tokens=(--max-tokens 320 --logprobs)
  "$folio" bench serve "$@" --kind "$kind" --file "$pdf" "${tokens[@]}" --requests 1 --concurrency 1 --threads 1 \
    --json "$work/$name-alone.json" > "$work/$name-alone.log" 2>&1
  local want
  want=$(hash_of "$kind" "$work/$name-alone.json")
  [ -n "$want" ] || fail "$name: no answer alone"
  local runs=(crowd crowd-no-cache)
  for run in "${runs[@]}"; do
    local extra=()
    [ "$run" = crowd-no-cache ] && extra=(--no-cache)
    "$folio" bench serve "$@" --kind "$kind" --file "$pdf" "${tokens[@]}" --requests 64 --concurrency 24 --threads 2 \
      --batch-size 24 "${extra[@]}" --json "$work/$name-$run.json" > "$work/$name-$run.log" 2>&1
    local n got
    n=$(distinct_of "$kind" "$work/$name-$run.json")
    got=$(hash_of "$kind" "$work/$name-$run.json")
    [ "$n" = 1 ] || fail "$name $run: $n distinct answers to one request"
    [ "$got" = "$want" ] || fail "$name $run: the crowd's answer ($got) is not the lone one ($want)"
    grep -q '"ok": 64' "$work/$name-$run.json" || fail "$name $run: not every request answered"
    echo "same_answer_test: $name $kind $run: 64 answers, 1 distinct, the lone one ($want)"
  done
}
check bf16 ocr --model "$work/uocr"
check bf16 chat --model "$work/uocr"
check q8_0 ocr --model "$work/q8.gguf" --mmproj "$work/mmproj.gguf"
check q4_k_m chat --model "$work/q4.gguf"
# The control: the same crowd with inference.batch_invariant false mixes rows into sgemm calls, and
# the chat answers (whose logprobs carry every bit of the chosen logits) come apart.
"$folio" bench serve --model "$work/uocr" --kind chat --max-tokens 320 --logprobs --requests 64 --concurrency 24 --threads 2 \
  --batch-size 24 --no-cache --mixed-rows --json "$work/control.json" > "$work/control.log" 2>&1
n=$(distinct_of chat "$work/control.json")
[ "$n" -gt 1 ] || fail "control: rows mixed in one pass per step still gave one answer ($n): the test would not see a regression"
echo "same_answer_test: control (batch_invariant false): $n distinct chat answers among 64"
