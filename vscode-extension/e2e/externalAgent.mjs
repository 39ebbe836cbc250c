// The e2e of a hosted ACP agent in the chat: the real Claude Code (claude-agent-acp, hosted by the
// extension's `toolhost serve`, configured by scripts/test.sh in the user config) against the
// scripted Anthropic server (e2e/anthropicServer.mjs). The person picks "Claude Code" in the chat
// box, whose own settings (toolhost/agentOptions: Mode, Model, Effort) appear beside the picker,
// chooses another model there (toolhost/agentSetOption) — every main-loop request of the chat must
// then name that model — and asks for an edit of a 12-line file; the edit arrives as a review (two hunks: line 1 and
// line 12), which is answered with its CodeLens — the first hunk accepted, the second rejected —
// and submitted; the file then holds only the accepted hunk, the chat says Claude Code answered
// and its tool line leads to the step's diff card, whose caller is Claude Code; a second prompt
// continues the same chat with the same agent, the agent choice locked until New chat.
// TOOLHOST_E2E_EXTERNAL_AGENT=0 turns it off (a developer without the adapter); otherwise it must
// be 1 (scripts/test.sh fails before this when the adapter is missing).
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

/** The hosted agent's settings beside the agent select: per setting its id, label, category, value
 * and values (a checkbox: its state). */
async function agentSettings(frame) {
  return frame.evaluate(() =>
    Array.from(document.querySelectorAll('#chat-options .chat-option')).map((label) => {
      const control = label.querySelector('[data-option]');
      const select = control instanceof HTMLSelectElement ? control : null;
      return {
        id: control?.getAttribute('data-option') ?? null,
        label: (label.querySelector('.chat-option-name')?.textContent ?? label.textContent ?? '').trim(),
        category: label.getAttribute('data-category'),
        value: select ? select.value : control instanceof HTMLInputElement ? control.checked : null,
        values: select ? Array.from(select.options).map((o) => o.value) : [],
      };
    }),
  );
}

/** The model to choose: one the chat would not use anyway. Claude Code's "Default (recommended)"
 * is Opus, so choosing "opus" would pass without the choice reaching Claude Code: Sonnet or Haiku
 * first, else any other value. */
function otherModel(model) {
  const others = model.values.filter((v) => v !== model.value);
  return ['sonnet', 'haiku'].find((v) => others.includes(v)) ?? others.find((v) => v !== 'opus') ?? others[0];
}

/** The review's CodeLens lines on show in the diff editor. */
async function reviewLenses(page) {
  const texts = await page.locator('.monaco-diff-editor .editor.modified .codelens-decoration').allTextContents();
  return texts.map((t) => t.replace(/\u00a0/g, ' ').trim());
}

