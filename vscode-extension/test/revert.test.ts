import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardActions, renderCard } from '../src/cardHtml';
import type { Card } from '../src/cards';
import {
  callIdArgument,
  isRevertible,
  REVERT_COMMANDS,
  revertArguments,
  revertCandidates,
  revertFailureMessage,
  revertibleSince,
  revertPickItem,
  sinceConfirmation,
} from '../src/revert';
import {
  bashAbortedCard,
  bashCard,
  bashPendingCard,
  bashSpillCard,
  customKindCard,
  editCard,
  emptySearchCard,
  failedCard,
  failedRevertCard,
  globCard,
  grepCard,
  hostileCard,
  lspCard,
  mcpEditCard,
  mcpPendingEditCard,
  newFileWriteCard,
  pendingEditCard,
  pendingWriteCard,
  readCard,
  revertCard,
  terminalCard,
} from './fixtures';
import { attrValues, textOf } from './helpers';

const REVERT_ACTIONS = ['revert', 'revertSince'];

/** The revert buttons of a rendered card: their action, label and title, and the call id of the
 * `<article>` they sit in (what media/panel.js sends with the click). */
function revertButtons(html: string): { action: string; label: string; title: string; callId: string }[] {
  const callId = attrValues(html, 'data-call-id')[0] ?? '';
  return [...html.matchAll(/<button type="button" class="action" data-action="(revert|revertSince)" title="([^"]*)">(.*?)<\/button>/g)].map((m) => ({
    action: m[1] ?? '',
    title: textOf(m[2] ?? ''),
    label: textOf(m[3] ?? ''),
    callId,
  }));
}

/** Cards that must not offer Revert: nothing to undo, or not a file change. */
const notRevertible: [string, Card][] = [
  ['pending write (preview)', pendingWriteCard],
  ['pending edit (preview)', pendingEditCard],
  ["an agent's pending edit", mcpPendingEditCard],
  ['pending bash', bashPendingCard],
  ['failed edit', failedCard],
  ['failed edit that kept kind diff', { ...editCard, callId: 'call_failed_diff', status: 'failed' }],
  ['failed revert', failedRevertCard],
  ['stopped bash', bashAbortedCard],
  ['read', readCard],
  ['grep', grepCard],
  ['glob', globCard],
  ['lsp', lspCard],
  ['empty search', emptySearchCard],
  ['terminal', bashCard],
  ['terminal with spilled output', bashSpillCard],
  ['terminal without its view', terminalCard],
  ["a tool's own kind", customKindCard],
  // decided by the kind, not by the tool or by a payload the card happens to carry
  ['an edit whose card is generic', { ...editCard, callId: 'call_generic_edit', kind: 'generic' }],
  ['a search card carrying hunks', { ...grepCard, hunks: editCard.hunks ?? null }],
];

