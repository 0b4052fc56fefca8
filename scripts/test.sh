#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, lint and type-check, build the VS Code
# extension (with its own lint, type-check and unit tests), drive it end to end in a real
# VS Code, then run every Python test that can run on a machine without a GPU or network.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check tritonsmith tests bench
.venv/bin/mypy
./scripts/build-extension.sh
./scripts/vscode-e2e.sh
.venv/bin/python -m pytest -q --durations=30 "$@"  # the slowest thirty, to keep the markers honest
