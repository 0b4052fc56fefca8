#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, lint, then every test that can run on a
# machine without a GPU or network.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check tritonsmith tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