describe('Revert on cards', () => {
  it('completed diff cards offer Revert and Revert since here, last, as titled buttons in the card of that call', () => {
    for (const card of [editCard, newFileWriteCard, mcpEditCard, revertCard, hostileCard]) {
      const html = renderCard(card);
      assert.deepEqual(attrValues(html, 'data-action').slice(-2), REVERT_ACTIONS, card.callId);
      const buttons = revertButtons(html);
      assert.deepEqual(
        buttons.map((b) => [b.action, b.label]),
        [
          ['revert', 'Revert'],
          ['revertSince', 'Revert since here'],
        ],
        card.callId,
      );
      for (const b of buttons) {
        assert.equal(b.callId, card.callId, 'the button sits in the article of its call');
        assert.ok(b.title.includes(`revert ${card.callId}`), `the title names the call: ${b.title}`);
      }
      assert.match(buttons[0]?.title ?? '', /^Undo the file changes of this call/);
      assert.match(buttons[1]?.title ?? '', /^Undo every file change of the session from this call on, newest first .*asks first/);
      // native buttons: focusable and pressed with Enter/Space, like the other actions
      assert.doesNotMatch(html, /tabindex="-1"|disabled/);
    }
  });

  it('the revert of a revert: the card of a revert is a diff card like an edit, so it offers Revert too', () => {
    assert.equal(revertCard.tool, 'revert');
    assert.ok(isRevertible(revertCard));
    assert.deepEqual(
      cardActions(revertCard).map((a) => a.action),
      ['openDiff', 'goto', 'copy', 'revert', 'revertSince'],
    );
  });

  it('no Revert on pending, failed, read, search, terminal or other kinds of cards', () => {
    for (const [name, card] of notRevertible) {
      assert.equal(isRevertible(card), false, name);
      const actions = cardActions(card).map((a) => a.action);
      assert.ok(!actions.includes('revert') && !actions.includes('revertSince'), `${name}: ${actions.join(', ')}`);
      assert.doesNotMatch(renderCard(card), /data-action="revert/, name);
    }
  });

  it('the call id in the title is escaped (it is whatever the server sent)', () => {
    const html = renderCard(hostileCard);
    assert.doesNotMatch(html, /title="[^"]*<script>/);
    assert.match(html, /title="Undo the file changes of this call \(revert call_&quot;&gt;&lt;script&gt;\)"/);
  });

  it('the other actions keep their order and markup', () => {
    assert.deepEqual(
      cardActions(editCard).map((a) => a.action),
      ['openDiff', 'goto', 'copy', 'revert', 'revertSince'],
    );
    assert.match(renderCard(editCard), /<button type="button" class="action" data-action="openDiff">Open diff<\/button>/);
    assert.match(
      renderCard(pendingWriteCard),
      /<button type="button" class="action stop" data-action="stop" title="Stop this call \(toolhost\/cancelCall\)">Stop<\/button>/,
    );
  });
});

