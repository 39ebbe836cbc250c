// Drives a real VS Code (code-server) in headless Chromium like a person would: the command
// palette, the toolhost panel's webview DOM, clicks and keys; waits for the companion mocha suites
// (results JSON written by the test extension) and prints every check and `N passed, N failed`.
// Then it plays an agent: `toolhost mcp` started here in the workspace attaches to the
// extension's `toolhost serve`, and its calls must show up in the panel, labelled with the agent.
// Then come terminal cards: `bash` from Call Tool…, its live output while it runs, the styled
// output and exit pill when it ends, Stop, a spilled output file, and a background job's notice.
// Then Revert on the agent's edit card: Revert since here asks first, Revert puts the file's
// bytes back and adds its own card, Revert Call… from the palette, and a refused revert.
// Last, review mode: Set Review Mode… ask, an edit with two hunks from Call Tool…, and with the
// keyboard only the first hunk accepted and the second rejected in the review diff; the file then
// holds exactly the accepted hunk and the card names the rejected one.
// Then questions: `ask_user_question` from Call Tool… shows its form in the panel and a
// notification; "toolhost: Answer Question" puts the focus in the form and the keyboard alone
// answers it (a number key, Enter); the card then shows the answer. A `todo_write` call shows the
// session's todo list pinned above the cards, and Enter / Exit Plan Mode show in the status bar.
// Last, the MCP bridge (with TOOLHOST_E2E_MCP_BRIDGE=1: scripts/test.sh configures the MCP server
// `echo`, tests/mcp-servers/structured.py, in the user config): "toolhost: Show MCP Servers" shows
// it ready with its two tools, and its tools' calls become MCP cards (server badge, text,
// Structured JSON). Last, the chat with toolhost's own agent (with TOOLHOST_E2E_AGENT=1:
// scripts/test.sh starts the scripted model server e2e/modelServer.mjs and configures it in the
// user config): "toolhost: Ask the Agent" focuses the panel's chat box, a task typed there (a
// mode picked, Shift+Enter for a new line) is sent with Enter; the reasoning folded, the tool line
// leading to the read card (caller "toolhost agent"), the streamed answer, and the footer with the
// tokens and the cost; a second prompt continues the chat; Stop (Esc) ends a slow answer; New chat
// clears the transcript. Then a hosted ACP agent (with TOOLHOST_E2E_EXTERNAL_AGENT=1, in
// externalAgent.mjs): the real Claude Code picked in the chat box, its edit reviewed hunk by hunk,
// its step's diff card in the panel. Then worktree sessions (worktrees.mjs): one made from the
// palette, its cards in the panel's session picker following its log, applied through the review
// and discarded. The very last check restarts the server from the palette: it must stop
// cleanly (`[toolhost] server stopped (exit code 0)` in the output channel), and no restart of the
// run may have logged `[Error - …] Server process exited with code 0.`.
//
//   node e2e/driver.mjs <workbench url>
// env: PLAYWRIGHT_CORE (path of the playwright-core package), CHROMIUM (executable),
//      TOOLHOST_TEST_RESULT, TOOLHOST_TEST_RESULT_UI (mocha result files), SHOTS (screenshot dir),
//      TOOLHOST_TEST_BIN (the toolhost binary), TOOLHOST_TEST_WS (the workspace folder),
//      TOOLHOST_TEST_USER_DATA (code-server's user data dir: the output channel logs),
//      TOOLHOST_E2E_MCP_BRIDGE (1: the MCP server `echo` is configured; check the bridge's view and cards),
//      TOOLHOST_E2E_AGENT (1: the scripted model server is configured; check the chat),
//      TOOLHOST_E2E_MODEL_URL (that server, for what it was sent), TOOLHOST_E2E_EXTERNAL_AGENT (1:
//      Claude Code is configured as a hosted agent; check its chat), TOOLHOST_E2E_ANTHROPIC_URL (its
//      scripted Anthropic server), TOOLHOST_E2E_ONLY (chat: only the chat checks after the startup
//      suite; external-agent: only the hosted agent's; checkpoints: only the checkpoints', in
//      checkpoints.mjs; worktrees: only the worktree sessions', in worktrees.mjs)
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { checkpointRestore } from './checkpoints.mjs';
import { externalAgentChat } from './externalAgent.mjs';
import { worktreeSessions } from './worktrees.mjs';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE ?? 'playwright-core');

const url = process.argv[2];
const shots = process.env.SHOTS ?? 'screenshots';
const mainResult = process.env.TOOLHOST_TEST_RESULT;
const uiResult = process.env.TOOLHOST_TEST_RESULT_UI;
const deadline = Date.now() + Number(process.env.E2E_TIMEOUT_MS ?? 10 * 60_000);

const tally = { passed: 0, failed: 0, failures: [] };
const mochaTally = { passed: 0, failed: 0, pending: 0 };

function log(line) {
  process.stdout.write(`${line}\n`);
}

/** One UI check: counted, reported, and never stops the run. */
async function check(name, fn) {
  try {
    await fn();
    tally.passed += 1;
    log(`  ✔ ui: ${name}`);
    return true;
  } catch (err) {
    tally.failed += 1;
    tally.failures.push({ name, err: err?.stack ?? String(err) });
    log(`  ✖ ui: ${name}\n      ${String(err?.message ?? err).split('\n').join('\n      ')}`);
    return false;
  }
}

function assert(cond, message) {
  if (!cond) {
    throw new Error(message);
  }
}

function assertEqual(actual, expected, message = 'values differ') {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) {
    throw new Error(`${message}\n expected: ${e}\n   actual: ${a}`);
  }
}

async function waitForFile(file, what, timeoutMs) {
  const until = Math.min(Date.now() + timeoutMs, deadline);
  while (Date.now() < until) {
    if (fs.existsSync(file)) {
      return JSON.parse(fs.readFileSync(file, 'utf8'));
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what} (${file})`);
}

function reportMocha(label, results) {
  for (const t of results.passed) {
    log(`  ✔ ${label}: ${t}`);
  }
  for (const t of results.pending) {
    log(`  - ${label}: ${t} (skipped)`);
  }
  for (const f of results.failed) {
    log(`  ✖ ${label}: ${f.title}\n      ${f.err.split('\n').slice(0, 12).join('\n      ')}`);
  }
  mochaTally.passed += results.passed.length;
  mochaTally.failed += results.failed.length;
  mochaTally.pending += results.pending.length;
  log(`${label}: ${results.passed.length} passed, ${results.failed.length} failed${results.pending.length ? `, ${results.pending.length} skipped` : ''}`);
}

async function shot(page, name) {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
  log(`    screenshot ${path.join(shots, `${name}.png`)}`);
}

/** Runs a command from the palette (F1), as a person would: type its title, Enter. */
async function palette(page, title) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(`>${title}`);
  await page.waitForFunction(
    (t) => {
      const row = document.querySelector('.quick-input-widget .monaco-list-row.focused');
      return row && row.textContent && row.textContent.toLowerCase().includes(t.toLowerCase());
    },
    title.replace(/^.*?: /, ''),
    { timeout: 10_000 },
  );
  await page.keyboard.press('Enter');
}

/** Picks `label` in an open quick pick by typing it. The focused row's own label must hold it:
 * a row's whole text is not enough, since Go to File shows "recently opened" rows first whose
 * description (a reused row's, even) may name the file while the row opens another. */
async function pick(page, label) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(label);
  await page.waitForFunction(
    (l) => {
      const row = document.querySelector('.quick-input-widget .monaco-list-row.focused');
      const own = row?.querySelector('.label-name') ?? row;
      return own && own.textContent && own.textContent.includes(l);
    },
    label,
    { timeout: 10_000 },
  );
  await page.keyboard.press('Enter');
}

/** The frame of the toolhost panel's webview (the one with #cards). */
async function panelFrame(page, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    for (const frame of page.frames()) {
      try {
        if (await frame.$('#cards')) {
          return frame;
        }
      } catch {
        // detached frame
      }
    }
    await page.waitForTimeout(300);
  }
  throw new Error('the toolhost panel webview did not appear');
}

/** A card element's lines as a person reads them: `tool title · status` (` · caller` for an
 * agent's call through toolhost mcp), then hunk headers and `op`+`text` lines (diff cards) or
 * search lines. */
async function cardLines(frame, callId) {
  return frame.evaluate((id) => {
    const card = Array.from(document.querySelectorAll('article[data-call-id]')).find((el) => el.dataset.callId === id);
    if (!card) {
      return null;
    }
    const text = (sel) => card.querySelector(sel)?.textContent ?? '';
    const caller = card.querySelector('.card-caller') ? ` · ${text('.card-caller')}` : '';
    const lines = [`${text('.card-tool')} ${text('.card-title')} · ${text('.card-status')}${caller}`];
    for (const el of card.querySelectorAll('.hunk-header, .line, .search-line')) {
      lines.push(el.textContent);
    }
    return lines;
  }, callId);
}

/** The extension's `toolhost serve` processes for `ws` (that binary, that working directory),
 * with the arguments and the environment each got, read from /proc. */
function serveProcesses(bin, ws) {
  const exe = fs.realpathSync(bin);
  const dir = fs.realpathSync(ws);
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[1] !== 'serve' || fs.realpathSync(`/proc/${pid}/exe`) !== exe || fs.realpathSync(`/proc/${pid}/cwd`) !== dir) {
        continue;
      }
      const env = {};
      for (const kv of fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
        const i = kv.indexOf('=');
        if (i > 0) {
          env[kv.slice(0, i)] = kv.slice(i + 1);
        }
      }
      found.push({ pid: Number(pid), argv, env });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** An MCP client over a child's stdio: newline-delimited JSON-RPC, as an agent speaks it. */
class McpClient {
  constructor(bin, args, options) {
    this.child = spawn(bin, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    this.waiting = new Map();
    this.stderr = '';
    this.notifications = [];
    let buffer = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk) => {
      buffer += chunk;
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i).trim();
        buffer = buffer.slice(i + 1);
        if (line !== '') {
          this.onLine(line);
        }
      }
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => resolve({ code, signal }));
      this.child.on('error', (err) => resolve({ code: null, signal: null, error: String(err) }));
    });
    void this.exited.then((how) => {
      for (const [, w] of this.waiting) {
        w.reject(new Error(`toolhost mcp exited (${JSON.stringify(how)}) before answering; stderr:\n${this.stderr}`));
      }
      this.waiting.clear();
    });
    this.nextId = 1;
  }

  onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.notifications.push({ unparsable: line });
      return;
    }
    const waiter = msg.id !== undefined ? this.waiting.get(msg.id) : undefined;
    if (waiter && (msg.result !== undefined || msg.error !== undefined)) {
      this.waiting.delete(msg.id);
      waiter.resolve({ msg, at: Date.now() });
    } else {
      this.notifications.push(msg);
    }
  }

  send(message) {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  /** A request; resolves `{msg, at}` (the response and when it arrived). */
  request(method, params, timeoutMs = 30_000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`no answer to ${method} within ${timeoutMs} ms; stderr:\n${this.stderr}`));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** A tools/call whose result must not be an error; resolves `{result, at}`. */
  async callTool(name, args) {
    const { msg, at } = await this.request('tools/call', { name, arguments: args });
    assert(msg.error === undefined, `tools/call ${name}: JSON-RPC error ${JSON.stringify(msg.error)}`);
    assert(msg.result?.isError === false, `tools/call ${name} failed: ${JSON.stringify(msg.result)}`);
    return { result: msg.result, at };
  }

  /** End of input: `toolhost mcp` exits; killed if it does not within 5 s. */
  async close() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    const how = await this.exited;
    clearTimeout(timer);
    return how;
  }
}

/** "toolhost: Restart Server" stops the old server on purpose (shutdown, exit, exit code 0): the
 * output channel says so in a plain line, and no restart of this run — this one, the startup
 * suite's, one per conformance scenario — left vscode-languageclient's
 * `[Error - …] Server process exited with code 0.` there. */
async function restartCleanly(page) {
  await check('"toolhost: Restart Server": the old server stops cleanly ("[toolhost] server stopped (exit code 0)" in the toolhost output channel) and no restart of this run logged "[Error - …] Server process exited with code 0."', async () => {
    const count = (prefix) => outputChannelLog().filter((l) => l.startsWith(prefix)).length;
    const stops = count('[toolhost] server stopped (exit code 0)');
    const starts = count('[toolhost] running, session ');
    await palette(page, 'toolhost: Restart Server');
    let lines = [];
    for (let i = 0; i < 120; i++) {
      lines = outputChannelLog();
      if (lines.filter((l) => l.startsWith('[toolhost] server stopped (exit code 0)')).length > stops && lines.filter((l) => l.startsWith('[toolhost] running, session ')).length > starts) {
        break;
      }
      await page.waitForTimeout(250);
    }
    const clean = lines.filter((l) => l.startsWith('[toolhost] server stopped (exit code 0)'));
    assert(clean.length > stops, `no new stop line after the restart: ${JSON.stringify(lines.slice(-20))}`);
    assert(lines.filter((l) => l.startsWith('[toolhost] running, session ')).length > starts, 'the new server did not report its session');
    const errors = lines.filter((l) => /^\[Error\s*-[^\]]*\] Server process exited with code 0\b/.test(l));
    assertEqual(errors, [], `Error lines for an exit 0 (the run stopped the server cleanly ${clean.length} times)`);
    log(`    (${clean.length} clean stops in this run's output channel, 0 "[Error …] Server process exited with code 0." lines)`);
  });
  await palette(page, 'toolhost: Show Server Log').catch(() => undefined);
  await shot(page, '22-restart-log');
}

