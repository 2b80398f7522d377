#!/usr/bin/env bash
# Accuracy of the shipped mini OCR model on the held-out sets, measured by `folio bench accuracy`
# (C++), and tesseract on the same pages. Writes docs/benchmarks/archive/accuracy_*.json. Takes a few
# minutes on 2 cores (tesseract is the slow part).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/benchmarks/archive
B=./build/folio
# 1-page set: rswa (bf16 KV) against the full/f32 baseline.
$B bench accuracy --docs 20 --pages 1 --policy rswa --kv-dtype bf16 --json docs/benchmarks/archive/accuracy_p1_rswa.json
# 20-page set, decoded in one pass: rswa against full (both f32 KV, so only the policy differs).
$B bench accuracy --docs 3 --pages 20 --policy rswa --kv-dtype f32 --json docs/benchmarks/archive/accuracy_p20_rswa.json
# The same documents through tesseract (300 dpi render, --psm 6).
$B bench accuracy --engine tesseract --docs 20 --pages 1 --json docs/benchmarks/archive/accuracy_p1_tesseract.json
$B bench accuracy --engine tesseract --docs 3 --pages 20 --json docs/benchmarks/archive/accuracy_p20_tesseract.json
