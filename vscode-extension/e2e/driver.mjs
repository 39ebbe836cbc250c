// Drives a real VS Code (code-server) in headless Chromium like a person would: the command
// palette, the toolhost panel's webview DOM, clicks and keys; waits for the companion mocha suites
// (results JSON written by the test extension) and prints every check and `N passed, N failed`.
//
//   node e2e/driver.mjs <workbench url>
// env: PLAYWRIGHT_CORE (path of the playwright-core package), CHROMIUM (executable),
//      TOOLHOST_TEST_RESULT, TOOLHOST_TEST_RESULT_UI (mocha result files), SHOTS (screenshot dir)
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

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

/** Picks `label` in an open quick pick by typing it. */
async function pick(page, label) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(label);
  await page.waitForFunction(
    (l) => {
      const row = document.querySelector('.quick-input-widget .monaco-list-row.focused');
      return row && row.textContent && row.textContent.includes(l);
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

/** A card element's lines as a person reads them: `tool title · status`, then hunk headers and
 * `op`+`text` lines (diff cards) or search lines. */
async function cardLines(frame, callId) {
  return frame.evaluate((id) => {
    const card = Array.from(document.querySelectorAll('article[data-call-id]')).find((el) => el.dataset.callId === id);
    if (!card) {
      return null;
    }
    const text = (sel) => card.querySelector(sel)?.textContent ?? '';
    const lines = [`${text('.card-tool')} ${text('.card-title')} · ${text('.card-status')}`];
    for (const el of card.querySelectorAll('.hunk-header, .line, .search-line')) {
      lines.push(el.textContent);
    }
    return lines;
  }, callId);
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
  }
  log(`ui: ${tally.passed} passed, ${tally.failed} failed`);
  const passed = tally.passed + mochaTally.passed;
  const failed = tally.failed + mochaTally.failed;
  log(`e2e: ${passed} passed, ${failed} failed${mochaTally.pending ? `, ${mochaTally.pending} skipped` : ''}`);
  process.exit(failed === 0 && mochaTally.passed > 0 ? 0 : 1);
}

main().catch((err) => {
  log(`driver crashed: ${err?.stack ?? err}`);
  log('e2e: 0 passed, 1 failed');
  process.exit(1);
});