/** The lines of the extension's "toolhost" output channel (its log file in the user data dir). */
function outputChannelLog() {
  const logs = path.join(process.env.TOOLHOST_TEST_USER_DATA ?? '', 'logs');
  const files = [];
  const walk = (dir, depth) => {
    for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && depth < 4) {
        walk(full, depth + 1);
      } else if (entry.isFile() && /^\d+-toolhost\.log$/.test(entry.name) && dir.includes('output_logging_')) {
        files.push(full);
      }
    }
  };
  walk(logs, 0);
  assert(files.length > 0, `no toolhost output channel log under ${logs}`);
  return files.map((f) => fs.readFileSync(f, 'utf8')).join('\n').split('\n');
}

/** Plays an agent: `toolhost mcp` in the workspace, with the environment the extension's server
 * got, attaches to that server; its calls show up in the panel as cards labelled "claude-code".
 * Resolves the agent's edit (call id, file, the file's bytes before it) for the Revert checks. */
async function agentThroughMcp(page, frame, data) {
  const bin = process.env.TOOLHOST_TEST_BIN;
  const ws = process.env.TOOLHOST_TEST_WS;
  const file = path.join(ws ?? '', 'mcp.txt');
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const beforeBytes = fs.existsSync(file) ? fs.readFileSync(file) : undefined;
  let server;
  await check("the extension's toolhost serve for the workspace listens on its attach socket", async () => {
    assert(bin && ws, 'TOOLHOST_TEST_BIN and TOOLHOST_TEST_WS are set');
    const found = serveProcesses(bin, ws);
    assert(found.length === 1, `one toolhost serve in ${ws}, found ${JSON.stringify(found.map((p) => p.pid))}`);
    server = found[0];
    const state = server.env.XDG_STATE_HOME || path.join(server.env.HOME ?? '', '.local', 'state');
    const run = path.join(state, 'toolhost', 'run');
    const sockets = fs.existsSync(run) ? fs.readdirSync(run).filter((f) => f.endsWith('.sock')) : [];
    assert(sockets.length > 0, `no socket in ${run}`);
    log(`    (serve pid ${server.pid}, XDG_STATE_HOME=${server.env.XDG_STATE_HOME ?? '(unset)'}, socket ${path.join(run, sockets[0])})`);
  });
  if (!server) {
    return;
  }

  // An editor on the file the agent edits: it must show the edit (it is not dirty).
  await check('mcp.txt open in an editor before the agent edits it', async () => {
    await palette(page, 'Go to File');
    await pick(page, 'mcp.txt');
    await page.locator('.tabs-container .tab.active', { hasText: 'mcp.txt' }).waitFor({ timeout: 10_000 });
    await page.locator('.monaco-editor .view-lines', { hasText: 'second line' }).first().waitFor({ timeout: 10_000 });
  });

  // Every card article the panel places from now on, with its status and caller, in order.
  await frame.evaluate(() => {
    const seen = [];
    window.__toolhostSeen = seen;
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node instanceof HTMLElement && node.matches('article[data-call-id]')) {
            seen.push({ callId: node.dataset.callId, status: node.dataset.status, caller: node.dataset.caller ?? null, at: Date.now() });
          }
        }
      }
    }).observe(document.getElementById('cards'), { childList: true });
  });

  // The same XDG dirs (and HOME) as the server, so that `toolhost mcp` finds its socket.
  const env = { ...process.env };
  for (const key of ['XDG_STATE_HOME', 'XDG_CONFIG_HOME', 'HOME']) {
    if (server.env[key] === undefined) {
      delete env[key];
    } else {
      env[key] = server.env[key];
    }
  }
  const mcp = new McpClient(bin, ['mcp'], { cwd: ws, env });
  const calls = {};
  try {
    await check('an agent ("claude-code") runs read then edit through `toolhost mcp`: results not isError, the file changed on disk', async () => {
      const init = await mcp.request('initialize', {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'claude-code', version: '1.0.0' },
      });
      assert(init.msg.result?.serverInfo?.name === 'toolhost', `initialize: ${JSON.stringify(init.msg)}`);
      mcp.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      // as agents do: the tool list first (the editor's registry, through the socket)
      const listed = await mcp.request('tools/list', {});
      const names = (listed.msg.result?.tools ?? []).map((t) => t.name);
      assert(names.includes('read') && names.includes('edit'), `tools/list: ${names.join(', ')}`);
      const read = await mcp.callTool('read', { file_path: 'mcp.txt' });
      assert(/second line/.test(JSON.stringify(read.result.content)), JSON.stringify(read.result));
      calls.read = read.result._meta?.['toolhost/callId'];
      const sent = Date.now();
      const edit = await mcp.callTool('edit', { file_path: 'mcp.txt', old_string: 'second line', new_string: 'second line, edited by claude-code' });
      calls.edit = edit.result._meta?.['toolhost/callId'];
      calls.editSent = sent;
      calls.editAnswered = edit.at;
      assert(/has been updated successfully/.test(JSON.stringify(edit.result.content)), JSON.stringify(edit.result));
      assert(typeof calls.read === 'string' && typeof calls.edit === 'string', `call ids in _meta: ${JSON.stringify(calls)}`);
      const after = fs.readFileSync(file, 'utf8');
      assertEqual(after, before.replace('second line', 'second line, edited by claude-code'), 'mcp.txt on disk');
    });

    await check('the panel shows the agent\'s cards labelled "claude-code", drawn like the editor\'s own', async () => {
      assert(calls.edit, 'the edit call');
      const card = frame.locator(`article[data-call-id="${calls.edit}"][data-status="completed"]`);
      await card.waitFor({ timeout: 15_000 });
      assertEqual(await cardLines(frame, calls.edit), [
        'edit Edit mcp.txt · completed · claude-code',
        '@@ -1,3 +1,3 @@',
        ' first line',
        '-second line',
        '+second line, edited by claude-code',
        ' third line',
      ]);
      const badge = card.locator('header .card-caller');
      assertEqual(await badge.textContent(), 'claude-code', 'the caller badge');
      assert(await badge.isVisible(), 'the caller badge is visible');
      assertEqual(await card.getAttribute('data-caller'), 'claude-code');
      assertEqual((await card.locator('.stats').textContent()).trim(), '+1 −1');
      assertEqual(await card.locator('button[data-action]').evaluateAll((els) => els.map((e) => e.dataset.action)), ['openDiff', 'goto', 'copy', 'revert', 'revertSince']);
      const read = frame.locator(`article[data-call-id="${calls.read}"][data-status="completed"][data-caller="claude-code"]`);
      await read.waitFor({ timeout: 5000 });
      assertEqual(await read.locator('.read-line .ln').allTextContents(), ['1', '2', '3']);
      // newest first, after the editor's own cards
      const order = await frame.locator('article[data-call-id]').evaluateAll((els) => els.map((e) => e.dataset.callId));
      assertEqual(order.slice(0, 2), [calls.edit, calls.read]);
    });

    await check("the agent's edit card arrived while the call ran: pending (labelled, preview hunk), then completed", async () => {
      const seen = await frame.evaluate((id) => window.__toolhostSeen.filter((e) => e.callId === id), calls.edit);
      const statuses = seen.map((e) => e.status);
      assert(statuses[0] === 'pending' && statuses[statuses.length - 1] === 'completed', `cards placed for the edit: ${JSON.stringify(seen)}`);
      assert(seen.every((e) => e.caller === 'claude-code'), `every card of the call is labelled: ${JSON.stringify(seen)}`);
      assertEqual(statuses.filter((x) => x !== 'pending' && x !== 'completed'), []);
      const pendingAt = seen[0].at;
      log(`    (after the edit was sent: pending card placed +${pendingAt - calls.editSent} ms, MCP answer +${calls.editAnswered - calls.editSent} ms, completed card placed +${seen[seen.length - 1].at - calls.editSent} ms)`);
      const readSeen = await frame.evaluate((id) => window.__toolhostSeen.filter((e) => e.callId === id).map((e) => e.status), calls.read);
      assertEqual(readSeen, ['pending', 'completed'], 'the read call');
    });

    await check('the open editor shows the agent\'s edit', async () => {
      await page.locator('.monaco-editor .view-lines', { hasText: 'edited by claude-code' }).first().waitFor({ timeout: 10_000 });
      assert((await page.locator('.tabs-container .tab.active.dirty').count()) === 0, 'the editor is not dirty');
    });
    await frame.locator(`article[data-call-id="${calls.edit}"]`).scrollIntoViewIfNeeded().catch(() => undefined);
    await shot(page, '08-panel-mcp-card-claude-code');

    await check('"Open diff" on the agent\'s card opens the diff editor like for the editor\'s own cards', async () => {
      await frame.locator(`article[data-call-id="${calls.edit}"] button[data-action="openDiff"]`).click();
      await page.locator('.tabs-container .tab.active', { hasText: 'mcp.txt (edit: Edit mcp.txt · completed · claude-code)' }).waitFor({ timeout: 10_000 });
      await page.waitForFunction(() => {
        const text = (sel) => document.querySelector(`.monaco-diff-editor .editor.${sel} .view-lines`)?.textContent ?? '';
        // (the editor draws spaces as no-break spaces)
        const original = text('original').replace(/\u00a0/g, ' ');
        const modified = text('modified').replace(/\u00a0/g, ' ');
        return /second line/.test(original) && !/edited/.test(original) && /second line, edited by claude-code/.test(modified);
      }, null, { timeout: 10_000 });
    });

  } finally {
    const how = await mcp.close();
    log(`    (toolhost mcp exited: ${JSON.stringify(how)})`);
  }

  const provider = data.mcpProvider;
  await check(
    provider?.registered
      ? `the MCP server definition provider is registered (VS Code ${provider.vscodeVersion}) and said so in the log`
      : `VS Code ${provider?.vscodeVersion ?? '?'} has no usable MCP provider API: the extension logged one line and skipped it`,
    async () => {
      assert(provider, 'the mocha suite reported the provider');
      const lines = outputChannelLog().filter((l) => l.startsWith('[toolhost] MCP server definition provider'));
      assertEqual(lines, [`[toolhost] ${provider.message}`], 'the provider line of the toolhost output channel');
      assert(provider.registered ? / registered: /.test(lines[0]) : / not registered: /.test(lines[0]), lines[0]);
    },
  );
  return { file, before: beforeBytes, edit: calls.edit };
}

