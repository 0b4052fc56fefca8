#!/usr/bin/env bash
# Set up a development environment in .venv: torch only when it is missing (the CPU build on
# machines without a GPU), then triton, tritonsmith itself (editable) with every extra, and
# the test tools. Safe to run again; it installs only what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PY=.venv/bin/python
"$PY" -m pip install --quiet --upgrade pip

# torch is gigabytes: install it only when it is not there, and ask for the version this
# project is tested with (pip takes the local CPU wheel on the CI machine).
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  "$PY" -m pip install --quiet "torch==2.13.0"
fi
"$PY" -m pip install --quiet -e ".[eval,llm,dev]"
echo "tritonsmith set up in .venv ($("$PY" -m tritonsmith --version))"
