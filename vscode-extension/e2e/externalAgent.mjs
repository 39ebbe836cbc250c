// The e2e of a hosted ACP agent in the chat: the real Claude Code (claude-agent-acp, hosted by the
// extension's `toolhost serve`, configured by scripts/test.sh in the user config) against the
// scripted Anthropic server (e2e/anthropicServer.mjs). The person picks "Claude Code" in the chat
// box and asks for an edit of a 12-line file; the edit arrives as a review (two hunks: line 1 and
// line 12), which is answered with its CodeLens — the first hunk accepted, the second rejected —
// and submitted; the file then holds only the accepted hunk, the chat says Claude Code answered
// and its tool line leads to the step's diff card, whose caller is Claude Code; a second prompt
// continues the same chat with the same agent, the agent choice locked until New chat.
// The driver (driver.mjs) hands in its helpers: check, shot, palette, assert, assertEqual,
// cardLines, chatExchanges, log.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TWELVE, TWELVE_EDITED } from './anthropicServer.mjs';

/** The file Claude Code edits (scripts/test.sh gives the Anthropic server its path). */
export const EDITED_FILE = 'claude.txt';

/** The agent select of the chat box: locked or not, its value and its options. */
async function agentSelect(frame) {
  return frame.evaluate(() => {
    const select = document.getElementById('chat-agent');
    return {
      disabled: select?.disabled ?? null,
      value: select?.value ?? null,
      options: Array.from(select?.options ?? []).map((o) => ({ value: o.value, text: o.textContent, disabled: o.disabled })),
    };
  });
}

/** The review's CodeLens lines on show in the diff editor. */
async function reviewLenses(page) {
  const texts = await page.locator('.monaco-diff-editor .editor.modified .codelens-decoration').allTextContents();
  return texts.map((t) => t.replace(/\u00a0/g, ' ').trim());
}