/** Runs `bash` from the palette (Call Tool…), as a person would: the tool, then its arguments. */
async function callBash(page, args) {
  await palette(page, 'toolhost: Call Tool…');
  await pick(page, 'bash');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  // the arguments box (with the schema's skeleton), not the tool picker any more
  await page.waitForFunction(() => /"command"/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
  await input.fill(JSON.stringify(args));
  await page.keyboard.press('Enter');
}

/** What a terminal card element shows, read from the live DOM. */
async function terminalView(frame, callId) {
  return frame.evaluate((id) => {
    const card = Array.from(document.querySelectorAll('article[data-call-id]')).find((el) => el.dataset.callId === id);
    if (!card) {
      return null;
    }
    const pill = card.querySelector('.exit-pill');
    const visible = (el) => el.getClientRects().length > 0;
    return {
      status: card.dataset.status,
      copies: Array.from(document.querySelectorAll('article[data-call-id]')).filter((el) => el.dataset.callId === id).length,
      command: card.querySelector('.term-command code')?.textContent ?? null,
      description: card.querySelector('.term-description')?.textContent ?? null,
      lines: Array.from(card.querySelectorAll('.term-line')).map((l) => l.textContent),
      shownLines: Array.from(card.querySelectorAll('.term-line')).filter(visible).length,
      toggle: card.querySelector('.term-toggle')?.textContent ?? null,
      pill: pill ? { text: pill.textContent, tone: pill.dataset.tone, colour: getComputedStyle(pill).color } : null,
      red: Array.from(card.querySelectorAll('.term-line span.ansi-fg-1')).map((el) => ({ text: el.textContent, colour: getComputedStyle(el).color })),
      plainColour: card.querySelector('.term-line') ? getComputedStyle(card.querySelector('.term-line')).color : null,
      spills: Array.from(card.querySelectorAll('button[data-action="openSpill"]')).map((b) => b.textContent),
      stop: card.querySelectorAll('button[data-action="stop"]').length,
      native: card.querySelector('.native-text')?.textContent ?? null,
    };
  }, callId);
}

/** `rgb(r, g, b)` → [r, g, b]. */
function rgbOf(colour) {
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(colour ?? '');
  assert(m, `not a colour: ${colour}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Terminal cards (`bash`), called from the extension's own Call Tool… like any other tool. */
async function terminalCards(page, frame) {
  await palette(page, 'View: Close All Editors');
  const loop = `for i in 1 2 3 4 5 6; do echo "line $i"; printf '\\033[31mred\\033[0m\\n'; sleep 0.4; done`;
  const calls = {};
  await check('Call Tool… bash: the pending terminal card shows the live output (toolhost/callOutput) while the command runs, with Stop', async () => {
    await callBash(page, { command: loop, description: 'print six lines, slowly' });
    const handle = await frame.waitForFunction(
      (command) => {
        const card = Array.from(document.querySelectorAll('article[data-kind="terminal"][data-status="pending"]')).find(
          (el) => el.querySelector('.term-command code')?.textContent === command,
        );
        const text = card?.querySelector('.term-output')?.textContent ?? '';
        return card && text.includes('line 1') ? { callId: card.dataset.callId, text, stop: card.querySelectorAll('button[data-action="stop"]').length } : null;
      },
      loop,
      { timeout: 20_000, polling: 50 },
    );
    const seen = await handle.jsonValue();
    calls.loop = seen.callId;
    assert(seen.stop === 1, 'a Stop button on the running card');
    assert(!seen.text.includes('line 6'), `the command is still running, yet its output is all there: ${seen.text}`);
    log(`    (live output in the pending card: ${JSON.stringify(seen.text)})`);
  });
  await shot(page, '09-terminal-card-live');

  await check('when bash ends, its final card replaces the live one: the six lines, "red" in red, the green exit 0 pill', async () => {
    assert(calls.loop, 'the bash call');
    await frame.locator(`article[data-call-id="${calls.loop}"][data-status="completed"]`).waitFor({ timeout: 15_000 });
    const view = await terminalView(frame, calls.loop);
    assertEqual(view.copies, 1, 'one card for the call');
    assertEqual(view.command, loop);
    assertEqual(view.description, 'print six lines, slowly');
    assertEqual(view.lines, [1, 2, 3, 4, 5, 6].flatMap((i) => [`line ${i}`, 'red']));
    assert(view.lines.every((l) => !l.includes('\x1b') && !/\[31m|\[0m/.test(l)), `escape sequences shown: ${JSON.stringify(view.lines)}`);
    assertEqual(view.red.map((r) => r.text), ['red', 'red', 'red', 'red', 'red', 'red'], 'the red spans');
    const [r, g, b] = rgbOf(view.red[0].colour);
    assert(r > g + 60 && r > b + 60, `"red" is drawn red: ${view.red[0].colour}`);
    assert(view.red[0].colour !== view.plainColour, `and not in the plain colour ${view.plainColour}`);
    assertEqual({ text: view.pill?.text, tone: view.pill?.tone }, { text: 'exit 0', tone: 'ok' }, 'the exit pill');
    const [pr, pg] = rgbOf(view.pill.colour);
    assert(pg > pr, `the exit 0 pill is green: ${view.pill.colour}`);
    assertEqual(view.stop, 0, 'no Stop on a finished card');
  });
  await frame.locator(`article[data-call-id="${calls.loop}"]`).scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, '10-terminal-card-done');

  await check('Stop on a running `sleep 30`: toolhost/cancelCall, and within a few seconds a failed card replaces the pending one', async () => {
    await callBash(page, { command: 'sleep 30', description: 'wait half a minute' });
    const card = frame.locator('article[data-kind="terminal"][data-status="pending"]', { has: frame.locator('.term-command code', { hasText: /^sleep 30$/ }) });
    const stop = card.locator('button[data-action="stop"]');
    await stop.waitFor({ timeout: 20_000 });
    calls.sleep = await card.getAttribute('data-call-id');
    const clicked = Date.now();
    await stop.click();
    await frame.locator(`article[data-call-id="${calls.sleep}"][data-status="failed"]`).waitFor({ timeout: 10_000 });
    const took = Date.now() - clicked;
    assert(took < 5000, `the failed card came ${took} ms after Stop`);
    const view = await terminalView(frame, calls.sleep);
    assertEqual(view.copies, 1, 'one card for the call');
    assert(/aborted/i.test(view.native ?? ''), `the failed card says why: ${view.native}`);
    log(`    (failed card ${took} ms after Stop)`);
  });

  await check('long output: the last 20 lines, "Show all N lines" shows the rest; the spilled output opens in an editor tab', async () => {
    await callBash(page, { command: 'seq 1 20000', description: 'twenty thousand lines' });
    const card = frame.locator('article[data-kind="terminal"][data-status="completed"]', { has: frame.locator('.term-command code', { hasText: /^seq 1 20000$/ }) });
    await card.waitFor({ timeout: 30_000 });
    const callId = await card.getAttribute('data-call-id');
    let view = await terminalView(frame, callId);
    const total = view.lines.length;
    assert(total > 20, `${total} lines`);
    assertEqual(view.shownLines, 20, 'collapsed to the last 20 lines');
    assertEqual(view.toggle, `Show all ${total} lines`);
    await card.locator('.term-toggle').click();
    view = await terminalView(frame, callId);
    assertEqual(view.shownLines, total, 'every line after "Show all"');
    assertEqual(view.toggle, 'Show only the last 20 lines');
    assertEqual(view.pill?.text, 'exit 0');
    assert(view.spills.length === 1, `one spill link: ${JSON.stringify(view.spills)}`);
    const name = path.basename(view.spills[0]);
    await card.locator('button[data-action="openSpill"]').click();
    // the blob's name is a long hash: the tab may shorten it
    await page.locator('.tabs-container .tab.active', { hasText: name.slice(0, 12) }).waitFor({ timeout: 10_000 });
    await page.locator('.monaco-editor .view-lines').first().waitFor({ timeout: 10_000 });
  });

  await check('a background job ends: toolhost/notice shows an information message and a line in the toolhost output channel', async () => {
    await callBash(page, { command: 'sleep 1; echo job done', description: 'a background job', run_in_background: true });
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'background job' });
    await toast.first().waitFor({ state: 'visible', timeout: 20_000 });
    const text = (await toast.first().textContent()) ?? '';
    assert(/toolhost: background job bash-\d+ \(bash: sleep 1; echo job done\) finished/.test(text), `the message: ${text}`);
    let lines = [];
    for (let i = 0; i < 20; i++) {
      lines = outputChannelLog().filter((l) => l.startsWith('[toolhost] notice (job): background job'));
      if (lines.length > 0) {
        break;
      }
      await page.waitForTimeout(250);
    }
    assert(lines.some((l) => l.includes('sleep 1; echo job done')), `output channel: ${JSON.stringify(lines)}`);
  });
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
}

/** The toasts on show (to say what went wrong when a card does not come). */
async function toastTexts(page) {
  return page.locator('.notifications-toasts .notification-toast').allTextContents().catch(() => []);
}

/** Revert on the agent's edit card (an agent's change undone from the editor): Revert since here
 * asks first (cancelled here), Revert puts back the file's bytes and adds the revert's own card,
 * which can be reverted in turn; from the palette, Revert Call… lists the cards to pick from. */
async function revertCards(page, frame, agentEdit) {
  const id = agentEdit?.edit;
  const card = () => frame.locator(`article[data-call-id="${id}"]`);
  const cardIds = () => frame.locator('article[data-call-id]').evaluateAll((els) => els.map((e) => e.dataset.callId));
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);

  await check('"Revert since here" on the agent\'s edit card asks first (a modal naming the call); Cancel changes nothing', async () => {
    assert(id && agentEdit.before, "the agent's edit and mcp.txt before it");
    const button = card().locator('button[data-action="revertSince"]');
    assertEqual(await button.textContent(), 'Revert since here');
    assert(((await button.getAttribute('title')) ?? '').includes(id), `title: ${await button.getAttribute('title')}`);
    const idsBefore = await cardIds();
    const onDisk = fs.readFileSync(agentEdit.file);
    await button.scrollIntoViewIfNeeded();
    await button.click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    const text = (await dialog.textContent()) ?? '';
    assert(text.includes(`Revert every file change since "Edit mcp.txt" (${id})?`) && /all of them or none/.test(text), `the dialog: ${text}`);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: 5000 });
    await page.waitForTimeout(500);
    assertEqual(await cardIds(), idsBefore, 'no new card');
    assert(fs.readFileSync(agentEdit.file).equals(onDisk), 'mcp.txt unchanged');
  });

  const revert = {};
  await check('"Revert" (keyboard: focus + Enter) on the agent\'s edit card: mcp.txt holds exactly its bytes from before the edit, and a completed "Revert <callId>" card comes first', async () => {
    assert(id && agentEdit.before, "the agent's edit and mcp.txt before it");
    const button = card().locator('button[data-action="revert"]');
    assertEqual(await button.textContent(), 'Revert');
    assert(((await button.getAttribute('title')) ?? '').includes(id), `title: ${await button.getAttribute('title')}`);
    const idsBefore = await cardIds();
    await button.scrollIntoViewIfNeeded();
    await button.focus();
    await page.keyboard.press('Enter');
    const done = frame.locator('article[data-kind="diff"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: `Revert ${id}` }) });
    try {
      await done.waitFor({ timeout: 20_000 });
    } catch (err) {
      const failed = await frame.locator('article[data-status="failed"] .native-text').first().textContent().catch(() => null);
      throw new Error(`no completed revert card (${err.message.split('\n')[0]}); toasts: ${JSON.stringify(await toastTexts(page))}; newest failed card: ${JSON.stringify(failed)}`);
    }
    revert.callId = await done.getAttribute('data-call-id');
    assert(!idsBefore.includes(revert.callId), `a new card, not ${revert.callId} again`);
    assertEqual(await done.locator('.card-title').textContent(), `Revert ${id}`, 'the title');
    assertEqual((await cardIds())[0], revert.callId, 'the revert card comes first (newest)');
    const lines = await cardLines(frame, revert.callId);
    assertEqual(lines[0], `revert Revert ${id} · completed`, 'the title line');
    assert(lines.includes('-second line, edited by claude-code') && lines.includes('+second line'), `the revert's hunks undo the edit: ${JSON.stringify(lines)}`);
    const after = fs.readFileSync(agentEdit.file);
    assert(after.equals(agentEdit.before), `mcp.txt on disk: ${JSON.stringify(after.toString('utf8'))}, before the edit: ${JSON.stringify(agentEdit.before.toString('utf8'))}`);
    // a revert's card is a diff card like any: it can be reverted too
    assertEqual(
      (await done.locator('button[data-action]').evaluateAll((els) => els.map((e) => e.dataset.action))).slice(-2),
      ['revert', 'revertSince'],
    );
    const native = (await done.locator('details.native pre').textContent()) ?? '';
    assert(native.includes(`Reverted ${id}`) && native.includes('mcp.txt'), `the Native text: ${native}`);
    assertEqual((await toastTexts(page)).filter((t) => /revert/i.test(t)), [], 'no error message');
    log(`    (revert card ${revert.callId}: ${JSON.stringify(native)})`);
  });
  await frame.locator('article[data-call-id]').first().scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, '11-revert');

  await check('"toolhost: Revert Call…" from the palette offers the completed diff cards, newest first: the revert\'s own card on top', async () => {
    assert(revert.callId, 'the revert card');
    await palette(page, 'toolhost: Revert Call…');
    // the picker's rows, once they replaced the palette's
    await page.waitForFunction(
      (revertId) =>
        document.querySelector('.quick-input-widget .quick-input-title')?.textContent?.includes('Revert Call') &&
        document.querySelector('.quick-input-widget .monaco-list-row')?.textContent?.includes(revertId),
      revert.callId,
      { timeout: 10_000 },
    ).catch(() => undefined);
    const texts = await page.locator('.quick-input-widget .monaco-list-row').allTextContents();
    assert(texts[0]?.includes(`Revert ${id}`) && texts[0]?.includes(revert.callId), `first row: ${texts[0]}`);
    assert(texts.some((t) => t.includes('Edit mcp.txt') && t.includes(id) && t.includes('claude-code')), `rows: ${JSON.stringify(texts)}`);
    assert(!texts.some((t) => /^Read |bash/.test(t)), `only diff cards: ${JSON.stringify(texts)}`);
    await page.keyboard.press('Escape');
  });

  await check('a revert the server refuses (mcp.txt has unsaved changes): an error message with FS_DIRTY_BUFFER, a failed card, the file untouched', async () => {
    assert(revert.callId, 'the revert card');
    await palette(page, 'Go to File');
    await pick(page, 'mcp.txt');
    await page.locator('.tabs-container .tab.active', { hasText: 'mcp.txt' }).waitFor({ timeout: 10_000 });
    // Focus by command, not by a click: another editor's split view may lie over the first
    // `.view-lines` on the page and swallow the click.
    await palette(page, 'View: Focus Active Editor Group');
    await page.keyboard.press('Control+End');
    await page.keyboard.type('unsaved');
    await page.locator('.tabs-container .tab.active.dirty').waitFor({ timeout: 5000 });
    // the change reaches the server as didChange before the revert is asked for
    await page.waitForTimeout(500);
    const onDisk = fs.readFileSync(agentEdit.file);
    const idsBefore = await cardIds();
    await frame.locator(`article[data-call-id="${revert.callId}"] button[data-action="revert"]`).click();
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: `revert of ${revert.callId} failed` });
    await toast.first().waitFor({ state: 'visible', timeout: 20_000 });
    const text = (await toast.first().textContent()) ?? '';
    assert(text.includes(`toolhost: revert of ${revert.callId} failed (FS_DIRTY_BUFFER): `) && text.includes('mcp.txt'), `the message: ${text}`);
    const failed = frame.locator('article[data-status="failed"]', { has: frame.locator('.card-title', { hasText: `Revert ${revert.callId}` }) });
    await failed.waitFor({ timeout: 5000 });
    assertEqual((await cardIds()).length, idsBefore.length + 1, 'one new (failed) card');
    assertEqual(await failed.locator('button[data-action^="revert"]').count(), 0, 'no Revert on a failed card');
    assert(fs.readFileSync(agentEdit.file).equals(onDisk), 'mcp.txt unchanged on disk');
  });
  await shot(page, '12-revert-refused');
  await palette(page, 'File: Revert File').catch(() => undefined);
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
}

