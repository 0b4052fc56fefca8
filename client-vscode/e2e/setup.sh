#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, into the project-local folder .e2e/
# (git-ignored; nothing goes into the home folder):
#   - Debian packages: chromium (the browser playwright-core drives), fonts, ripgrep, and the
#     toolchain/headers code-server's native modules compile against;
#   - code-server (VS Code's workbench and extension host served to a browser; installs from
#     the npm registry, no VS Code download) in .e2e/server;
#   - playwright-core (no browser download; it drives /usr/bin/chromium) in .e2e/tools.
# Idempotent: a second run checks stamps and returns in about a second.
#
# Exit status: 0 ready; 3 chromium is not installed and cannot be installed (the caller may skip
# the test); anything else is a setup failure.
#
# Recipe and pitfalls: ../shared/tools/vscode-e2e/ (ripgrep download cache seeded with the
# Debian rg, npm_config_yes for node-pty's npx node-gyp, npm_config_nodedir=/usr, XDG dirs).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
E2E=${E2E_ROOT:-$REPO/.e2e}
CS_VERSION=${CS_VERSION:-4.100.3}   # VS Code 1.100.3; engines.node = 20
PW_VERSION=${PW_VERSION:-1.65.1}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

T0=$(date +%s)
phase() { echo "e2e setup [$(( $(date +%s) - T0 ))s] $*"; }

mkdir -p "$E2E/tmp" "$E2E/npm-cache" "$E2E/xdg-config" "$E2E/xdg-data" "$E2E/logs"
# Keep every tool's scratch and cache inside .e2e/: npm's cache (and npx's), node-gyp,
# @vscode/ripgrep's download cache (it lives in os.tmpdir()), code-server's XDG files.
export TMPDIR="$E2E/tmp" npm_config_cache="$E2E/npm-cache"
export XDG_CONFIG_HOME="$E2E/xdg-config" XDG_DATA_HOME="$E2E/xdg-data" XDG_CACHE_HOME="$E2E/tmp"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
# node-pty's postinstall runs `npx node-gyp configure`: npx must be allowed to fetch it.
export npm_config_yes=true

# ------------------------------------------------------------------ 1. Debian packages
APT_PKGS=(chromium fonts-liberation fonts-dejavu-core ripgrep build-essential python3 pkg-config
          libkrb5-dev ca-certificates curl)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  phase "apt-get install ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo -n); else SUDO=(false); fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${SUDO[@]}" apt-get update -qq >"$E2E/logs/apt.log" 2>&1 \
         && "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
              >>"$E2E/logs/apt.log" 2>&1; }; then
    tail -20 "$E2E/logs/apt.log" >&2 || true
    if [ ! -x "$CHROMIUM" ]; then
      echo "chromium is not installed at $CHROMIUM and apt-get could not install it" >&2
      exit 3
    fi
    # The browser is there: go on; a step that needs a missing package fails on its own.
    echo "WARNING: apt-get could not install ${missing[*]} (see $E2E/logs/apt.log); going on" >&2
  fi
fi
[ -x "$CHROMIUM" ] || { echo "no chromium at $CHROMIUM (set CHROMIUM to the browser's path)" >&2; exit 1; }
node -v | grep -q '^v20\.' || { echo "Node 20 is required (code-server $CS_VERSION: engines.node=20); found $(node -v 2>&1)" >&2; exit 1; }
if [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir="${npm_config_nodedir:-/usr}"   # node-gyp: no header download
fi

# ------------------------------------------------------------------ 2. code-server
CS_STAMP="$E2E/server/.installed-$CS_VERSION"
if [ ! -f "$CS_STAMP" ] || [ ! -x "$E2E/server/node_modules/.bin/code-server" ]; then
  # @vscode/ripgrep's postinstall downloads ripgrep from GitHub unless its cache
  # ($TMPDIR/vscode-ripgrep-cache-<pkgver>/ripgrep-<VERSION>-<target>.tar.gz) holds it:
  # seed it with the Debian rg.
  phase "seed @vscode/ripgrep's download cache with the Debian rg"
  PEEK=$(mktemp -d)
  ( cd "$PEEK" && npm pack --silent "code-server@$CS_VERSION" >/dev/null \
    && tar xzf code-server-*.tgz package/lib/vscode/npm-shrinkwrap.json )
  RG_PKG_VER=$(node -p "require('$PEEK/package/lib/vscode/npm-shrinkwrap.json').packages['node_modules/@vscode/ripgrep'].version")
  ( cd "$PEEK" && npm pack --silent "@vscode/ripgrep@$RG_PKG_VER" >/dev/null \
    && tar xzf vscode-ripgrep-*.tgz package/lib/postinstall.js )
  RG_REL=$(sed -n "s/^const VERSION = '\(.*\)';.*/\1/p" "$PEEK/package/lib/postinstall.js")
  case "$(node -p process.arch)" in
    x64) RG_TARGET=x86_64-unknown-linux-musl ;;
    arm64) RG_TARGET=aarch64-unknown-linux-musl ;;
    *) echo "unsupported architecture $(node -p process.arch) for the ripgrep cache" >&2; exit 1 ;;
  esac
  RG_CACHE="$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VER"
  mkdir -p "$RG_CACHE" "$PEEK/rg"
  cp "$(command -v rg)" "$PEEK/rg/rg"
  tar -C "$PEEK/rg" -czf "$RG_CACHE/ripgrep-$RG_REL-$RG_TARGET.tar.gz" rg
  rm -rf "$PEEK"

  phase "npm install code-server@$CS_VERSION (compiles native modules, about 90 s)"
  rm -rf "$E2E/server"
  mkdir -p "$E2E/server"
  echo '{"private":true}' > "$E2E/server/package.json"
  # --unsafe-perm: code-server's postinstall refuses to run as root without it.
  ( cd "$E2E/server" && npm install --unsafe-perm --foreground-scripts \
      "code-server@$CS_VERSION" ) > "$E2E/logs/npm-code-server.log" 2>&1 \
    || { tail -40 "$E2E/logs/npm-code-server.log" >&2; exit 1; }
  test -x "$E2E/server/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" \
    || { echo "code-server installed without its ripgrep binary" >&2; exit 1; }
  touch "$CS_STAMP"
fi

# ------------------------------------------------------------------ 3. playwright-core
PW_STAMP="$E2E/tools/.installed-$PW_VERSION"
if [ ! -f "$PW_STAMP" ] || [ ! -d "$E2E/tools/node_modules/playwright-core" ]; then
  phase "npm install playwright-core@$PW_VERSION (no browser download)"
  rm -rf "$E2E/tools"
  mkdir -p "$E2E/tools"
  echo '{"private":true}' > "$E2E/tools/package.json"
  ( cd "$E2E/tools" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install \
      "playwright-core@$PW_VERSION" ) > "$E2E/logs/npm-tools.log" 2>&1 \
    || { tail -30 "$E2E/logs/npm-tools.log" >&2; exit 1; }
  touch "$PW_STAMP"
fi

phase "ready: code-server $CS_VERSION, playwright-core $PW_VERSION, $("$CHROMIUM" --version 2>/dev/null | head -1)"
