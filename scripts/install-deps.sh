#!/usr/bin/env bash
# Installs everything folio needs to build and test, from Debian packages only (the Python
# module's build and test packages, and chromium for the browser page's test, among them).
# Safe to run again: apt-get skips what is already there.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config \
  libopenblas-dev libopenblas0-pthread \
  nlohmann-json3-dev libgtest-dev libgmock-dev libcli11-dev libfmt-dev \
  libpoppler-cpp-dev libstb-dev \
  libcpp-httplib-dev libboost1.81-dev libyaml-cpp-dev libssl-dev libspdlog-dev gnuplot-nox \
  libhiredis-dev redis-server openssl curl haproxy \
  clang libclang-rt-14-dev prometheus \
  python3-dev pybind11-dev python3-pytest python3-venv python3-pip python3-setuptools python3-wheel \
  chromium \
  > /dev/null
# Node.js and npm for the openai npm client test (tests/server/openai_client): the machine's own
# when it has them, else Debian's.
if ! command -v npm > /dev/null; then $SUDO apt-get install -y -qq --no-install-recommends nodejs npm > /dev/null; fi
echo "folio: dependencies installed"