/** The cursor line the status bar shows (`Ln N, Col M`), or undefined. */
async function cursorLine(page) {
  const texts = await page.locator('.statusbar-item').allTextContents();
  const m = texts.map((t) => /Ln (\d+), Col \d+/.exec(t)).find((x) => x);
  return m ? Number(m[1]) : undefined;
}

/** The CodeLens lines on show in the right-hand side of the diff editor. */
async function reviewLenses(page) {
  const texts = await page.locator('.monaco-diff-editor .editor.modified .codelens-decoration').allTextContents();
  // CodeLens separates its commands with non-breaking spaces
  return texts.map((t) => t.replace(/\u00a0/g, ' ').trim());
}

/** Review mode: turned on from the palette (QuickPick), an edit of review.txt with two hunks from
 * Call Tool…, then only keys: Alt+] / Alt+[ move between hunks, Alt+A accepts the first, Alt+R
 * rejects the second, and the comment box that follows submits with Enter. */
async function reviewMode(page, frame) {
  const ws = process.env.TOOLHOST_TEST_WS ?? '';
  const file = path.join(ws, 'review.txt');
  const before = fs.readFileSync(file, 'utf8');
  const lines = before.split('\n');
  const edited = lines.map((l) => (l === 'line 2' ? 'line 2, reviewed' : l === 'line 15' ? 'line 15, rejected' : l));
  const comment = 'line 15 stays as it is';
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);

  await check('"toolhost: Set Review Mode…" (QuickPick: ask) turns review mode on: the status bar says "review: ask"', async () => {
    await palette(page, 'toolhost: Set Review Mode…');
    await pick(page, 'ask');
    const item = page.locator('.statusbar-item', { hasText: 'review: ask' }).first();
    await item.waitFor({ state: 'visible', timeout: 10_000 });
    const label = (await item.getAttribute('aria-label')) ?? '';
    assert(/review mode: ask/.test(label), `status bar: ${label}`);
  });

  await check('Call Tool… read review.txt (an edit needs a read first)', async () => {
    await palette(page, 'toolhost: Call Tool…');
    await pick(page, 'read');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await page.waitForFunction(() => /"file_path"/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
    await input.fill(JSON.stringify({ file_path: 'review.txt' }));
    await page.keyboard.press('Enter');
    await frame.locator('article[data-kind="read"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: 'review.txt' }) }).first().waitFor({ timeout: 20_000 });
  });

  const review = {};
  await check('an edit with two hunks asks first: the review diff opens (titled with the call) with Accept/Reject CodeLens above both hunks, and the panel shows its summary', async () => {
    await palette(page, 'toolhost: Call Tool…');
    await pick(page, 'edit');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await page.waitForFunction(() => /"old_string"/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
    await input.fill(JSON.stringify({ file_path: 'review.txt', old_string: lines.slice(1, 15).join('\n'), new_string: edited.slice(1, 15).join('\n') }));
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: 'review.txt (review: Edit review.txt)' }).waitFor({ timeout: 20_000 });
    await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 10_000 });
    const pending = frame.locator('article[data-kind="diff"][data-status="pending"]', { has: frame.locator('.card-title', { hasText: 'Edit review.txt' }) });
    await pending.waitFor({ timeout: 10_000 });
    review.callId = await pending.getAttribute('data-call-id');
    await page.waitForFunction(() => document.querySelectorAll('.monaco-diff-editor .editor.modified .codelens-decoration').length === 2, null, { timeout: 15_000 });
    assertEqual(await reviewLenses(page), ['hunk 1/2: undecided | Accept (Alt+A) | Reject (Alt+R)', 'hunk 2/2: undecided | Accept (Alt+A) | Reject (Alt+R)'], 'the CodeLens');
    // each above its hunk's new line (2 and 15)
    const lensLines = await page.evaluate(() => {
      const editor = document.querySelector('.monaco-diff-editor .editor.modified');
      const top = (el) => el.getBoundingClientRect().top;
      const numbers = Array.from(editor?.querySelectorAll('.line-numbers') ?? []).map((n) => ({ line: Number(n.textContent), top: top(n) }));
      return Array.from(editor?.querySelectorAll('.codelens-decoration') ?? []).map((lens) => {
        const below = numbers.filter((n) => n.top > top(lens)).sort((a, b) => a.top - b.top)[0];
        return below?.line;
      });
    });
    assertEqual(lensLines, [2, 15], 'the line under each CodeLens');
    const summary = frame.locator('#reviews article.review');
    await summary.waitFor({ timeout: 10_000 });
    const text = (await summary.textContent()) ?? '';
    assert(text.includes('Edit review.txt') && /0 accepted · 0 rejected · 2 undecided/.test(text), `the summary: ${text}`);
    assertEqual(await summary.locator('button[data-op]').allTextContents(), ['Open diff', 'Accept all', 'Reject all', 'Submit']);
    assertEqual(await cursorLine(page), 2, 'the cursor starts on the first hunk');
  });
  await shot(page, '13-review');

  await check('keyboard only: Alt+] / Alt+[ move between the hunks, Alt+A accepts hunk 1, Alt+R rejects hunk 2, the comment box submits with Enter', async () => {
    await page.keyboard.press('Alt+]');
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.statusbar-item')).some((e) => /Ln 15,/.test(e.textContent ?? '')), null, { timeout: 5000 });
    await page.keyboard.press('Alt+[');
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.statusbar-item')).some((e) => /Ln 2,/.test(e.textContent ?? '')), null, { timeout: 5000 });
    await page.keyboard.press('Alt+a');
    await page.waitForFunction(() => /hunk 1\/2:\saccepted/.test(document.querySelector('.monaco-diff-editor .editor.modified .codelens-decoration')?.textContent ?? ''), null, { timeout: 5000 });
    // the cursor moved on to the hunk still undecided
    assertEqual(await cursorLine(page), 15, 'the cursor on hunk 2');
    const summary = (await frame.locator('#reviews article.review').textContent()) ?? '';
    assert(/1 accepted · 0 rejected · 1 undecided/.test(summary), `the summary: ${summary}`);
    await shot(page, '13b-review-first-accepted');
    await page.keyboard.press('Alt+r');
    const box = page.locator('.quick-input-widget', { hasText: 'submit the review of Edit review.txt' });
    await box.waitFor({ state: 'visible', timeout: 10_000 });
    const prompt = (await box.textContent()) ?? '';
    assert(prompt.includes('1 accepted, 1 rejected (hunk 2)'), `the prompt: ${prompt}`);
    await page.keyboard.type(comment);
    await page.keyboard.press('Enter');
  });

  await check('the review closes (its tab and panel summary); review.txt on disk holds exactly the accepted hunk; the completed card\'s Native text names the rejected hunk and the comment', async () => {
    assert(review.callId, 'the pending card');
    const done = frame.locator(`article[data-call-id="${review.callId}"][data-status="completed"]`);
    await done.waitFor({ timeout: 20_000 });
    const expected = lines.map((l) => (l === 'line 2' ? 'line 2, reviewed' : l)).join('\n');
    assertEqual(fs.readFileSync(file, 'utf8'), expected, 'review.txt on disk');
    await page.locator('.tabs-container .tab', { hasText: '(review:' }).waitFor({ state: 'detached', timeout: 10_000 });
    await frame.locator('#reviews article.review').waitFor({ state: 'detached', timeout: 10_000 });
    const cardText = (await cardLines(frame, review.callId)) ?? [];
    assert(cardText.includes('+line 2, reviewed') && !cardText.some((l) => l.includes('line 15, rejected')), `the card shows what was written: ${JSON.stringify(cardText)}`);
    const native = (await done.locator('details.native pre').textContent()) ?? '';
    assert(native.includes(`User comment: ${comment}`), `the Native text has the comment: ${native}`);
    assert(native.includes('rejected 1 of 2 hunks: hunk 2 (line 15 of the original)'), `the Native text names the rejected hunk: ${native}`);
    log(`    (review card ${review.callId}: ${JSON.stringify(native)})`);
  });
  await shot(page, '14-review-done');

  await check('"toolhost: Set Review Mode…" off: the status bar no longer says review', async () => {
    await palette(page, 'toolhost: Set Review Mode…');
    await pick(page, 'off');
    await page.waitForFunction(() => !Array.from(document.querySelectorAll('.statusbar-item')).some((e) => /review: ask/.test(e.textContent ?? '')), null, { timeout: 10_000 });
  });
}

