#!/usr/bin/env bash
# The fast loop (CONTRIBUTING.md): lint, then every test that needs no compiler, no real editor
# and no GPU and is not marked slow; about two minutes on two cores. Run it while you work, and
# ./scripts/test.sh (what CI runs) before you land. Extra arguments go to pytest (-x, -k NAME, a path).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || ./scripts/setup.sh
.venv/bin/ruff check tritonsmith tests bench
.venv/bin/python -m pytest -q -m "not slow and not compiler and not e2e and not gpu" "$@"
