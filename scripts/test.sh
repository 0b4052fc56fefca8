#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, lint and type-check, build the VS Code
# extension (with its own lint, type-check and unit tests), then every Python test that can run
# on a machine without a GPU or network, then the end-to-end test in a real VS Code.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check tritonsmith tests bench
.venv/bin/mypy
./scripts/build-extension.sh
.venv/bin/python -m pytest -q "$@"
./scripts/vscode-e2e.sh