/** Runs a tool from the palette (Call Tool…): the tool, then its arguments as JSON. */
async function callFromPalette(page, tool, args) {
  await palette(page, 'toolhost: Call Tool…');
  await pick(page, tool);
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.waitForFunction(() => /^\{/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
  await input.fill(JSON.stringify(args));
  await page.keyboard.press('Enter');
}

/** Questions (`toolhost/askUser`) answered with the keyboard in the panel's form, the pinned todo
 * list, and plan mode's commands. */
async function questionsAndTodos(page, frame) {
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  const question = { questions: [{ id: 'db', question: 'Which database?', header: 'DB', options: [{ label: 'Postgres' }, { label: 'SQLite' }] }] };
  const asked = {};
  await check('Call Tool… ask_user_question: the question appears in the panel as a form (radio options, Other field) with its pending card, and a notification says who asks', async () => {
    await callFromPalette(page, 'ask_user_question', question);
    const form = frame.locator('#questions form[data-ask]');
    await form.waitFor({ timeout: 20_000 });
    asked.callId = await form.getAttribute('data-ask');
    assertEqual(await form.locator('input.ask-input').evaluateAll((els) => els.map((e) => `${e.type}:${e.value}`)), ['radio:Postgres', 'radio:SQLite']);
    assertEqual(await form.locator('input.ask-other').count(), 1, 'the Other field');
    const text = (await form.textContent()) ?? '';
    assert(text.includes('Which database?') && text.includes('DB'), `the form: ${text}`);
    await frame.locator(`article[data-call-id="${asked.callId}"][data-status="pending"][data-kind="question"]`).waitFor({ timeout: 10_000 });
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'Agent asks: Which database?' }).first().waitFor({ timeout: 10_000 });
    // one count of what waits (questions and reviews share the queue); the tooltip says what it is
    const status = page.locator('.statusbar-item', { hasText: '1 waiting' }).first();
    await status.waitFor({ state: 'visible', timeout: 10_000 });
    const label = (await status.getAttribute('aria-label')) ?? '';
    assert(label.includes('waiting for you: 1 question'), `status bar: ${label}`);
  });
  await shot(page, '15-question-form');

  await check('keyboard only: "toolhost: Answer Question" focuses the form, 2 picks SQLite, Enter submits; the call completes with {"answers":[{"id":"db","selected":["SQLite"]}]}', async () => {
    assert(asked.callId, 'the question form');
    await palette(page, 'toolhost: Answer Question');
    await frame.waitForFunction(() => document.activeElement?.closest('#questions form[data-ask]') !== null && document.hasFocus(), null, { timeout: 10_000 });
    await page.keyboard.press('2');
    await frame.waitForFunction(() => document.querySelector('#questions input.ask-input[value="SQLite"]')?.checked === true, null, { timeout: 5000 });
    // ArrowUp / Space move and choose too: up to Postgres, then back down with j
    await page.keyboard.press('ArrowUp');
    await frame.waitForFunction(() => document.activeElement?.getAttribute('value') === 'Postgres', null, { timeout: 5000 });
    await page.keyboard.press('j');
    await frame.waitForFunction(() => document.activeElement?.getAttribute('value') === 'SQLite', null, { timeout: 5000 });
    await page.keyboard.press('Space');
    await shot(page, '15b-question-chosen');
    await page.keyboard.press('Enter');
    const done = frame.locator(`article[data-call-id="${asked.callId}"][data-status="completed"]`);
    await done.waitFor({ timeout: 15_000 });
    const native = (await done.locator('details.native pre').textContent()) ?? '';
    assertEqual(native, '{"answers":[{"id":"db","selected":["SQLite"]}]}', 'the Native text');
    const answer = ((await done.locator('.qa-answer').textContent()) ?? '').trim();
    assertEqual(answer, '→ SQLite', 'the answer on the card');
    await frame.locator('#questions form[data-ask]').waitFor({ state: 'detached', timeout: 10_000 });
  });
  await frame.locator(`article[data-call-id="${asked.callId}"]`).scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, '16-question-answered');

  await check('Call Tool… todo_write: the todo list is pinned above the cards (✓ struck through, in progress highlighted, counts)', async () => {
    await callFromPalette(page, 'todo_write', { todos: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'in_progress' }] });
    const pinned = frame.locator('#todos .todos-pinned');
    await pinned.waitFor({ timeout: 20_000 });
    const items = await pinned.locator('li.todo').evaluateAll((els) =>
      els.map((e) => ({ status: e.dataset.status, text: e.querySelector('.todo-text')?.textContent, strike: getComputedStyle(e.querySelector('.todo-text')).textDecorationLine })),
    );
    assertEqual(items, [
      { status: 'completed', text: 'a', strike: 'line-through' },
      { status: 'in_progress', text: 'b', strike: 'none' },
    ]);
    assertEqual(((await pinned.locator('.todos-title .todo-counts').textContent()) ?? '').trim(), '1/2 completed · 1 in progress · 0 pending');
    const card = frame.locator('article[data-kind="todo"][data-status="completed"]').first();
    await card.waitFor({ timeout: 10_000 });
    assertEqual(await card.getAttribute('data-view'), 'todo');
  });
  await shot(page, '17-todos');

  await check('"toolhost: Enter Plan Mode" / "Exit Plan Mode": toolhost/setPlanMode, the status bar says "plan mode" while it is on', async () => {
    await palette(page, 'toolhost: Enter Plan Mode');
    await page.locator('.statusbar-item', { hasText: 'plan mode' }).first().waitFor({ state: 'visible', timeout: 10_000 });
    await palette(page, 'toolhost: Exit Plan Mode');
    await page.waitForFunction(() => !Array.from(document.querySelectorAll('.statusbar-item')).some((e) => /plan mode/.test(e.textContent ?? '')), null, { timeout: 10_000 });
  });
}