describe('the revert tool call', () => {
  it('Revert sends exactly {call_id}; Revert since here adds since: true', () => {
    assert.deepEqual(revertArguments('call_11d418f8bd96', false), { call_id: 'call_11d418f8bd96' });
    assert.deepEqual(JSON.parse(JSON.stringify(revertArguments('call_11d418f8bd96', false))), { call_id: 'call_11d418f8bd96' });
    assert.deepEqual(revertArguments('call_11d418f8bd96', true), { call_id: 'call_11d418f8bd96', since: true });
  });

  it('the commands are the toolhost.ui ones package.json contributes', async () => {
    const { readFile } = await import('node:fs/promises');
    const path = await import('node:path');
    let dir = __dirname;
    while (!(await readFile(path.join(dir, 'package.json'), 'utf8').catch(() => '')).includes('"toolhost.ui.callTool"')) {
      dir = path.dirname(dir);
    }
    const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as {
      contributes: { commands: { command: string; title: string; category: string }[] };
    };
    const byId = new Map(pkg.contributes.commands.map((c) => [c.command, c]));
    assert.deepEqual(byId.get(REVERT_COMMANDS.revert), { command: 'toolhost.ui.revertCall', title: 'Revert Call…', category: 'toolhost', icon: '$(discard)' });
    assert.deepEqual(byId.get(REVERT_COMMANDS.since), { command: 'toolhost.ui.revertSince', title: 'Revert Since Call…', category: 'toolhost' });
  });

  it('a command takes the call id as a string or on a card; anything else means: ask', () => {
    assert.equal(callIdArgument('call_1'), 'call_1');
    assert.equal(callIdArgument(editCard), editCard.callId);
    assert.equal(callIdArgument({ callId: 'call_2' }), 'call_2');
    for (const arg of [undefined, null, '', '  ', 42, {}, { callId: 7 }, { callId: '' }, ['call_1']]) {
      assert.equal(callIdArgument(arg), undefined, JSON.stringify(arg));
    }
  });

  it('the palette picker: the completed diff cards, newest first, with id, size, agent and files', () => {
    const live: Card[] = [readCard, editCard, failedCard, pendingWriteCard, mcpEditCard, bashCard, revertCard];
    assert.deepEqual(
      revertCandidates(live).map((c) => c.callId),
      [revertCard.callId, mcpEditCard.callId, editCard.callId],
    );
    assert.deepEqual(revertPickItem(mcpEditCard), {
      label: 'Edit mcp.txt',
      description: 'call_24898a4c08b4 · +1 −1 · claude-code',
      detail: 'mcp.txt',
      callId: 'call_24898a4c08b4',
    });
    const several: Card = {
      ...editCard,
      stats: null,
      hunks: ['a', 'b', 'a', 'c', 'd', 'e', 'f', 'g'].map((p) => ({ ...editCard.hunks![0]!, path: `${p}.txt` })),
    };
    assert.deepEqual(revertPickItem(several), {
      label: 'Edit a.txt',
      description: 'call_11d418f8bd96',
      detail: 'a.txt, b.txt, c.txt, d.txt, e.txt and 2 more',
      callId: 'call_11d418f8bd96',
    });
    assert.equal('detail' in revertPickItem({ ...editCard, hunks: null }), false);
  });

  it('Revert since here: the modal names the call and what the panel shows from it on', () => {
    const live: Card[] = [readCard, editCard, failedCard, mcpEditCard, bashCard, { ...newFileWriteCard, hunks: [{ ...newFileWriteCard.hunks![0]!, path: 'b.txt' }] }];
    const since = revertibleSince(live, editCard.callId);
    assert.deepEqual(
      since.map((c) => c.callId),
      [editCard.callId, mcpEditCard.callId, newFileWriteCard.callId],
    );
    const ask = sinceConfirmation(editCard.callId, editCard, since);
    assert.equal(ask.message, 'Revert every file change since "Edit a.txt" (call_11d418f8bd96)?');
    assert.equal(
      ask.detail,
      'Every file change of this session from call_11d418f8bd96 on is undone, newest first: all of them or none.\n' +
        'The panel shows 3 calls from there on, changing a.txt, mcp.txt, b.txt.',
    );
    assert.equal(ask.confirm, 'Revert');
    // the last card: one call
    assert.match(sinceConfirmation(mcpEditCard.callId, mcpEditCard, revertibleSince([editCard, mcpEditCard], mcpEditCard.callId)).detail, /The panel shows 1 call from there on, changing mcp\.txt\.$/);
    // a call the panel does not hold (dropped, or named in a keybinding): only what the server does
    assert.deepEqual(revertibleSince(live, 'call_gone'), []);
    const unknown = sinceConfirmation('call_gone', undefined, []);
    assert.equal(unknown.message, 'Revert every file change since call_gone?');
    assert.equal(unknown.detail, 'Every file change of this session from call_gone on is undone, newest first: all of them or none.');
  });

  it('a failed revert: the error message says which revert, the code and the server message', () => {
    const conflict = {
      error: { message: 'a.txt: lines 2-2 changed since call_11d418f8bd96; nothing was written', info: { name: 'RevertConflict', code: 'REVERT_CONFLICT' } },
    };
    assert.equal(
      revertFailureMessage('call_11d418f8bd96', false, conflict),
      'toolhost: revert of call_11d418f8bd96 failed (REVERT_CONFLICT): a.txt: lines 2-2 changed since call_11d418f8bd96; nothing was written',
    );
    assert.equal(
      revertFailureMessage('call_x', true, { error: { message: 'no such call', info: { name: 'x', code: 'REVERT_UNKNOWN_CALL' } } }),
      'toolhost: revert since call_x failed (REVERT_UNKNOWN_CALL): no such call',
    );
    assert.equal(revertFailureMessage('call_x', false, { error: { message: 'boom', info: null } }), 'toolhost: revert of call_x failed: boom');
    assert.equal(revertFailureMessage('call_x', false, {}), 'toolhost: revert of call_x failed: the server gave no reason');
  });
});