export async function externalAgentChat(page, frame, t) {
  const { check, shot, palette, assert, assertEqual, cardLines, chatExchanges, log } = t;
  if (process.env.TOOLHOST_E2E_EXTERNAL_AGENT === '0') {
    log('  - ui: the chat with Claude Code (turned off explicitly: TOOLHOST_E2E_EXTERNAL_AGENT=0) (skipped)');
    return;
  }
  if (process.env.TOOLHOST_E2E_EXTERNAL_AGENT !== '1') {
    await check('the chat with Claude Code is configured (TOOLHOST_E2E_EXTERNAL_AGENT=1, as scripts/test.sh sets it; =0 turns it off)', async () => {
      throw new Error(`TOOLHOST_E2E_EXTERNAL_AGENT is ${JSON.stringify(process.env.TOOLHOST_E2E_EXTERNAL_AGENT ?? null)}: run the e2e through scripts/test.sh`);
    });
    return;
  }
  const ws = process.env.TOOLHOST_TEST_WS ?? '';
  const file = path.join(ws, EDITED_FILE);
  const anthropic = process.env.TOOLHOST_E2E_ANTHROPIC_URL;
  const sentToModel = async () => (await (await fetch(`${anthropic}/requests`)).json());
  const modelsAsked = async () => (await (await fetch(`${anthropic}/models`)).json());
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

  const chosen = {};
  await check('"Claude Code" picked: its settings (toolhost/agentOptions) beside the picker, a select each — Mode "default", Model, Effort; another model chosen (toolhost/agentSetOption) is what the select shows after its answer', async () => {
    await frame.selectOption('#chat-agent', 'claude');
    // Claude Code starts for them (a second or two).
    await frame.waitForFunction(() => document.querySelectorAll('#chat-options .chat-option [data-option]').length > 0, null, { timeout: 60_000 });
    const settings = await agentSettings(frame);
    log(`    (Claude Code's settings: ${settings.map((o) => `${o.label} [${o.category}] = ${o.value} of ${o.values.join('|')}`).join('; ')})`);
    const of = (category) => settings.find((o) => o.category === category);
    assertEqual([of('mode')?.label, of('mode')?.value], ['Mode', 'default'], 'the mode, as configured');
    assert(of('mode')?.values.includes('plan') && of('mode')?.values.includes('acceptEdits'), `the modes: ${of('mode')?.values}`);
    const model = of('model');
    assertEqual(model?.label, 'Model', 'the model select');
    assertEqual(of('thought_level')?.label, 'Effort', 'the effort select');
    const hidden = await frame.evaluate(() => document.getElementById('chat-options')?.hidden ?? null);
    assertEqual(hidden, false, 'the settings are shown');
    chosen.model = otherModel(model);
    assert(chosen.model, `a model other than ${model.value}: ${model.values}`);
    // The answer draws the settings again: the select in place now is the one before the answer.
    await frame.evaluate((id) => {
      document.querySelector(`#chat-options [data-option="${id}"]`).dataset.beforeAnswer = '1';
    }, model.id);
    await frame.selectOption(`#chat-options select[data-option="${model.id}"]`, chosen.model);
    await frame.waitForFunction(
      ([id, value]) => {
        const select = document.querySelector(`#chat-options select[data-option="${id}"]`);
        return select instanceof HTMLSelectElement && select.dataset.beforeAnswer === undefined && select.value === value;
      },
      [model.id, chosen.model],
      { timeout: 30_000 },
    );
    const error = await frame.evaluate(() => document.querySelector('#chat-options .chat-options-error')?.textContent ?? null);
    assertEqual(error, null, 'no error beside the settings');
    assertEqual((await agentSettings(frame)).find((o) => o.category === 'model')?.value, chosen.model, 'the model chosen, as the server answered');
    log(`    (model chosen: ${chosen.model})`);
  });
  await frame.locator('#chat').scrollIntoViewIfNeeded().catch(() => undefined);
  await shot(page, 'chat-external-agent-options');

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
    // The prompt went to the chat whose model was chosen: Claude Code asked for that model.
    const main = (await modelsAsked()).filter((m) => m.main).map((m) => m.model);
    assert(chosen.model && main.length > 0 && main.every((m) => typeof m === 'string' && m.includes(chosen.model)), `every main-loop request names the chosen model ${chosen.model}: ${JSON.stringify(main)}`);
    log(`    (the main loop's models: ${[...new Set(main)].join(', ')})`);
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

  await check('New chat asks for Claude Code\'s settings again (a new chat, the agent\'s defaults); toolhost\'s own agent hides them', async () => {
    await frame.waitForFunction(
      () => Array.from(document.querySelectorAll('#chat-options .chat-option')).some((l) => l.getAttribute('data-category') === 'model' && l.querySelector('select')?.value === 'default'),
      null,
      { timeout: 60_000 },
    );
    await frame.selectOption('#chat-agent', 'toolhost');
    await frame.waitForFunction(() => document.getElementById('chat-options')?.hidden === true, null, { timeout: 5000 });
    assertEqual(await frame.locator('#chat-options .chat-option').count(), 0, 'no settings for the own agent');
  });
}
