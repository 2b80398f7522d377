#!/usr/bin/env bash
# `python3 -m pip install --no-build-isolation .` into a fresh virtual environment (Debian's
# python3 with its system packages, no index: nothing is downloaded), then, outside the source
# tree and with no FOLIO_MODEL, the installed package reads the typeset sample with the model it
# carries. Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR (BUILD_DIR: an existing CMake
# build, which setup.py reuses).
set -euo pipefail
src=$1
build=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cd "$work"
FOLIO_BUILD_DIR="$build" "$work/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index -q "$src"
env -u FOLIO_MODEL -u PYTHONPATH FOLIO_SRC="$src" FOLIO_VENV="$work/venv" "$work/venv/bin/python" - <<'PY'
import os
import folio

assert folio.__file__.startswith(os.environ["FOLIO_VENV"] + "/"), folio.__file__
doc = folio.Engine().ocr(os.path.join(os.environ["FOLIO_SRC"], "examples", "sample-typeset.pdf"))
assert doc.markdown.startswith("# Reading Long Documents on a Small Machine"), doc.markdown[:80]
assert doc.model == "folio-mini-ocr-3"
print("folio: installed with pip into", os.path.dirname(folio.__file__))
PY