/** The rows of the MCP Servers view (the tree in the toolhost container): label, description. */
async function mcpViewRows(page) {
  return page.evaluate(() => {
    const pane = Array.from(document.querySelectorAll('.pane')).find((p) => /MCP Servers/i.test(p.querySelector('.pane-header')?.textContent ?? ''));
    if (!pane) {
      return null;
    }
    return Array.from(pane.querySelectorAll('.monaco-list-row')).map((row) => ({
      label: row.querySelector('.label-name')?.textContent ?? '',
      description: row.querySelector('.label-description')?.textContent ?? '',
    }));
  });
}

/** The MCP bridge: the MCP Servers view lists the configured server `echo` as ready with its
 * tools, and a call of one of them (Call Tool… from the palette, and the tool row's inline action)
 * becomes an MCP card: the server badge, the raw tool name, the text, the Structured JSON. */
async function mcpBridge(page, frame) {
  if (process.env.TOOLHOST_E2E_MCP_BRIDGE !== '1') {
    log('  - ui: the MCP bridge (TOOLHOST_E2E_MCP_BRIDGE is not 1: no MCP server configured) (skipped)');
    return;
  }
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await check('"toolhost: Show MCP Servers" shows the MCP Servers view: echo ([mcp.servers.echo] in the user config) ready with its 2 tools', async () => {
    await palette(page, 'toolhost: Show MCP Servers');
    // python and the MCP SDK take a moment to start: the row says starting, then ready
    await page.waitForFunction(
      () => {
        const pane = Array.from(document.querySelectorAll('.pane')).find((p) => /MCP Servers/i.test(p.querySelector('.pane-header')?.textContent ?? ''));
        return Array.from(pane?.querySelectorAll('.monaco-list-row') ?? []).some(
          (row) => row.querySelector('.label-name')?.textContent === 'echo' && row.querySelector('.label-description')?.textContent === 'ready · 2 tools',
        );
      },
      null,
      { timeout: 60_000 },
    );
    const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /MCP Servers/i }) });
    const row = pane.locator('.monaco-list-row', { has: page.locator('.label-name', { hasText: /^echo$/ }) }).first();
    assertEqual(await row.locator('.codicon-pass').count(), 1, 'the ready icon');
    await row.click();
    await page.waitForFunction(
      () => {
        const pane = Array.from(document.querySelectorAll('.pane')).find((p) => /MCP Servers/i.test(p.querySelector('.pane-header')?.textContent ?? ''));
        const labels = Array.from(pane?.querySelectorAll('.monaco-list-row .label-name') ?? []).map((l) => l.textContent);
        return labels.includes('mcp__echo__weather') && labels.includes('mcp__echo__shout');
      },
      null,
      { timeout: 10_000 },
    );
    const rows = await mcpViewRows(page);
    assertEqual(rows?.map((r) => r.label).sort(), ['echo', 'mcp__echo__shout', 'mcp__echo__weather'], 'the rows');
  });
  await shot(page, '18-mcp-servers');

  await check('Call Tool… mcp__echo__weather: an MCP card with the server badge, the raw tool name, the text and the Structured JSON (structuredContent)', async () => {
    await callFromPalette(page, 'mcp__echo__weather', { city: 'Paris' });
    const card = frame.locator('article[data-kind="mcp"][data-status="completed"]', { has: frame.locator('.mcp-tool', { hasText: /^weather$/ }) }).first();
    await card.waitFor({ timeout: 30_000 });
    assertEqual(await card.getAttribute('data-view'), 'mcp', 'the view');
    assertEqual(await card.locator('.card-tool').textContent(), 'mcp__echo__weather', 'the public name');
    assertEqual(await card.locator('.card-title .mcp-server').textContent(), 'echo', 'the server badge');
    assertEqual(await card.locator('.card-title').textContent(), 'echo · weather', 'the title');
    const text = (await card.locator('pre.mcp-text').textContent()) ?? '';
    assert(text.includes('Paris') && text.includes('Nowhere'), `the text: ${text}`);
    const structured = card.locator('details.mcp-structured');
    assertEqual(await structured.locator('summary').textContent(), 'Structured', 'the Structured view');
    await structured.locator('summary').click();
    const json = (await structured.locator('pre.json').textContent()) ?? '';
    const value = JSON.parse(json);
    assertEqual(value, { location: { city: 'Paris', country: 'Nowhere' }, celsius: 21.5, conditions: ['sunny', 'calm'] }, 'the structured content');
    assertEqual(json, JSON.stringify(value, null, 2), 'pretty printed with 2 spaces');
    assertEqual(await structured.locator('.json-key').first().textContent(), '"location"', 'keys are highlighted');
    await card.scrollIntoViewIfNeeded();
  });
  await shot(page, '19-mcp-card');

  await check('the tool row\'s inline "Call Tool…" in the MCP Servers view asks only for the arguments: mcp__echo__shout → an MCP card "HELLO"', async () => {
    const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /MCP Servers/i }) });
    const row = pane.locator('.monaco-list-row', { has: page.locator('.label-name', { hasText: /^mcp__echo__shout$/ }) }).first();
    await row.hover();
    await row.locator('.action-label[aria-label*="Call Tool"]').click();
    const input = page.locator('.quick-input-widget .quick-input-box input');
    // The arguments offered are shout's own (its schema's skeleton), not another tool's: the
    // box of the previous call may still be in the page until the new one opens.
    await page.waitForFunction(() => /"text"/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
    const skeleton = await input.inputValue();
    assert(!/"city"/.test(skeleton), `the input box holds shout's arguments: ${skeleton}`);
    await input.fill(JSON.stringify({ text: 'hello <b>' }));
    await page.keyboard.press('Enter');
    const card = frame.locator('article[data-kind="mcp"][data-status="completed"]', { has: frame.locator('.mcp-tool', { hasText: /^shout$/ }) }).first();
    await card.waitFor({ timeout: 30_000 });
    assertEqual(await card.locator('pre.mcp-text').textContent(), 'HELLO <B>', 'the text (escaped markup arrives as text)');
    assertEqual(await card.locator('pre.mcp-text b').count(), 0, 'no markup from the server');
  });
}

/** The chat's exchanges as a person reads them. */
async function chatExchanges(frame) {
  return frame.evaluate(() =>
    Array.from(document.querySelectorAll('#chat-log .chat-x')).map((x) => ({
      key: x.getAttribute('data-chat-key'),
      state: x.getAttribute('data-state'),
      stop: x.getAttribute('data-stop'),
      prompt: x.querySelector('.chat-prompt')?.textContent ?? '',
      mode: x.querySelector('.chat-mode-badge')?.textContent ?? null,
      reasoning: Array.from(x.querySelectorAll('details.chat-reasoning')).map((d) => ({ summary: d.querySelector('summary')?.textContent, open: d.open })),
      tools: Array.from(x.querySelectorAll('.chat-tool')).map((t) => ({ status: t.getAttribute('data-status'), callId: t.querySelector('button[data-card]')?.getAttribute('data-card'), text: t.textContent })),
      text: Array.from(x.querySelectorAll('.chat-text')).map((t) => t.textContent).join('\n'),
      strong: Array.from(x.querySelectorAll('.chat-text strong')).map((t) => t.textContent),
      stopLine: x.querySelector('.chat-stop')?.textContent ?? null,
      error: x.querySelector('.chat-error')?.textContent ?? null,
      footer: x.querySelector('.chat-footer')?.textContent ?? null,
    })),
  );
}