export async function externalAgentChat(page, frame, t) {
  const { check, shot, palette, assert, assertEqual, cardLines, chatExchanges, log } = t;
  if (process.env.TOOLHOST_E2E_EXTERNAL_AGENT !== '1') {
    log('  - ui: the chat with Claude Code (TOOLHOST_E2E_EXTERNAL_AGENT is not 1: no hosted agent configured) (skipped)');
    return;
  }
  const ws = process.env.TOOLHOST_TEST_WS ?? '';
  const file = path.join(ws, EDITED_FILE);
  const anthropic = process.env.TOOLHOST_E2E_ANTHROPIC_URL;
  const sentToModel = async () => (await (await fetch(`${anthropic}/requests`)).json());
  fs.writeFileSync(file, TWELVE);
  await palette(page, 'View: Close All Editors').catch(() => undefined);
  await palette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await palette(page, 'toolhost: Show Panel');
  if ((await frame.locator('#chat-log .chat-x').count()) > 0) {
    await frame.locator('#chat-new').click();
  }

  await check('the chat box offers toolhost\'s agent (picked) and the agents of toolhost/listAgents by title; an uninstalled one is disabled, saying what to install', async () => {
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('#chat-agent option')).some((o) => o.value === 'claude'), null, { timeout: 30_000 });
    const select = await agentSelect(frame);
    assertEqual(select.disabled, false, 'the select is free in a new chat');
    assertEqual(select.value, 'toolhost', 'the own agent is the default');
    assertEqual(select.options[0], { value: 'toolhost', text: 'toolhost agent', disabled: false }, 'the own agent first');
    assertEqual(select.options.find((o) => o.value === 'claude'), { value: 'claude', text: 'Claude Code', disabled: false }, 'Claude Code');
    for (const o of select.options.filter((o) => o.disabled)) {
      assert(/\(not installed — (npm install -g \S+|.* not found)\)$/.test(o.text ?? ''), `an uninstalled agent says what to install: ${o.text}`);
    }
    log(`    (agents offered: ${select.options.map((o) => `${o.value}${o.disabled ? ' [disabled]' : ''}`).join(', ')})`);
  });

  const step = {};
  await check('"Claude Code" picked, a task sent: Claude Code\'s edit arrives as a review of two hunks (line 1 and line 12) in the diff editor', async () => {
    await frame.selectOption('#chat-agent', 'claude');
    await frame.focus('#chat-input');
    await page.keyboard.type(`Uppercase the first and the last line of ${EDITED_FILE}.`);
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => document.querySelector('#chat-agent')?.disabled === true, null, { timeout: 10_000 });
    // Claude Code starts (a second or two), reads the file, then edits it: the review opens.
    await page.locator('.tabs-container .tab.active', { hasText: `${EDITED_FILE} (review:` }).waitFor({ timeout: 120_000 });
    await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 10_000 });
    await page.waitForFunction(() => document.querySelectorAll('.monaco-diff-editor .editor.modified .codelens-decoration').length === 2, null, { timeout: 15_000 });
    assertEqual(await reviewLenses(page), ['hunk 1/2: undecided | Accept (Alt+A) | Reject (Alt+R)', 'hunk 2/2: undecided | Accept (Alt+A) | Reject (Alt+R)'], 'the CodeLens');
    const summary = (await frame.locator('#reviews article.review').first().textContent()) ?? '';
    assert(/0 accepted · 0 rejected · 2 undecided/.test(summary), `the panel's summary: ${summary}`);
    assertEqual(fs.readFileSync(file, 'utf8'), TWELVE, 'nothing lands before the review');
  });
  await shot(page, 'review-external-agent');

  await check('the review answered with its CodeLens (hunk 1 accepted, hunk 2 rejected) and submitted: the file holds only the accepted hunk', async () => {
    const lenses = page.locator('.monaco-diff-editor .editor.modified .codelens-decoration');
    await lenses.nth(0).locator('a', { hasText: 'Accept' }).click();
    await page.waitForFunction(() => /hunk 1\/2:\saccepted/.test(document.querySelector('.monaco-diff-editor .editor.modified .codelens-decoration')?.textContent ?? ''), null, { timeout: 10_000 });
    await lenses.nth(1).locator('a', { hasText: 'Reject' }).click();
    const box = page.locator('.quick-input-widget', { hasText: 'submit the review of' });
    await box.waitFor({ state: 'visible', timeout: 10_000 });
    const prompt = (await box.textContent()) ?? '';
    assert(prompt.includes('1 accepted, 1 rejected (hunk 2)'), `the prompt: ${prompt}`);
    await page.keyboard.type('keep the last line as it is');
    await page.keyboard.press('Enter');
    await frame.locator('#chat-log .chat-x[data-state="done"]').first().waitFor({ timeout: 120_000 });
    const accepted = TWELVE.replace(/^one\n/, 'ONE\n');
    assert(accepted !== TWELVE && accepted !== TWELVE_EDITED, 'one hunk of two');
    assertEqual(fs.readFileSync(file, 'utf8'), accepted, `${EDITED_FILE} on disk`);
    await page.locator('.tabs-container .tab', { hasText: '(review:' }).waitFor({ state: 'detached', timeout: 10_000 });
  });

  await check('the chat says Claude Code answers; its tool line leads to the step\'s diff card, caller Claude Code, with only the accepted hunk', async () => {
    const [x] = await chatExchanges(frame);
    assert(x, 'an exchange');
    assertEqual([x.state, x.stop, x.text], ['done', 'answered', 'Done.'], 'the exchange');
    assertEqual(x.mode, null, 'no permission mode: Claude Code asks through its own');
    const header = await frame.evaluate(() => ({
      head: document.querySelector('#chat-log .chat-x .chat-head')?.textContent ?? null,
      who: document.querySelector('#chat-log .chat-x .chat-agent .chat-who')?.textContent ?? null,
    }));
    assertEqual(header, { head: 'Chat with Claude Code', who: 'Claude Code' }, 'who answers');
    const context = (await frame.locator('#chat-log .chat-x .chat-context').first().textContent()) ?? '';
    assert(/^[\d,]+ \/ [\d,]+ tokens( · \$\d+\.\d{4})?$/.test(context), `the context line: ${context}`);
    // a step may end after the turn was answered: its line completes all the same
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('#chat-log .chat-x:first-child .chat-tool')).every((l) => l.getAttribute('data-status') === 'completed'), null, { timeout: 10_000 });
    // Claude Code's steps: the read, then the edit whose card is a diff.
    for (const tool of x.tools) {
      const lines = (await cardLines(frame, tool.callId)) ?? [];
      if (/^agent_step .* · Claude Code$/.test(lines[0] ?? '') && lines.some((l) => l.startsWith('+ONE'))) {
        step.callId = tool.callId;
        step.lines = lines;
      }
    }
    assert(step.callId, `a tool line leads to the edit's diff card: ${JSON.stringify(x.tools)}`);
    log(`    (the step's card ${step.callId}: ${JSON.stringify(step.lines)})`);
    const card = frame.locator(`article[data-call-id="${step.callId}"]`);
    assertEqual(await card.getAttribute('data-kind'), 'diff', 'a diff card');
    assertEqual(await card.getAttribute('data-caller'), 'Claude Code', 'its caller');
    assert(!step.lines.some((l) => l.includes('TWELVE')), `only the accepted hunk: ${JSON.stringify(step.lines)}`);
    // the tool line scrolls the card into view
    await frame.locator(`#chat-log button[data-card="${step.callId}"]`).click();
    await frame.waitForFunction((id) => document.activeElement?.getAttribute('data-call-id') === id, step.callId, { timeout: 5000 });
  });
  // The chat and the card side by side in the Cards view: the MCP Servers view folded meanwhile.
  const mcpView = page.locator('.pane-header', { hasText: 'MCP Servers' }).first();
  const folded = (await mcpView.getAttribute('aria-expanded')) === 'true' && (await mcpView.click().then(() => true, () => false));
  await frame.locator('#chat').scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, 'chat-external-agent');
  if (folded) {
    await mcpView.click().catch(() => undefined);
  }

  await check('a second prompt continues the chat with Claude Code (the agent choice stays locked); New chat frees it', async () => {
    const before = (await sentToModel()).length;
    await frame.focus('#chat-input');
    await page.keyboard.type('Thanks, anything else?');
    await page.keyboard.press('Enter');
    await frame.locator('#chat-log .chat-x:nth-child(2)[data-state="done"]').waitFor({ timeout: 120_000 });
    const xs = await chatExchanges(frame);
    assertEqual(xs.map((x) => x.stop), ['answered', 'answered']);
    const who = await frame.evaluate(() => Array.from(document.querySelectorAll('#chat-log .chat-x .chat-agent .chat-who')).map((w) => w.textContent));
    assertEqual(who, ['Claude Code', 'Claude Code'], 'both answered by Claude Code');
    const sent = await sentToModel();
    assert(sent.length > before, 'Claude Code asked the model again');
    const conversation = JSON.stringify(sent[sent.length - 1].messages);
    assert(conversation.includes(`Uppercase the first and the last line of ${EDITED_FILE}.`) && conversation.includes('anything else?'), 'the same conversation went on');
    assertEqual((await agentSelect(frame)).disabled, true, 'locked while the chat goes on');
    await frame.locator('#chat-new').click();
    await frame.waitForFunction(() => document.querySelector('#chat-agent')?.disabled === false, null, { timeout: 5000 });
    assertEqual((await agentSelect(frame)).value, 'claude', 'the last pick stays for the next chat');
  });
}
