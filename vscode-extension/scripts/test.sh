#!/usr/bin/env bash
# Every test of the VS Code extension, from a bare machine (Debian 12, Node 20, root or sudo):
# installs what it needs (idempotently), builds, packages the .vsix, and runs
#   1. typecheck (tsc, strict) and ESLint,
#   2. unit tests (node --test; card HTML, hunk → virtual documents, protocol normalization, …),
#   3. real VS Code: code-server 4.100.3 + headless Debian Chromium + playwright-core, with the
#      packaged .vsix installed, the real toolhost binary, a companion mocha test extension
#      inside the extension host (lsp provider, FS_DIRTY_BUFFER, conformance scenarios, the MCP
#      server definition provider) and a Playwright driver clicking through the palette and the
#      panel, then playing an agent: `toolhost mcp` in the workspace, attached to the extension's
#      server, whose calls must show up as cards labelled "claude-code", then running `bash`
#      (live output in the running terminal card, ANSI colours, the exit pill, Stop, spilled
#      output, a background job's notice), and last reverting the agent's edit from its card
#      (the file's bytes back, the revert's own card, a refused revert), review mode (an edit's
#      two hunks accepted and rejected with the keyboard in the review diff), and a question
#      (`ask_user_question`) answered with the keyboard in the panel's form, the pinned todo list
#      and plan mode's commands, the MCP bridge: the MCP server `echo`
#      (tests/mcp-servers/structured.py, configured in the user config) ready in the MCP Servers
#      view, and its tools' calls as MCP cards, and last the chat with toolhost's own agent
#      against a scripted model server (e2e/modelServer.mjs, configured in the user config): a
#      prompt typed into the panel's chat box, the streamed answer, the read card, the tokens and
#      cost, a continued chat, Stop and New chat, worktree sessions (the workspace made a git
#      repository: New Worktree Session from the palette, its cards live in the panel's session
#      picker while `toolhost call … --session` edits in it, Apply through the review, Discard),
#      and last Restart Server, which must stop the
#      server cleanly (no `[Error …] Server process exited with code 0.` in the output channel)
#      (screenshots in test-output/vscode/screenshots).
# Each suite prints `N passed, N failed`; the script exits non-zero when anything failed.
#
# usage: vscode-extension/scripts/test.sh [path-to-toolhost-binary]   (default: target/debug/toolhost)
# env:   TOOLHOST_CLIENT_TOOLS (default <repo>/.client-tools), TOOLHOST_TEST_OUTPUT (default
#        <repo>/test-output/vscode), VSCODE_E2E=0 to skip the code-server suite,
#        TOOLHOST_CODE_SERVER_VERSION (default 4.100.3 = VS Code 1.100.3, where the MCP server
#        definition API is only a proposal; 4.103.2 is the first npm release with VS Code >= 1.101,
#        where it is stable, and needs Node 22), TOOLHOST_E2E_MCP_BRIDGE=0 to configure no MCP
#        server (for a toolhost without the MCP bridge: `[mcp.servers]` is an unknown key there),
#        TOOLHOST_E2E_AGENT=0 to configure no model server (and skip the chat checks),
#        TOOLHOST_E2E_EXTERNAL_AGENT=0 to configure no hosted ACP agent and skip its checks (default:
#        Claude Code, claude-agent-acp of the client tools, against e2e/anthropicServer.mjs; the run
#        fails when it is not installed — `cargo xtask install-deps` installs it),
#        TOOLHOST_E2E_ONLY=chat to run only the chat checks of the driver after the startup suite
#        (quicker while working on the chat), TOOLHOST_E2E_ONLY=external-agent only the hosted
#        agent's, TOOLHOST_E2E_ONLY=checkpoints only the checkpoints', TOOLHOST_E2E_ONLY=worktrees only
#        the worktree sessions'.
set -euo pipefail

