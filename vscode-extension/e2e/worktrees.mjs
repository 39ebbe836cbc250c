// The e2e of worktree sessions (src/worktreeSessions.ts, the panel's session picker): the
// workspace made a git repository, "toolhost: New Worktree Session" from the palette (its name typed
// into the input box) lists and shows the new session in the picker with a message naming its
// session id and CLI lines; chosen again in the picker, the worktree session's cards follow its log
// live — a read and an edit of a.txt made from here with `toolhost call … --session <id>` (as an
// agent working there would) show up as its cards; Apply beside the picker brings the edit into the
// workspace through the usual review (Accept all in the panel, Enter in the comment box), and
// "toolhost: Discard Worktree Session…" (picked, the modal confirmed) removes its worktree folder.
// The driver (driver.mjs) hands in its helpers: check, shot, palette, pick, assert, cardLines,
// serveProcesses, log.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const NAME = 'e2e-wt';
const FILE = 'a.txt';
/** The line the worktree session's edit changes (in a.txt from the start, whatever earlier parts
 * of a full run did to its other lines). */
const LINE = 'the end';
const EDITED = `the end, from worktree session ${NAME}`;

/** Makes the workspace a git repository with a commit (a worktree session forks from it). */
function gitWorkspace(ws) {
  if (fs.existsSync(path.join(ws, '.git'))) {
    return;
  }
  const git = (...args) => execFileSync('git', ['-c', 'user.email=e2e@toolhost.test', '-c', 'user.name=e2e', ...args], { cwd: ws, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-qm', 'the e2e workspace');
}

/** `toolhost call <tool> <args> --session <id>` in the workspace, with the environment and the
 * session folder the extension's server got: a call in that worktree session's log. */
function callInSession(server, bin, ws, sessionId, tool, args) {
  const env = { ...process.env };
  for (const key of ['XDG_STATE_HOME', 'XDG_CONFIG_HOME', 'HOME']) {
    if (server.env[key] === undefined) {
      delete env[key];
    } else {
      env[key] = server.env[key];
    }
  }
  const at = server.argv.indexOf('--session-dir');
  const sessionDir = at >= 0 ? ['--session-dir', server.argv[at + 1]] : [];
  return execFileSync(bin, ['call', tool, JSON.stringify(args), '--session', sessionId, ...sessionDir], { cwd: ws, env, encoding: 'utf8', stdio: 'pipe' });
}

/** Waits until `file` holds `bytes`. */
async function waitForBytes(file, bytes, what) {
  const until = Date.now() + 20_000;
  let now = '';
  while (Date.now() < until) {
    now = fs.readFileSync(file, 'utf8');
    if (now === bytes) {
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: ${FILE} holds ${JSON.stringify(now)}, not ${JSON.stringify(bytes)}`);
}

/** The picker's options as the page shows them. */
function pickerOptions(frame) {
  return frame.evaluate(() =>
    Array.from(document.querySelectorAll('#session-select option')).map((o) => ({ value: o.value, label: o.textContent ?? '', title: o.title, selected: o.selected })),
  );
}

export async function worktreeSessions(page, frame, t) {
  const { check, shot, palette, pick, assert, cardLines, serveProcesses, log } = t;
  const bin = process.env.TOOLHOST_TEST_BIN ?? '';
  const ws = process.env.TOOLHOST_TEST_WS ?? '';
  const file = path.join(ws, FILE);
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await frame.locator('#cards').waitFor({ timeout: 10_000 });

  const session = {};
  await check('the workspace is a git repository; the Cards view has the session picker on "This workspace"', async () => {
    gitWorkspace(ws);
    const text = fs.readFileSync(file, 'utf8');
    assert(text.split('\n').filter((l) => l === LINE).length === 1, `${FILE} has the line "${LINE}" once: ${JSON.stringify(text)}`);
    const found = serveProcesses(bin, ws);
    assert(found.length === 1, `one toolhost serve in ${ws}, found ${found.length}`);
    session.server = found[0];
    const options = await pickerOptions(frame);
    assert(options[0]?.label === 'This workspace' && options[0].selected, `the picker: ${JSON.stringify(options)}`);
  });

  await check(`"toolhost: New Worktree Session": the name typed into its input box makes the session; the picker lists it ("${NAME} · toolhost/${NAME} · idle · N files") and shows its cards; a message names its session id and the CLI lines`, async () => {
    await palette(page, 'toolhost: New Worktree Session');
    await page.waitForFunction(() => /New Worktree Session/.test(document.querySelector('.quick-input-widget .quick-input-title')?.textContent ?? ''), null, { timeout: 10_000 });
    await page.locator('.quick-input-widget .quick-input-box input').fill(NAME);
    await page.keyboard.press('Enter');
    await frame.waitForFunction(
      (name) => Array.from(document.querySelectorAll('#session-select option')).some((o) => o.selected && (o.textContent ?? '').startsWith(`${name} · `)),
      NAME,
      { timeout: 30_000 },
    );
    const option = (await pickerOptions(frame)).find((o) => o.label.startsWith(`${NAME} · `));
    assert(option && new RegExp(`^${NAME} · toolhost/${NAME} · idle · \\d+ files?`).test(option.label), `the picker's row: ${JSON.stringify(option)}`);
    session.id = option.value;
    session.root = option.title;
    assert(session.id && fs.existsSync(session.root), `its session id and worktree folder: ${JSON.stringify(option)}`);
    await frame.locator('.worktree-banner', { hasText: NAME }).waitFor({ timeout: 10_000 });
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: `worktree session ${NAME} (session ${session.id})` }).first();
    await toast.waitFor({ timeout: 10_000 });
    const text = ((await toast.textContent()) ?? '').replace(/\u00a0/g, ' ');
    assert(text.includes(`toolhost agent --session ${session.id} "…"`) && text.includes(`toolhost mcp --session ${session.id}`), `the message: ${text}`);
    log(`    (worktree session ${NAME}: session ${session.id} in ${session.root})`);
  });

  await check('the picker: "This workspace" brings the live cards back; choosing the worktree session again shows its cards, and an edit made in it then (toolhost call … --session) shows up live as its card', async () => {
    assert(session.id && session.server, 'the worktree session');
    await frame.selectOption('#session-select', '');
    await frame.locator('.worktree-banner').waitFor({ state: 'detached', timeout: 10_000 });
    assert(await frame.locator('#sessions button[data-op="apply"]').isHidden(), 'no Apply beside "This workspace"');
    await frame.selectOption('#session-select', session.id);
    await frame.locator('.worktree-banner', { hasText: `${NAME}` }).waitFor({ timeout: 10_000 });
    await frame.locator('#sessions button[data-op="apply"]').waitFor({ state: 'visible', timeout: 5000 });
    callInSession(session.server, bin, ws, session.id, 'read', { file_path: FILE });
    callInSession(session.server, bin, ws, session.id, 'edit', { file_path: FILE, old_string: LINE, new_string: EDITED });
    const card = frame.locator('article[data-kind="diff"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: `Edit ${FILE}` }) }).first();
    await card.waitFor({ timeout: 20_000 });
    const lines = (await cardLines(frame, await card.getAttribute('data-call-id'))) ?? [];
    assert(lines.includes(`-${LINE}`) && lines.includes(`+${EDITED}`), `the edit card: ${JSON.stringify(lines)}`);
    await frame.locator('article[data-kind="read"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: FILE }) }).first().waitFor({ timeout: 10_000 });
    await frame.locator('.worktree-banner', { hasText: '2 cards' }).waitFor({ timeout: 10_000 });
    assert(!fs.readFileSync(file, 'utf8').includes(EDITED), 'the workspace is untouched by the worktree session');
  });
  await frame.locator('#sessions').scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, '23-worktree-session');

  await check(`Apply beside the picker: the review of ${FILE} opens ("Apply changes from worktree session ${NAME}"), Accept all in the panel and Enter in the comment box; ${FILE} in the workspace then has the edit, the apply's card is in the live cards`, async () => {
    assert(session.id, 'the worktree session');
    const before = fs.readFileSync(file, 'utf8');
    await frame.locator('#sessions button[data-op="apply"]').click();
    await page.locator('.tabs-container .tab.active', { hasText: `review: Apply changes from worktree session ${NAME}` }).waitFor({ timeout: 20_000 });
    const summary = frame.locator('#reviews article.review', { hasText: `Apply changes from worktree session ${NAME}` });
    await summary.waitFor({ timeout: 10_000 });
    await summary.locator('button[data-op="acceptAll"]').click();
    await page.locator('.quick-input-widget', { hasText: `submit the review of Apply changes from worktree session ${NAME}` }).waitFor({ state: 'visible', timeout: 10_000 });
    await page.keyboard.press('Enter');
    await waitForBytes(file, before.replace(`${LINE}\n`, `${EDITED}\n`), 'after the apply');
    await frame.locator('article[data-status="completed"]', { has: frame.locator('.card-title', { hasText: `Apply changes from worktree session ${NAME}` }) }).first().waitFor({ timeout: 20_000 });
    const options = await pickerOptions(frame);
    assert(options[0]?.selected, `the picker is back on "This workspace": ${JSON.stringify(options)}`);
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'toolhost: ' }).first().waitFor({ timeout: 10_000 });
  });
  await shot(page, '24-worktree-applied');

  await check('"toolhost: Discard Worktree Session…": the session picked, the modal confirmed; its worktree folder is gone and the picker no longer lists it', async () => {
    assert(session.root, 'the worktree folder');
    await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await palette(page, 'toolhost: Discard Worktree Session…');
    await page.waitForFunction(
      (name) =>
        document.querySelector('.quick-input-widget .quick-input-title')?.textContent?.includes('Discard Worktree Session') &&
        Array.from(document.querySelectorAll('.quick-input-widget .monaco-list-row')).some((r) => r.textContent?.includes(name)),
      NAME,
      { timeout: 20_000 },
    );
    await pick(page, NAME);
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    const question = (await dialog.textContent()) ?? '';
    assert(question.includes(`Discard worktree session ${NAME}?`) && question.includes('Changes not applied are lost.'), `the modal: ${question}`);
    await dialog.locator('.monaco-button', { hasText: 'Discard' }).click();
    const until = Date.now() + 20_000;
    while (fs.existsSync(session.root) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
    }
    assert(!fs.existsSync(session.root), `${session.root} is still there`);
    await frame.waitForFunction((id) => !Array.from(document.querySelectorAll('#session-select option')).some((o) => o.value === id), session.id, { timeout: 10_000 });
  });
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
}