/** The chat with toolhost's own agent, against the scripted model server. */
async function agentChat(page, frame) {
  if (process.env.TOOLHOST_E2E_AGENT !== '1') {
    log('  - ui: the chat with the agent (TOOLHOST_E2E_AGENT is not 1: no model server configured) (skipped)');
    return;
  }
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  const model = process.env.TOOLHOST_E2E_MODEL_URL;
  const sentToModel = async () => (await (await fetch(`${model}/requests`)).json());
  const first = {};
  await check('"toolhost: Ask the Agent" focuses the chat box; a mode picked, a task typed (Shift+Enter: a new line) and sent with Enter streams the answer, the read card shows in the panel, and the footer has the tokens and the cost', async () => {
    // whether Stop showed while the prompt ran (it runs for well under a second)
    await frame.evaluate(() => {
      const stop = document.getElementById('chat-stop');
      window.__chatStopShown = false;
      new MutationObserver(() => {
        if (stop && !stop.hidden) {
          window.__chatStopShown = true;
        }
      }).observe(stop, { attributes: true });
    });
    await palette(page, 'toolhost: Ask the Agent');
    await frame.waitForFunction(() => document.activeElement?.id === 'chat-input' && document.hasFocus(), null, { timeout: 10_000 });
    await frame.selectOption('#chat-mode', 'accept-edits');
    await frame.focus('#chat-input');
    await page.keyboard.type('What does a.txt say?');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('Be brief <b>please</b>.');
    assertEqual(await frame.inputValue('#chat-input'), 'What does a.txt say?\nBe brief <b>please</b>.', 'Shift+Enter is a new line');
    await page.keyboard.press('Enter');
    const done = frame.locator('#chat-log .chat-x[data-state="done"]');
    await done.first().waitFor({ timeout: 30_000 });
    const [x] = await chatExchanges(frame);
    assert(x, 'an exchange');
    first.callId = x.tools[0]?.callId;
    assertEqual(
      { ...x, key: undefined, tools: x.tools.map((t) => ({ ...t, callId: undefined })) },
      {
        key: undefined,
        state: 'done',
        stop: 'answered',
        prompt: 'What does a.txt say?\nBe brief <b>please</b>.',
        mode: 'accept-edits',
        reasoning: [{ summary: 'Reasoning', open: false }],
        tools: [{ status: 'completed', callId: undefined, text: '✓ Read a.txt' }],
        text: 'The file a.txt starts with hello and has 4 lines.',
        strong: ['hello'],
        stopLine: null,
        error: null,
        footer: '2 turns · 1,120 tokens in · 50 out · 100 cached · $0.0012',
      },
      'the exchange',
    );
    assert(await frame.evaluate(() => window.__chatStopShown), 'Stop showed while the prompt ran');
    assert(await frame.locator('#chat-stop').isHidden(), 'Stop is hidden again');
    assert(await frame.locator('#chat-send').isEnabled(), 'Send is enabled again');
    assertEqual(await frame.inputValue('#chat-input'), '', 'the box is empty');
    assertEqual(await frame.locator('#chat-log b').count(), 0, 'the prompt\'s markup is text');
    // the read card, as the agent's call
    assert(first.callId, 'the tool line names its call');
    const card = frame.locator(`article[data-call-id="${first.callId}"][data-status="completed"][data-kind="read"]`);
    await card.waitFor({ timeout: 10_000 });
    assertEqual((await cardLines(frame, first.callId))?.[0], 'read Read a.txt · completed · toolhost agent', 'the card\'s title line');
    // the model got the file's lines as the read's answer
    const sent = await sentToModel();
    const tool = sent[sent.length - 1]?.messages?.find((m) => m.role === 'tool');
    assert(/hello/.test(String(tool?.content)), `the read's answer sent to the model: ${JSON.stringify(tool)}`);
    first.requests = sent.length;
  });
  await frame.locator('#chat').scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, '20-agent-chat');

  await check('the tool line leads to its card (keyboard: focus + Enter focuses the card)', async () => {
    assert(first.callId, 'the first exchange');
    const link = frame.locator(`#chat-log button[data-card="${first.callId}"]`);
    await link.focus();
    await page.keyboard.press('Enter');
    await frame.waitForFunction((id) => document.activeElement?.getAttribute('data-call-id') === id, first.callId, { timeout: 5000 });
  });

  await check('a second prompt continues the chat: the model gets the first prompt and answer again', async () => {
    await frame.focus('#chat-input');
    await page.keyboard.type('And the last line?');
    await page.keyboard.press('Enter');
    await frame.locator('#chat-log .chat-x:nth-child(2)[data-state="done"]').waitFor({ timeout: 30_000 });
    const xs = await chatExchanges(frame);
    assertEqual(xs.map((x) => [x.prompt, x.stop, x.mode]), [['What does a.txt say?\nBe brief <b>please</b>.', 'answered', 'accept-edits'], ['And the last line?', 'answered', 'accept-edits']]);
    const sent = await sentToModel();
    assert(sent.length > first.requests, 'new requests');
    const users = sent[sent.length - 1].messages.filter((m) => m.role === 'user').map((m) => m.content);
    assertEqual(users, ['What does a.txt say?\nBe brief <b>please</b>.', 'And the last line?'], 'the conversation sent');
  });

  await check('Stop (Esc in the chat box) cancels a slow answer: "Stopped"; Send is back, and the chat goes on with what was said', async () => {
    await frame.focus('#chat-input');
    await page.keyboard.type('Think about it [slow]');
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => /Thinking slowly\.\./.test(document.querySelector('#chat-log .chat-x:last-child .chat-text')?.textContent ?? ''), null, { timeout: 15_000 });
    assert(await frame.locator('#chat-stop').isVisible(), 'Stop is shown');
    await page.keyboard.press('Escape');
    const stopped = frame.locator('#chat-log .chat-x:last-child[data-state="done"]');
    await stopped.waitFor({ timeout: 15_000 });
    const xs = await chatExchanges(frame);
    const last = xs[xs.length - 1];
    assertEqual([last.stop, last.stopLine], ['cancelled', 'Stopped: the run was cancelled (the chat keeps what was said).']);
    assert(await frame.locator('#chat-send').isEnabled(), 'Send is enabled again');
    await frame.locator('#chat-log .chat-x:last-child').scrollIntoViewIfNeeded().catch(() => undefined);
    await shot(page, '21-agent-chat-stopped');
    // the chat goes on, with what was said before the Stop
    await page.keyboard.type('Go on');
    await page.keyboard.press('Enter');
    await frame.locator('#chat-log .chat-x:nth-child(4)[data-state="done"]').waitFor({ timeout: 30_000 });
    assertEqual((await chatExchanges(frame))[3]?.stop, 'answered', 'the prompt after the Stop');
    const sent = await sentToModel();
    const users = sent[sent.length - 1].messages.filter((m) => m.role === 'user').map((m) => m.content);
    assertEqual(users.slice(-2), ['Think about it [slow]', 'Go on'], 'the conversation sent after the Stop');
  });

  await check('New chat clears the transcript', async () => {
    await frame.locator('#chat-new').click();
    await frame.waitForFunction(() => document.querySelectorAll('#chat-log .chat-x').length === 0, null, { timeout: 5000 });
    assert(await frame.locator('#chat-log').isHidden(), 'the empty transcript is hidden');
  });
}

