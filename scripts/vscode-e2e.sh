#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code: code-server (VS Code's workbench
# and extension host) in headless chromium, driven by playwright-core.
#
#   1. client-vscode/e2e/setup.sh installs chromium, code-server and playwright-core into .e2e/
#      (fast when already there);
#   2. a throwaway profile (config, user data, extensions, workspace) under .e2e/run/;
#   3. `code-server --install-extension tritonsmith.vsix`, user setting
#      `tritonsmith.interpreter` = a bare venv without tritonsmith (the first run's install
#      question; the test then chooses .venv/bin/python);
#   4. code-server on 127.0.0.1 (a free port), then client-vscode/e2e/run-e2e.mjs;
#   5. code-server (and the extension host and language server it spawned) stopped by its
#      process group.
#
# Screenshots and logs: test-artifacts/vscode-e2e/. Exits non-zero on any failure; skips (exit 0,
# with a message) only when chromium cannot be installed at all.
#
# Env: TRITONSMITH_VSIX (default ./tritonsmith.vsix), TRITONSMITH_PYTHON (default
# ./.venv/bin/python), E2E_ARTIFACTS (default ./test-artifacts/vscode-e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
T0=$(date +%s)

E2E=$REPO/.e2e
VSIX=${TRITONSMITH_VSIX:-$REPO/tritonsmith.vsix}
PYTHON=${TRITONSMITH_PYTHON:-$REPO/.venv/bin/python}
ART=${E2E_ARTIFACTS:-$REPO/test-artifacts/vscode-e2e}

rc=0
bash client-vscode/e2e/setup.sh || rc=$?
if [ "$rc" = 3 ]; then
  echo "SKIP vscode-e2e: chromium cannot be installed on this machine (see above), so there is no browser to drive VS Code."
  exit 0
elif [ "$rc" != 0 ]; then
  echo "vscode-e2e: setup failed (exit $rc)" >&2
  exit "$rc"
fi

[ -f "$VSIX" ] || { echo "vscode-e2e: $VSIX not found; build it first (scripts/build-extension.sh)" >&2; exit 1; }
[ -x "$PYTHON" ] || { echo "vscode-e2e: interpreter $PYTHON not found; run scripts/setup.sh" >&2; exit 1; }
PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")   # absolute, not resolved

# ------------------------------------------------------------------ throwaway profile
RUN=$E2E/run
rm -rf "$RUN"
mkdir -p "$ART" && find "$ART" -maxdepth 1 -type f \( -name '*.png' -o -name '*.log' \) -delete
mkdir -p "$RUN/ud/User" "$RUN/ext" "$RUN/xdg-config" "$RUN/xdg-data" "$RUN/tmp" "$RUN/ws" "$ART"
export XDG_CONFIG_HOME="$RUN/xdg-config" XDG_DATA_HOME="$RUN/xdg-data" XDG_CACHE_HOME="$RUN/tmp"
export TMPDIR="$RUN/tmp"
PORT=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$RUN/config.yaml"
# The first run: an interpreter without tritonsmith (a bare venv of the same Python).
BARE_PYTHON=$RUN/bare/bin/python
"$PYTHON" -c 'import sys; print(sys.base_prefix)' > "$RUN/base-prefix"
"$(cat "$RUN/base-prefix")/bin/python3" -m venv --without-pip "$RUN/bare"
# (from another folder than the checkout, as the extension runs it: `-c` puts the folder on sys.path)
if (cd "$RUN" && "$BARE_PYTHON" -c 'import tritonsmith' 2>/dev/null); then
  echo "vscode-e2e: $BARE_PYTHON imports tritonsmith" >&2; exit 1
