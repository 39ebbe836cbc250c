// The e2e of checkpoints (src/checkpoints.ts over the server's internal `checkpoint` tool): a file
// of the workspace is changed through the tools (read and edit from Call Tool…), a checkpoint is
// made with "toolhost: Create Checkpoint" (its name typed into the input box), the file is edited
// again, and "toolhost: Restore Checkpoint…" — the checkpoint picked, the modal confirmed — puts
// back exactly the bytes of the checkpoint; the Revert button on the restore's own diff card then
// brings back the bytes of the second edit.
// The driver (driver.mjs) hands in its helpers: check, shot, palette, pick, callFromPalette,
// assert, assertEqual, cardLines, log.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The file the checks change (written fresh by them). */
const FILE = 'checkpoint.txt';
const NAME = 'before-second-edit';
const START = 'first line\nsecond line\n';
const ONCE = 'first line, edited once\nsecond line\n';
const TWICE = 'first line, edited twice\nsecond line\n';

/** Waits until `file` holds `bytes` (a tool's write lands before its card, but the card is what
 * the page shows first). */
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

/** The completed card titled `title` that came last (newest first in the panel). */
function completedCard(frame, kind, title) {
  return frame.locator(`article[data-kind="${kind}"][data-status="completed"]`, { has: frame.locator('.card-title', { hasText: title }) }).first();
}

export async function checkpointRestore(page, frame, t) {
  const { check, shot, palette, pick, callFromPalette, assert, assertEqual, cardLines, log } = t;
  const file = path.join(process.env.TOOLHOST_TEST_WS ?? '', FILE);
  fs.writeFileSync(file, START);
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  // The panel is on show already (the driver found its frame): revealing it again moves the
  // focus into its webview a moment later, which closed the next command palette mid-fill.
  await frame.locator('#cards').waitFor({ timeout: 10_000 });

  await check(`${FILE} changed through the tools (read and edit from Call Tool…): the edit's card, the bytes on disk`, async () => {
    await callFromPalette(page, 'read', { file_path: FILE });
    await frame.locator('article[data-kind="read"][data-status="completed"]', { has: frame.locator('.card-title', { hasText: FILE }) }).first().waitFor({ timeout: 20_000 });
    await callFromPalette(page, 'edit', { file_path: FILE, old_string: 'first line\n', new_string: 'first line, edited once\n' });
    await waitForBytes(file, ONCE, 'the first edit');
    await completedCard(frame, 'diff', `Edit ${FILE}`).waitFor({ timeout: 20_000 });
  });

  const created = {};
  await check('"toolhost: Create Checkpoint" offers checkpoint-<n> in its input box; the name typed there makes a completed "Checkpoint <name>" card; the panel\'s title bar has its button', async () => {
    await palette(page, 'toolhost: Create Checkpoint');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await page.waitForFunction(() => /^checkpoint-\d+$/.test(document.querySelector('.quick-input-widget .quick-input-box input')?.value ?? ''), null, { timeout: 10_000 });
    log(`    (name offered: ${await input.inputValue()})`);
    await input.fill(NAME);
    await page.keyboard.press('Enter');
    const card = completedCard(frame, 'generic', `Checkpoint ${NAME}`);
    await card.waitFor({ timeout: 20_000 });
    created.callId = await card.getAttribute('data-call-id');
    assertEqual(fs.readFileSync(file, 'utf8'), ONCE, 'a checkpoint changes no file');
    const button = page.locator('.pane-header .actions .action-label[aria-label*="Create Checkpoint"]');
    assert((await button.count()) > 0, 'the Create Checkpoint button in the Cards view\'s title bar');
  });

  await check(`${FILE} edited again after the checkpoint`, async () => {
    await callFromPalette(page, 'edit', { file_path: FILE, old_string: 'edited once', new_string: 'edited twice' });
    await waitForBytes(file, TWICE, 'the second edit');
  });

  const restore = {};
  await check('"toolhost: Restore Checkpoint…": the checkpoint picked (1 call changed files since), the modal confirmed; the file holds exactly its bytes at the checkpoint, and a completed "Restore checkpoint" diff card comes', async () => {
    assert(created.callId, 'the checkpoint');
    await palette(page, 'toolhost: Restore Checkpoint…');
    // the picker's rows, once the list came and they replaced the palette's
    await page.waitForFunction(
      (name) =>
        document.querySelector('.quick-input-widget .quick-input-title')?.textContent?.includes('Restore Checkpoint') &&
        Array.from(document.querySelectorAll('.quick-input-widget .monaco-list-row')).some((r) => r.textContent?.includes(name)),
      NAME,
      { timeout: 20_000 },
    );
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: NAME }).first();
    const text = (await row.textContent()) ?? '';
    assert(text.includes('1 call changed files since'), `the checkpoint's row: ${text}`);
    await pick(page, NAME);
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    const question = (await dialog.textContent()) ?? '';
    assert(question.includes(`Restore checkpoint ${NAME}?`) && question.includes('Every change after it is undone (you can revert the restore).'), `the modal: ${question}`);
    await dialog.locator('.monaco-button', { hasText: 'Restore' }).click();
    const card = completedCard(frame, 'diff', `Restore checkpoint ${NAME}`);
    await card.waitFor({ timeout: 20_000 });
    restore.callId = await card.getAttribute('data-call-id');
    await waitForBytes(file, ONCE, 'after the restore');
    const lines = (await cardLines(frame, restore.callId)) ?? [];
    assert(lines.includes('-first line, edited twice') && lines.includes('+first line, edited once'), `the restore's hunks undo the second edit: ${JSON.stringify(lines)}`);
    const native = (await card.locator('details.native pre').textContent()) ?? '';
    assert(native.includes(`Restored checkpoint ${NAME}`) && native.includes('Revert this call to bring the changes back.'), `the Native text: ${native}`);
    log(`    (restore card ${restore.callId}: ${JSON.stringify(lines)})`);
  });
  await frame.locator(`article[data-call-id="${restore.callId}"]`).scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, 'checkpoint-restore');

  await check('"Revert" on the restore\'s card brings the change made after the checkpoint back: the file holds the second edit\'s bytes, and a completed "Revert <restore>" card comes', async () => {
    assert(restore.callId, 'the restore card');
    await frame.locator(`article[data-call-id="${restore.callId}"] button[data-action="revert"]`).click();
    await completedCard(frame, 'diff', `Revert ${restore.callId}`).waitFor({ timeout: 20_000 });
    await waitForBytes(file, TWICE, 'after reverting the restore');
  });
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
}