async function main() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin });
  const page = await context.newPage();
  try {
    await page.goto(url);
    await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
    log('workbench loaded; waiting for the startup mocha suite (extension host)…');

    const main = await waitForFile(mainResult, 'the startup mocha suite', 6 * 60_000);
    reportMocha('mocha', main);
    const data = main.data ?? {};
    for (const s of data.conformanceSkipped ?? []) {
      log(`    (scenario ${s.scenario} skipped: ${s.missing.join(', ')} not on PATH; the Rust conformance run fails it)`);
    }
    log(`    (conformance through the extension: ${data.conformanceScenarios ?? 0} scenarios, ${data.conformanceSteps ?? 0} tool calls; lsp tool in the server: ${data.lspToolAvailable ? 'yes, toolhost/lspQuery answered end to end' : 'no, provider tested through the extension API'})`);

    await check('status bar shows the running toolhost server', async () => {
      const item = page.locator('.statusbar-item', { hasText: 'toolhost' }).first();
      await item.waitFor({ state: 'visible', timeout: 10_000 });
      const label = (await item.getAttribute('aria-label')) ?? '';
      assert(/toolhost server: running/.test(label), `status bar: ${label}`);
    });

    let frame;
    await check('"toolhost: Show Panel" opens the panel webview (own activity-bar container)', async () => {
      await palette(page, 'toolhost: Show Panel');
      frame = await panelFrame(page);
      const container = page.locator('.activitybar .action-item .action-label[aria-label*="toolhost"]').first();
      await container.waitFor({ state: 'visible', timeout: 5000 });
    });
    if (!frame) {
      throw new Error('no panel, cannot continue');
    }
    // What the hosted agent's checks use of the driver.
    const helpers = { check, shot, palette, assert, assertEqual, cardLines, chatExchanges, log };
    if (process.env.TOOLHOST_E2E_ONLY === 'chat') {
      log('  (TOOLHOST_E2E_ONLY=chat: only the chat checks)');
      await agentChat(page, frame);
      await externalAgentChat(page, frame, helpers);
      return;
    }
    if (process.env.TOOLHOST_E2E_ONLY === 'external-agent') {
      log('  (TOOLHOST_E2E_ONLY=external-agent: only the hosted agent\'s checks)');
      await externalAgentChat(page, frame, helpers);
      return;
    }
    if (process.env.TOOLHOST_E2E_ONLY === 'checkpoints') {
      log('  (TOOLHOST_E2E_ONLY=checkpoints: only the checkpoints\' checks)');
      await checkpointRestore(page, frame, { ...helpers, pick, callFromPalette });
      return;
    }
    if (process.env.TOOLHOST_E2E_ONLY === 'worktrees') {
      log('  (TOOLHOST_E2E_ONLY=worktrees: only the worktree sessions\' checks)');
      await worktreeSessions(page, frame, { ...helpers, pick, serveProcesses });
      return;
    }

    const cards = data.conformanceDiffCards ?? [];
    const byScenario = new Map();
    for (const c of cards) {
      byScenario.set(c.scenario, [...(byScenario.get(c.scenario) ?? []), c]);
    }
    for (const [scenario, list] of byScenario) {
      await check(`panel DOM = harness rendering for the diff cards of ${scenario}`, async () => {
        for (const c of list) {
          assertEqual(await cardLines(frame, c.callId), c.rendered.split('\n'), `card ${c.callId}`);
        }
      });
    }
    await check('at least 10 conformance write/edit cards were checked in the DOM', async () => {
      assert(cards.length >= 10, `${cards.length} cards`);
    });
    await shot(page, '01-panel-conformance-cards');

    const twoHunks = cards.find((c) => c.scenario.startsWith('034-'));
    await check('"Open diff" on a conformance card with two far-apart hunks: ⋯ markers in the gap', async () => {
      assert(twoHunks, 'the 034 scenario card');
      const card = frame.locator(`article[data-call-id="${twoHunks.callId}"]`);
      await card.scrollIntoViewIfNeeded();
      await card.locator('button[data-action="openDiff"]').click();
      await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 15_000 });
      const modified = page.locator('.monaco-diff-editor .editor.modified .view-lines').first();
      await page.waitForFunction(() => /⋯\s\d+\sunchanged\slines?/.test(document.querySelector('.monaco-diff-editor .editor.modified .view-lines')?.textContent ?? ''), null, { timeout: 10_000 });
      const text = (await modified.textContent()) ?? '';
      assert(/⋯\s\d+\sunchanged\slines/.test(text), text);
    });
    await shot(page, '01b-conformance-two-hunks-diff');
    await palette(page, 'View: Close All Editors');

    await palette(page, 'toolhost: Clear Cards');
    await frame.waitForFunction(() => document.querySelectorAll('article[data-call-id]').length === 0, null, { timeout: 10_000 });

    const live = {};
    await check('Call Tool… from the palette: read a.txt → a read card with line numbers', async () => {
      await palette(page, 'toolhost: Call Tool…');
      await pick(page, 'read');
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await page.waitForFunction(() => document.querySelector('.quick-input-widget .quick-input-box input')?.value === '{"file_path":""}', null, { timeout: 10_000 });
      await input.fill('{"file_path": "a.txt"}');
      await page.keyboard.press('Enter');
      const card = frame.locator('article[data-kind="read"][data-status="completed"]');
      await card.waitFor({ timeout: 20_000 });
      live.read = await card.getAttribute('data-call-id');
      const numbers = await card.locator('.read-line .ln').allTextContents();
      assertEqual(numbers, ['1', '2', '3', '4']);
    });

    await check('the arguments input box validates against the input schema before sending', async () => {
      await palette(page, 'toolhost: Call Tool…');
      await pick(page, 'edit');
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.fill('{"file_path": 3, "old_string": "world"}');
      const message = page.locator('.quick-input-widget .quick-input-message');
      await page.waitForFunction(() => /new_string/.test(document.querySelector('.quick-input-widget .quick-input-message')?.textContent ?? ''), null, { timeout: 10_000 });
      const text = (await message.textContent()) ?? '';
      assert(/missing required property "new_string"/.test(text) && /file_path must be string/.test(text), text);
      await page.keyboard.press('Enter');
      await page.waitForTimeout(300);
      assert(await input.isVisible(), 'Enter on invalid JSON must not close the box');
      await input.fill('{"file_path": "a.txt", "old_string": "world"');
      await page.waitForFunction(() => /Not valid JSON/.test(document.querySelector('.quick-input-widget .quick-input-message')?.textContent ?? ''), null, { timeout: 10_000 });
    });

    await check('Call Tool… edit → a completed diff card with inline hunks and +/- counts in the panel', async () => {
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.fill('{"file_path": "a.txt", "old_string": "world", "new_string": "there"}');
      await page.keyboard.press('Enter');
      const card = frame.locator('article[data-kind="diff"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: 'Edit a.txt' }) });
      await card.waitFor({ timeout: 20_000 });
      live.edit = await card.getAttribute('data-call-id');
      assertEqual(await cardLines(frame, live.edit), [
        'edit Edit a.txt · completed',
        '@@ -1,4 +1,4 @@',
        ' hello',
        '-world',
        '+there',
        ' this is a.txt',
        ' the end',
      ]);
      assertEqual((await card.locator('.stats').textContent()).trim(), '+1 −1');
      const colours = await card.evaluate((el) => ({
        add: getComputedStyle(el.querySelector('.line.add')).backgroundColor,
        del: getComputedStyle(el.querySelector('.line.del')).backgroundColor,
        ctx: getComputedStyle(el.querySelector('.line.ctx')).backgroundColor,
      }));
      assert(colours.add !== colours.ctx && colours.del !== colours.ctx && colours.add !== colours.del, JSON.stringify(colours));
      // newest first
      const order = await frame.locator('article[data-call-id]').evaluateAll((els) => els.map((e) => e.dataset.callId));
      assertEqual(order, [live.edit, live.read]);
      live.editLines = await cardLines(frame, live.edit);
      live.readLines = await cardLines(frame, live.read);
    });
    await check('the Native text is collapsible (details/summary) and opens with the keyboard', async () => {
      const card = frame.locator(`article[data-call-id="${live.edit}"]`);
      const summary = card.locator('details.native > summary');
      await summary.focus();
      await page.keyboard.press('Enter');
      await frame.waitForFunction((id) => Array.from(document.querySelectorAll('article[data-call-id]')).find((e) => e.dataset.callId === id)?.querySelector('details.native')?.open === true, live.edit, { timeout: 5000 });
      const text = await card.locator('details.native pre').textContent();
      assert(/has been updated successfully/.test(text), text);
    });
    await shot(page, '02-panel-live-diff-card');

    await check('"Copy Native text" puts the card text on the clipboard', async () => {
      await frame.locator(`article[data-call-id="${live.edit}"] button[data-action="copy"]`).click();
      let clip = '';
      for (let i = 0; i < 20 && !/has been updated successfully/.test(clip); i++) {
        await page.waitForTimeout(250);
        clip = await page.evaluate(() => navigator.clipboard.readText().catch((e) => `(clipboard error: ${e})`));
      }
      assert(/a\.txt has been updated successfully/.test(clip), `clipboard: ${clip}`);
    });

    await check('"Go to" opens the file of the card', async () => {
      await frame.locator(`article[data-call-id="${live.edit}"] button[data-action="goto"]`).click();
      await page.locator('.tabs-container .tab.active', { hasText: 'a.txt' }).waitFor({ timeout: 10_000 });
      await page.locator('.monaco-editor .view-lines', { hasText: 'there' }).first().waitFor({ timeout: 10_000 });
    });

    await check('"Open diff" (keyboard: focus + Enter) opens the native diff editor over the card hunks', async () => {
      const button = frame.locator(`article[data-call-id="${live.edit}"] button[data-action="openDiff"]`);
      await button.focus();
      await page.keyboard.press('Enter');
      await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 15_000 });
      await page.locator('.tabs-container .tab.active', { hasText: 'a.txt (edit: Edit a.txt · completed)' }).waitFor({ timeout: 10_000 });
      await page.waitForFunction(() => {
        const text = (sel) => document.querySelector(`.monaco-diff-editor .editor.${sel} .view-lines`)?.textContent ?? '';
        return /world/.test(text('original')) && /there/.test(text('modified'));
      }, null, { timeout: 10_000 });
      const original = await page.locator('.monaco-diff-editor .editor.original .view-lines').first().textContent();
      const modified = await page.locator('.monaco-diff-editor .editor.modified .view-lines').first().textContent();
      assert(/world/.test(original) && !/there/.test(original), `original: ${original}`);
      assert(/there/.test(modified) && !/world/.test(modified), `modified: ${modified}`);
    });
    await check('the diff documents are read-only: typing into them changes nothing', async () => {
      await page.locator('.monaco-diff-editor .editor.modified .view-lines').first().click();
      await page.keyboard.type('zzz');
      await page.waitForTimeout(300);
      const modified = await page.locator('.monaco-diff-editor .editor.modified .view-lines').first().textContent();
      assert(!/zzz/.test(modified), `modified: ${modified}`);
    });
    await shot(page, '03-open-diff');

    await check('"toolhost: Replay Session" loads the session from the log: the same cards in the panel', async () => {
      await palette(page, 'toolhost: Replay Session');
      const sessionId = data.sessionId;
      assert(sessionId, 'session id from the mocha suite');
      await pick(page, sessionId);
      await frame.locator('.replay-banner', { hasText: sessionId }).waitFor({ timeout: 15_000 });
      const ids = await frame.locator('article[data-call-id]').evaluateAll((els) => els.map((e) => e.dataset.callId));
      assertEqual(ids, [live.edit, live.read], 'replayed cards');
      assertEqual(await cardLines(frame, live.edit), live.editLines, 'replayed edit card');
      assertEqual(await cardLines(frame, live.read), live.readLines, 'replayed read card');
    });
    await shot(page, '04-replayed-session');

    await check('"Open diff" on a replayed card opens the diff editor', async () => {
      await page.keyboard.press('Escape');
      await palette(page, 'View: Close All Editors');
      await frame.locator(`article[data-call-id="${live.edit}"] button[data-action="openDiff"]`).click();
      await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 15_000 });
    });
    await shot(page, '05-replayed-open-diff');

    await check('the companion UI suite ran (toolhost tests: Verify UI)', async () => {
      await palette(page, 'toolhost tests: Verify UI');
      const ui = await waitForFile(uiResult, 'the UI mocha suite', 120_000);
      reportMocha('mocha-ui', ui);
    });

    await check('"toolhost: Show Sessions" lists the sessions of this workspace', async () => {
      await palette(page, 'toolhost: Show Sessions');
      await page.locator('.quick-input-widget .monaco-list-row', { hasText: data.sessionId }).first().waitFor({ timeout: 10_000 });
      await page.keyboard.press('Escape');
    });

    await check('"toolhost: Show Server Log" shows the output channel with the server log', async () => {
      await palette(page, 'toolhost: Show Server Log');
      await page.waitForFunction(
        (id) => Array.from(document.querySelectorAll('.monaco-editor .view-lines')).some((el) => (el.textContent ?? '').replace(/\u00a0/g, ' ').includes(`[toolhost] running, session ${id}`)),
        data.sessionId,
        { timeout: 10_000 },
      );
    });
    await shot(page, '06-server-log');

    await check('"Back to live cards" returns to the live feed', async () => {
      await frame.locator('.replay-banner button[data-action="live"]').click();
      await frame.waitForFunction(() => !document.querySelector('.replay-banner'), null, { timeout: 5000 });
    });
    await shot(page, '07-final');

    const agentEdit = await agentThroughMcp(page, frame, data);
    await terminalCards(page, frame);
    await revertCards(page, frame, agentEdit);
    await checkpointRestore(page, frame, { ...helpers, pick, callFromPalette });
    await reviewMode(page, frame);
    await questionsAndTodos(page, frame);
    await mcpBridge(page, frame);
    await agentChat(page, frame);
    await externalAgentChat(page, frame, helpers);
    // (last but the restart: it makes the workspace a git repository)
    await worktreeSessions(page, frame, { ...helpers, pick, serveProcesses });
    await restartCleanly(page);
  } catch (err) {
    tally.failed += 1;
    tally.failures.push({ name: 'driver', err: err?.stack ?? String(err) });
    log(`  ✖ driver aborted: ${err?.stack ?? err}`);
    try {
      await shot(page, 'zz-failure');
    } catch {
      // no page
    }
  } finally {
    await browser.close();
    // Here, not after the block: a TOOLHOST_E2E_ONLY run returns early, and must be counted too.
    log(`ui: ${tally.passed} passed, ${tally.failed} failed`);
    const passed = tally.passed + mochaTally.passed;
    const failed = tally.failed + mochaTally.failed;
    log(`e2e: ${passed} passed, ${failed} failed${mochaTally.pending ? `, ${mochaTally.pending} skipped` : ''}`);
    process.exit(failed === 0 && mochaTally.passed > 0 ? 0 : 1);
  }
}

main().catch((err) => {
  log(`driver crashed: ${err?.stack ?? err}`);
  log('e2e: 0 passed, 1 failed');
  process.exit(1);
});