EXT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$EXT_DIR/.." && pwd)"
BIN="${1:-$ROOT/target/debug/toolhost}"
TOOLS="${TOOLHOST_CLIENT_TOOLS:-$ROOT/.client-tools}"
OUT="${TOOLHOST_TEST_OUTPUT:-$ROOT/test-output/vscode}"
CODE_SERVER_VERSION="${TOOLHOST_CODE_SERVER_VERSION:-4.100.3}"
PLAYWRIGHT_VERSION=1.65.1
START=$(date +%s)

say() { printf '\n== %s (%ss)\n' "$*" "$(($(date +%s) - START))"; }
die() { echo "vscode tests: $*" >&2; echo "vscode: 0 passed, 1 failed"; exit 1; }

[ -x "$BIN" ] || die "the toolhost binary $BIN does not exist (cargo build -p toolhost-server)"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
mkdir -p "$TOOLS" "$OUT"
# Language servers the lsp conformance scenarios need, where `cargo xtask` installs them.
for dir in "$TOOLS/npm/node_modules/.bin" "$TOOLS/bin"; do
  if [ -d "$dir" ]; then PATH="$dir:$PATH"; fi
done
export PATH
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

# ---------------------------------------------------------------- install (idempotent)
say "install: system packages"
apt_need=()
command -v chromium >/dev/null || apt_need+=(chromium)
command -v rg >/dev/null || apt_need+=(ripgrep)
# headers for code-server's native modules (only needed to install it)
for pkg in libkrb5-dev libxkbfile-dev libsecret-1-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || apt_need+=("$pkg")
done
if [ ${#apt_need[@]} -gt 0 ]; then
  echo "apt-get install ${apt_need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_need[@]}" >/dev/null
fi
CHROMIUM="$(command -v chromium)"

# npm ci when package-lock.json changed since the last install
npm_ci() {
  local dir="$1" stamp="$1/node_modules/.toolhost-lock-sha"
  local sha; sha="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sha" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$sha" > "$stamp"
  fi
}
npm_pkg_version() { node -p "require('$1/package.json').version" 2>/dev/null || true; }

say "install: npm packages"
npm_ci "$EXT_DIR"
npm_ci "$EXT_DIR/e2e/test-extension"
if [ "$(npm_pkg_version "$TOOLS/pw/node_modules/playwright-core")" != "$PLAYWRIGHT_VERSION" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$TOOLS/pw" "playwright-core@$PLAYWRIGHT_VERSION"
fi
CODE_SERVER="$TOOLS/code-server/node_modules/.bin/code-server"
if [ "${VSCODE_E2E:-1}" != 0 ] && [ "$(npm_pkg_version "$TOOLS/code-server/node_modules/code-server")" != "$CODE_SERVER_VERSION" ]; then
  say "install: code-server $CODE_SERVER_VERSION"
  # (1) @vscode/ripgrep's postinstall downloads rg from a code host: seed its cache with Debian's rg
  RG_CACHE="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$RG_CACHE"
  tar czf "$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  # (2) root: code-server's postinstall wants npm_config_unsafe_perm; (3) node-pty's postinstall
  #     runs `npx node-gyp`, which the machine's npmrc (yes=false) cancels unless npm_config_yes
  npm_config_yes=true npm_config_unsafe_perm=true JOBS=2 \
    npm install --no-audit --no-fund --loglevel=error --prefix "$TOOLS/code-server" "code-server@$CODE_SERVER_VERSION"
fi

FAILED=0
# ---------------------------------------------------------------- static checks and build
say "typecheck (tsc --strict) and ESLint"
(cd "$EXT_DIR" && npx tsc -p . --noEmit && npx tsc -p test --noEmit && npx tsc -p e2e/test-extension --noEmit) || die "typecheck failed"
(cd "$EXT_DIR" && npx eslint --max-warnings 0 .) || die "ESLint failed"
echo "typecheck and lint: ok"

VERSION="$(node -p "require('$EXT_DIR/package.json').version")"
VSCE_VERSION="$(npm_pkg_version "$EXT_DIR/node_modules/@vscode/vsce")"
say "build (esbuild) and package (npm run package: vsce $VSCE_VERSION)"
(cd "$EXT_DIR" && node scripts/build.mjs --tests && node scripts/build.mjs --e2e)
PACKAGED="$OUT/toolhost-$VERSION.vsix"
rm -f "$PACKAGED" "$OUT/toolhost.vsix"
# vsce runs `vscode:prepublish` (the production bundle) itself.
(cd "$EXT_DIR" && npm run --silent package -- --out "$PACKAGED") || die "vsce package failed"
[ -f "$PACKAGED" ] || die "vsce package wrote no $PACKAGED"

# ---------------------------------------------------------------- unit tests
say "unit tests (node --test)"
if ! (cd "$EXT_DIR" && TOOLHOST_BIN="$BIN" node --test --test-reporter=./scripts/summary-reporter.mjs out/test/); then
  FAILED=1
fi

# ---------------------------------------------------------------- the package
# The .vsix installed below (and by the e2e suites): the one just packaged, or $TOOLHOST_VSIX.
if [ -n "${TOOLHOST_VSIX:-}" ]; then
  [ -f "$TOOLHOST_VSIX" ] || die "TOOLHOST_VSIX=$TOOLHOST_VSIX does not exist"
  VSIX="$(cd "$(dirname "$TOOLHOST_VSIX")" && pwd)/$(basename "$TOOLHOST_VSIX")"
else
  VSIX="$PACKAGED"
fi
say "package: $VSIX"
PKG_PASSED=0
PKG_FAILED=0
pkg_check() { # name, then a command that succeeds when the check passes
  local name="$1"; shift
  if "$@"; then
    PKG_PASSED=$((PKG_PASSED + 1)); echo "  ✔ package: $name"
  else
    PKG_FAILED=$((PKG_FAILED + 1)); echo "  ✖ package: $name" >&2
  fi
}
echo "  $(sha256sum "$VSIX" | cut -d' ' -f1)  $(du -k "$VSIX" | cut -f1) KiB"
unzip -Z1 "$VSIX" > "$OUT/vsix-files.txt" 2>/dev/null || : > "$OUT/vsix-files.txt"
sed 's/^/    /' "$OUT/vsix-files.txt"
VSIX_VERSION="$(unzip -p "$VSIX" extension/package.json 2>/dev/null | node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>{try{console.log(JSON.parse(s).version??"")}catch{console.log("")}})' || true)"
no_dev_files() { ! grep -Eq '^extension/(src|test|e2e|scripts|out|node_modules)/|\.ts$|\.map$|\.vsix$' "$OUT/vsix-files.txt"; }
pkg_check "holds the bundle, the panel's media, package.json, README and LICENSE" \
  bash -c 'for f in "$@"; do grep -qx "$f" "$0" || { echo "    missing $f" >&2; exit 1; }; done' "$OUT/vsix-files.txt" \
  extension/package.json extension/dist/extension.js extension/media/panel.js \
  $(cd "$EXT_DIR" && printf 'extension/%s\n' media/styles/*.css) extension/readme.md extension/LICENSE.txt
pkg_check "holds no sources, tests, scripts or node_modules" no_dev_files
pkg_check "is version $VERSION (package.json of this checkout; the .vsix says ${VSIX_VERSION:-nothing})" test "$VSIX_VERSION" = "$VERSION"
if [ "${VSCODE_E2E:-1}" = 0 ]; then
  echo "package: $PKG_PASSED passed, $PKG_FAILED failed (not installed: VSCODE_E2E=0)"
  [ "$PKG_FAILED" = 0 ] || FAILED=1
fi

# ---------------------------------------------------------------- real VS Code
if [ "${VSCODE_E2E:-1}" != 0 ]; then
  say "e2e: code-server $CODE_SERVER_VERSION + Chromium + playwright-core $PLAYWRIGHT_VERSION"
  S="$(mktemp -d "${TMPDIR:-/tmp}/toolhost-vscode-e2e.XXXXXX")"
  CSPID=""
  MODELPID=""
  ANTHROPICPID=""
  cleanup() {
    if [ -n "$CSPID" ]; then kill -- "-$CSPID" 2>/dev/null || true; wait "$CSPID" 2>/dev/null || true; fi
    if [ -n "$MODELPID" ]; then kill "$MODELPID" 2>/dev/null || true; wait "$MODELPID" 2>/dev/null || true; fi
    if [ -n "$ANTHROPICPID" ]; then kill "$ANTHROPICPID" 2>/dev/null || true; wait "$ANTHROPICPID" 2>/dev/null || true; fi
    if [ -f "$S/cs.log" ]; then cp "$S/cs.log" "$OUT/code-server.log"; fi
    if [ -d "$S/user/logs" ]; then rm -rf "$OUT/vscode-logs"; cp -r "$S/user/logs" "$OUT/vscode-logs" 2>/dev/null || true; fi
    rm -rf "$S"
  }
  trap cleanup EXIT
  mkdir -p "$S/user/User" "$S/ext" "$S/sessions" "$S/xdg/config" "$S/xdg/data" "$S/xdg/cache" "$S/xdg/state"
  cp -r "$EXT_DIR/e2e/workspace" "$S/ws"
  WS="$(cd "$S/ws" && pwd -P)"
  PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$S/config.yaml"
  node -e '
    const [file, bin, sessions] = process.argv.slice(1);
    require("fs").writeFileSync(file, JSON.stringify({
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "workbench.colorTheme": "Default Dark Modern",
      "extensions.ignoreRecommendations": true,
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "telemetry.telemetryLevel": "off",
      "update.mode": "none",
      "security.workspace.trust.enabled": false,
      "files.autoSave": "off",
      "typescript.disableAutomaticTypeAcquisition": true,
      "chat.commandCenter.enabled": false,
      "toolhost.serverPath": bin,
      "toolhost.serverArgs": ["--session-dir", sessions],
      // code-server gives the extension host the login shell PATH; the server gets this one
      "toolhost.serverEnv": { PATH: process.env.PATH },
    }, null, 2));
  ' "$S/user/User/settings.json" "$BIN" "$S/sessions"
  export XDG_CONFIG_HOME="$S/xdg/config" XDG_DATA_HOME="$S/xdg/data" XDG_CACHE_HOME="$S/xdg/cache" XDG_STATE_HOME="$S/xdg/state"
  # The MCP bridge's server for the driver's last checks: in the user config, since a workspace's
  # toolhost.toml may name MCP servers only when the workspace is trusted. The Python MCP SDK is
  # in the venv `cargo xtask install-deps` makes (as for the bridge's Rust tests).
  TOOLHOST_E2E_MCP_BRIDGE="${TOOLHOST_E2E_MCP_BRIDGE:-1}"
  if [ "$TOOLHOST_E2E_MCP_BRIDGE" = 1 ] && ! [ -x "$TOOLS/py/bin/python" ]; then
    echo "no $TOOLS/py/bin/python (cargo xtask install-deps): the MCP bridge checks are skipped" >&2
    TOOLHOST_E2E_MCP_BRIDGE=0
  fi
  mkdir -p "$XDG_CONFIG_HOME/toolhost"
  : > "$XDG_CONFIG_HOME/toolhost/config.toml"
  if [ "$TOOLHOST_E2E_MCP_BRIDGE" = 1 ]; then
    printf '[mcp.servers.echo]\ncommand = "%s"\nargs = ["%s"]\n\n' "$TOOLS/py/bin/python" "$ROOT/tests/mcp-servers/structured.py" \
      >> "$XDG_CONFIG_HOME/toolhost/config.toml"
  fi
  export TOOLHOST_E2E_MCP_BRIDGE
  # toolhost's own agent for the chat checks: the scripted model server (e2e/modelServer.mjs) on
  # 127.0.0.1, in the user config too (a workspace's base_url counts only when it is trusted),
  # written before code-server starts the extension's toolhost serve, which reads it.
  TOOLHOST_E2E_AGENT="${TOOLHOST_E2E_AGENT:-1}"
  if [ "$TOOLHOST_E2E_AGENT" = 1 ]; then
    node "$EXT_DIR/e2e/modelServer.mjs" > "$S/model-port" 2> "$S/model.log" &
    MODELPID=$!
    for _ in $(seq 1 50); do [ -s "$S/model-port" ] && break; sleep 0.1; done
    MODEL_PORT="$(head -n1 "$S/model-port")"
    [ -n "$MODEL_PORT" ] || die "the scripted model server did not start: $(cat "$S/model.log")"
    export TOOLHOST_E2E_MODEL_URL="http://127.0.0.1:$MODEL_PORT"
    printf '[agent]\nbase_url = "%s/v1"\napi_key_env = ""\nmode = "auto"\n\n[agent.price]\ninput = 1.0\noutput = 2.0\n' "$TOOLHOST_E2E_MODEL_URL" \
      >> "$XDG_CONFIG_HOME/toolhost/config.toml"
  fi
  export TOOLHOST_E2E_AGENT
  # A hosted ACP agent for the chat's agent choice: the real Claude Code (its adapter from the client
  # tools) against the scripted Anthropic server (e2e/anthropicServer.mjs), which edits claude.txt
  # of the workspace (the driver writes it); in the user config, with a home of its own.
  CLAUDE_ACP="$TOOLS/npm/node_modules/.bin/claude-agent-acp"
  # A missing adapter fails the run (a silent skip would pass without testing the hosted agent);
  # TOOLHOST_E2E_EXTERNAL_AGENT=0 is the explicit opt-out.
  TOOLHOST_E2E_EXTERNAL_AGENT="${TOOLHOST_E2E_EXTERNAL_AGENT:-1}"
  if [ "$TOOLHOST_E2E_EXTERNAL_AGENT" = 1 ] && ! [ -x "$CLAUDE_ACP" ]; then
    die "no Claude Code ACP adapter at $CLAUDE_ACP: run \`cargo xtask install-deps\` to install it (or set TOOLHOST_E2E_EXTERNAL_AGENT=0 to skip the hosted agent checks)"
  fi
  if [ "$TOOLHOST_E2E_EXTERNAL_AGENT" = 1 ]; then
    node "$EXT_DIR/e2e/anthropicServer.mjs" "$WS/claude.txt" > "$S/anthropic-port" 2> "$S/anthropic.log" &
    ANTHROPICPID=$!
    for _ in $(seq 1 50); do [ -s "$S/anthropic-port" ] && break; sleep 0.1; done
    ANTHROPIC_PORT="$(head -n1 "$S/anthropic-port")"
    [ -n "$ANTHROPIC_PORT" ] || die "the scripted Anthropic server did not start: $(cat "$S/anthropic.log")"
    export TOOLHOST_E2E_ANTHROPIC_URL="http://127.0.0.1:$ANTHROPIC_PORT"
    mkdir -p "$S/claude-home"
    printf '[acp]\noffer_toolhost = false\n\n[acp.agents.claude]\ncommand = "%s"\nmode = "default"\n\n[acp.agents.claude.env]\nIS_SANDBOX = "1"\nANTHROPIC_BASE_URL = "%s"\nANTHROPIC_API_KEY = "test-key"\nHOME = "%s"\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"\nDISABLE_AUTOUPDATER = "1"\nDISABLE_TELEMETRY = "1"\nDISABLE_ERROR_REPORTING = "1"\nCLAUDE_CODE_ENABLE_PROMPT_SUGGESTION = "false"\n' \
      "$CLAUDE_ACP" "$TOOLHOST_E2E_ANTHROPIC_URL" "$S/claude-home" >> "$XDG_CONFIG_HOME/toolhost/config.toml"
  fi
  export TOOLHOST_E2E_EXTERNAL_AGENT
  CS_FLAGS=(--config "$S/config.yaml" --user-data-dir "$S/user" --extensions-dir "$S/ext" --disable-telemetry --disable-update-check)
  installed() {
    "$CODE_SERVER" "${CS_FLAGS[@]}" --install-extension "$VSIX" > "$S/install.log" 2>&1 || { sed 's/^/    /' "$S/install.log" >&2; return 1; }
  }
  listed() {
    "$CODE_SERVER" "${CS_FLAGS[@]}" --list-extensions --show-versions > "$S/list.log" 2>&1
    grep -qx "toolhost.toolhost@$VSIX_VERSION" "$S/list.log" || { sed 's/^/    /' "$S/install.log" "$S/list.log" >&2; return 1; }
  }
  same_bundle() { # the installed extension's bundle is the one in that .vsix
    local installed_js="$S/ext/toolhost.toolhost-$VSIX_VERSION/dist/extension.js"
    [ -f "$installed_js" ] || { echo "    no $installed_js" >&2; return 1; }
    [ "$(sha256sum < "$installed_js")" = "$(unzip -p "$VSIX" extension/dist/extension.js | sha256sum)" ]
  }
  pkg_check "code-server $CODE_SERVER_VERSION installs it (--install-extension $(basename "$VSIX"))" installed
  pkg_check "code-server --list-extensions --show-versions lists toolhost.toolhost@$VSIX_VERSION" listed
  pkg_check "the installed dist/extension.js is the one in $(basename "$VSIX")" same_bundle
  echo "package: $PKG_PASSED passed, $PKG_FAILED failed"
  [ "$PKG_FAILED" = 0 ] || die "the .vsix is not right; the e2e suites need it installed"
  # The companion test extension is an unpacked folder: extensions.json must go, or it is ignored.
  TESTEXT="$S/ext/toolhost.toolhost-tests-0.0.1"
  mkdir -p "$TESTEXT"
  cp -r "$EXT_DIR/e2e/test-extension/package.json" "$EXT_DIR/e2e/test-extension/dist" "$EXT_DIR/e2e/test-extension/node_modules" "$TESTEXT/"
  rm -f "$S/ext/extensions.json" "$S/ext/.obsolete"

  rm -rf "$OUT/screenshots"
  export TOOLHOST_TEST_RESULT="$S/results.json" TOOLHOST_TEST_RESULT_UI="$S/results-ui.json"
  export TOOLHOST_TEST_WS="$WS" TOOLHOST_TEST_EXT_DIR="$S/ext" TOOLHOST_TEST_BIN="$BIN" TOOLHOST_TEST_USER_DATA="$S/user"
  export TOOLHOST_TEST_CONFORMANCE="$ROOT/editor-clients/conformance"
  setsid "$CODE_SERVER" "${CS_FLAGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
    --disable-workspace-trust "$WS" > "$S/cs.log" 2>&1 &
  CSPID=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null || { cat "$S/cs.log"; die "code-server did not start"; }
  if ! PLAYWRIGHT_CORE="$TOOLS/pw/node_modules/playwright-core" CHROMIUM="$CHROMIUM" SHOTS="$OUT/screenshots" \
      node "$EXT_DIR/e2e/driver.mjs" "http://127.0.0.1:$PORT/?folder=$WS"; then
    FAILED=1
  fi
  cp -f "$S/results.json" "$OUT/results.json" 2>/dev/null || true
  cp -f "$S/results-ui.json" "$OUT/results-ui.json" 2>/dev/null || true
fi

say "done; output in $OUT"
exit "$FAILED"