fi
cat > "$RUN/ud/User/settings.json" <<EOF
{
  "tritonsmith.interpreter": "$BARE_PYTHON",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "git.enabled": false,
  "files.autoSave": "afterDelay",
  "files.autoSaveDelay": 3000,
  "editor.lightbulb.enabled": "on",
  "chat.commandCenter.enabled": false,
  "window.commandCenter": false
}
EOF
# The workspace: a small project with a kernel that breaks TS102 and TS101...
WS=$RUN/ws
cp examples/mistakes/softmax.py "$WS/softmax.py"
# ...two quick fixes that must compile (TS109 on a Python number, TS101 at a literal launch
# value), a library-style launcher returning a tuple, and a two-pass softmax with a harness:
# the search's structural rewrite, accepted and verified.
cp client-vscode/e2e/workspace/fixes.py client-vscode/e2e/workspace/library_softmax.py "$WS/"
cp examples/softmax.py "$WS/two_pass_softmax.py"
printf '[project]\nname = "e2e-kernels"\nversion = "0.0.0"\n\n[tool.tritonsmith]\n' > "$WS/pyproject.toml"

CS_BIN=$E2E/server/node_modules/.bin/code-server
CS_ARGS=(--config "$RUN/config.yaml" --user-data-dir "$RUN/ud" --extensions-dir "$RUN/ext")
echo "vscode-e2e: installing $VSIX"
"$CS_BIN" "${CS_ARGS[@]}" --install-extension "$VSIX" > "$RUN/install.log" 2>&1 \
  || { cat "$RUN/install.log" >&2; exit 1; }
grep -v '^\[' "$RUN/install.log" || true
"$CS_BIN" "${CS_ARGS[@]}" --list-extensions --show-versions 2>/dev/null | grep -v '^\[' || true

# ------------------------------------------------------------------ code-server
CS_PID=
stop_cs() {
  [ -n "$CS_PID" ] || return 0
  kill -TERM -- "-$CS_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 -- "-$CS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$CS_PID" 2>/dev/null || true
  CS_PID=
}
collect_logs() {
  # The extension host writes every output channel to disk (log channels under
  # exthost1/<extension id>/, plain ones under exthost1/output_logging_*/): keep the
  # "Tritonsmith" channel and the extension host's log next to the screenshots.
  local f
  while IFS= read -r -d '' f; do cp "$f" "$ART/output-$(basename "$f" | sed 's/^[0-9]*-//')" 2>/dev/null || true
  done < <(find "$RUN/ud/logs" -type f -iname '*tritonsmith*.log' -print0 2>/dev/null)
  while IFS= read -r -d '' f; do cp "$f" "$ART/$(basename "$f")" 2>/dev/null || true
  done < <(find "$RUN/ud/logs" \( -name 'remoteexthost.log' -o -name 'exthost.log' \) -print0 2>/dev/null)
  cp "$RUN/cs.log" "$ART/code-server.log" 2>/dev/null || true
}
trap 'stop_cs' EXIT
trap 'exit 130' INT TERM

setsid "$CS_BIN" "${CS_ARGS[@]}" --auth none --bind-addr "127.0.0.1:$PORT" \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override "$WS" > "$RUN/cs.log" 2>&1 < /dev/null &
CS_PID=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" \
  || { echo "vscode-e2e: code-server did not start" >&2; cat "$RUN/cs.log" >&2; exit 1; }
echo "vscode-e2e: code-server on http://127.0.0.1:$PORT (process group $CS_PID)"

# ------------------------------------------------------------------ the test
trc=0
CS_URL="http://127.0.0.1:$PORT" CS_WS="$WS" CS_TOOLS="$E2E/tools" CS_OUT="$ART" \
  CS_USER_DATA="$RUN/ud" CS_PYTHON="$PYTHON" CS_BARE_PYTHON="$BARE_PYTHON" node client-vscode/e2e/run-e2e.mjs || trc=$?
stop_cs
collect_logs
echo "vscode-e2e: artifacts in $ART:"
ls -1 "$ART" | sed "s|^|  $ART/|"
echo "vscode-e2e: $([ "$trc" = 0 ] && echo PASSED || echo FAILED) in $(( $(date +%s) - T0 ))s"
exit "$trc"
