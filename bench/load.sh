#!/usr/bin/env bash
# Load test: 60 s of wrk against gunicorn on 127.0.0.1, memory sampled (see bench/load.py).
# Installs Debian's wrk if it is missing. Extra arguments go to bench/load.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
if ! command -v wrk >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
fi
exec "$PYTHON" bench/load.py "$@"
