#!/usr/bin/env bash
# Builds the VS Code extension from the repository root: install the locked npm packages, lint,
# type-check, run the unit tests (vscode API stubbed), bundle, build the tritonsmith wheel into
# bundled/ and package tritonsmith.vsix. Idempotent; prints the .vsix path last.
#
#   PYTHON=/path/to/python scripts/build-extension.sh   # the Python that builds the wheel
#                                                        # (default: .venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export PYTHON
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

npm ci --no-audit --no-fund --loglevel=error
npm run --silent lint
npm run --silent typecheck
npm test --silent
npm run --silent package
test -s tritonsmith.vsix
echo "$(pwd)/tritonsmith.vsix"
