#!/usr/bin/env bash
# Trains folio-mini-ocr from scratch and exports it to models/folio-mini-ocr, with the loss plot.
# About 37 minutes of training on 2 idle CPU cores (Debian python3-torch); resumable: run it again after
# an interruption and it continues from WORK/state.pt.
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${WORK:-train-work/mini}
/usr/bin/python3 tools/train/train.py --work "$WORK" --steps 1500 --ctc-steps 700 --seed 1
/usr/bin/python3 tools/train/export.py --state "$WORK/state.pt" --out models/folio-mini-ocr
/usr/bin/python3 tools/train/plot_loss.py "$WORK/log.csv" docs/mini-ocr-training.png
