// Nested calls (a `run_code` program's calls, `parentCallId`): the tree the store's flat cards
// make, the messages the panel posts, and the page itself — media/panel.js run in jsdom, fed by a
// real CardStore through the same messages the extension posts — live (children before the
// program's final card), with an unknown parent, in a replay, and the child cards' buttons.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { makeNonce, PANEL_STYLESHEETS, renderCard, renderPage } from '../src/cardHtml';
import { resetMessage, storeMessage, upsertMessage } from '../src/cardMessages';
import { CardStore } from '../src/cardStore';
import { cardTree, childrenLabel } from '../src/cardTree';
import { asCard, type Card } from '../src/cards';
import type { CallToolResult } from '../src/protocol';
import { revertArguments } from '../src/revert';
import { bashPendingCard, editCard, grepCard, pendingEditCard, readCard } from './fixtures';

const PARENT = 'call_prog';

const program: Card = {
  callId: PARENT,
  tool: 'run_code',
  status: 'pending',
  kind: 'generic',
  title: 'Fix the TODOs',
  text: '',
  rendered: 'run_code Fix the TODOs · pending',
  locations: [],
};
const programDone: Card = { ...program, status: 'completed', text: 'done', rendered: 'run_code Fix the TODOs · completed\ndone' };

/** The program's three nested calls: read, grep, edit (ids `<parent>:code:<n>`). */
function child(card: Card, n: number, status: Card['status'] = card.status): Card {
  return { ...card, callId: `${PARENT}:code:${n}`, parentCallId: PARENT, status };
}
const read = child(readCard, 1);
const grep = child(grepCard, 2);
const edit = child(editCard, 3);
const editPending = child(pendingEditCard, 3, 'pending');

/** The panel's page in jsdom, running media/panel.js, and what it posted back. */
function page(store: CardStore) {
  const html = renderPage({
    cspSource: 'vscode-resource:',
    nonce: makeNonce((n) => new Uint8Array(n)),
    scriptUri: 'vscode-resource:/panel.js',
    styleUris: PANEL_STYLESHEETS.map((n) => `vscode-resource:/${n}.css`),
    cardsHtml: resetMessage(store).html,
  });
  const dom = new JSDOM(html, { runScripts: 'outside-only' });
  const window = dom.window as unknown as Window & typeof globalThis & { acquireVsCodeApi?: unknown; eval(src: string): unknown };
  const posted: Record<string, unknown>[] = [];
  window.acquireVsCodeApi = () => ({ postMessage: (m: Record<string, unknown>) => posted.push(m) });
  window.eval(fs.readFileSync(path.join(__dirname, '..', '..', 'media', 'panel.js'), 'utf8'));
  const deliver = (message: unknown) => window.dispatchEvent(new window.MessageEvent('message', { data: message }));
  // what panel.ts does on every change of the store
  store.onChange((event) => deliver(storeMessage(store, event)));
  const doc = window.document;
  const article = (callId: string) =>
    Array.from(doc.querySelectorAll('article[data-call-id]')).find((a) => (a as HTMLElement).dataset.callId === callId) as HTMLElement | undefined;
  return {
    window,
    doc,
    posted,
    article,
    /** The call ids of the top-level cards, top first. */
    top: () => Array.from(doc.querySelectorAll('#cards > article')).map((a) => (a as HTMLElement).dataset.callId),
    /** The call ids in a parent's child list, in order. */
    childrenOf: (callId: string) =>
      Array.from(article(callId)?.querySelectorAll(':scope > details.card-children > .child-list > article') ?? []).map(
        (a) => (a as HTMLElement).dataset.callId,
      ),
    click: (el: Element | null | undefined) => {
      assert.ok(el, 'the element to click exists');
      el.dispatchEvent(new window.MouseEvent('click', { bubbles: true }));
    },
  };
}

describe('nested calls: the tree', () => {
  it('children arriving before their parent card or after it make the same tree, oldest first', () => {
    const orders = [
      [program, read, grep, edit],
      [read, grep, program, edit],
      [read, grep, edit, program],
    ];
    for (const cards of orders) {
      const roots = cardTree(cards);
      assert.deepEqual(roots.map((r) => r.card.callId), [PARENT]);
      assert.deepEqual(roots[0]?.children.map((c) => c.card.callId), [read.callId, grep.callId, edit.callId]);
    }
  });

  it('a child of an unknown parent is drawn at the top; a card naming itself or a cycle is not hidden', () => {
    const orphan = { ...read, parentCallId: 'call_gone' };
    const self = { ...grepCard, parentCallId: grepCard.callId };
    const a = { ...readCard, callId: 'a', parentCallId: 'b' };
    const b = { ...readCard, callId: 'b', parentCallId: 'a' };
    assert.deepEqual(cardTree([orphan, self, a, b]).map((r) => r.card.callId), [orphan.callId, grepCard.callId, 'a', 'b']);
  });

  it('the label counts the calls, the failed and the running ones', () => {
    assert.equal(childrenLabel([read]), '1 call');
    assert.equal(childrenLabel([read, { status: 'failed' }, editPending]), '3 calls · 1 failed · 1 running');
  });

  it('asCard keeps a parentCallId only as a call id', () => {
    assert.equal(asCard({ ...read })?.parentCallId, PARENT);
    assert.equal('parentCallId' in (asCard({ ...read, parentCallId: 7 }) ?? {}), false);
    assert.equal('parentCallId' in (asCard({ ...read, parentCallId: '' }) ?? {}), false);
  });

  it('the store keeps cards flat (find reaches a child) and trims whole programs, not their children', () => {
    const store = new CardStore(2);
    const removed: string[] = [];
    store.onChange((e) => e.type === 'remove' && removed.push(...e.callIds));
    store.upsert(program);
    for (let n = 1; n <= 5; n++) {
      store.upsert(child(readCard, n));
    }
    store.upsert({ ...grepCard, callId: 'g1' });
    assert.equal(store.visible().length, 7);
    assert.equal(store.find(`${PARENT}:code:4`)?.parentCallId, PARENT);
    store.upsert({ ...grepCard, callId: 'g2' });
    assert.deepEqual(store.visible().map((c) => c.callId), ['g1', 'g2']);
    assert.deepEqual(removed.sort(), [PARENT, ...[1, 2, 3, 4, 5].map((n) => `${PARENT}:code:${n}`)].sort());
  });

  it("a child's message names its parent and the parent's new counts; the parent comes with its children", () => {
    const cards = [program, read, { ...grep, status: 'failed' as const }];
    const m = upsertMessage(cards, cards[2]!);
    assert.equal(m.type === 'upsert' && m.parentCallId, PARENT);
    assert.equal(m.type === 'upsert' && m.parentLabel, '2 calls · 1 failed');
    assert.equal(m.type === 'upsert' && m.parentFailed, true);
    const p = upsertMessage(cards, program);
    assert.equal(p.type === 'upsert' && p.parentCallId, undefined);
    assert.match(p.type === 'upsert' ? p.html : '', /data-children-of="call_prog"/);
    assert.equal(upsertMessage([read], read).type === 'upsert' && 'parentCallId' in upsertMessage([read], read), false);
  });
});

describe('nested calls: the panel page (media/panel.js in jsdom)', () => {
  it('live: a program with 3 children (read, grep, edit) arriving before its final card', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert({ ...grepCard, callId: 'before' });
    store.upsert(program);
    store.upsert(child(readCard, 1, 'pending'));
    assert.deepEqual(p.childrenOf(PARENT), [read.callId]);
    assert.equal(p.article(read.callId)?.dataset.status, 'pending', 'a pending child shows pending');
    assert.equal(p.article(read.callId)?.querySelector('.spinner') !== null, true);
    store.upsert(read);
    store.upsert(grep);
    store.upsert(editPending);
    const parent = p.article(PARENT);
    assert.equal(parent?.querySelector('.children-count')?.textContent, '3 calls · 1 running');
    store.upsert({ ...edit, status: 'failed', kind: 'generic', hunks: null, text: 'Error: old_string not found' });
    assert.equal(p.article(edit.callId)?.dataset.status, 'failed', 'a failed child shows failed');
    assert.equal(parent?.querySelector('summary.children-summary')?.textContent, '3 calls · 1 failed');
    assert.ok(parent?.querySelector('.children-count')?.classList.contains('has-failed'));
    store.upsert(edit);
    // the children updated in place: one card each, in the order the program made them
    assert.deepEqual(p.childrenOf(PARENT), [read.callId, grep.callId, edit.callId]);
    assert.deepEqual(p.top(), [PARENT, 'before']);
    assert.equal(p.doc.querySelectorAll('article[data-call-id]').length, 5);
    // a person closes the list; the program's final card keeps it closed, and its children
    p.click(parent?.querySelector('summary.children-summary'));
    store.upsert(programDone);
    const done = p.article(PARENT);
    assert.equal(done?.dataset.status, 'completed');
    assert.equal(done?.querySelector<HTMLDetailsElement>('details.card-children')?.open, false);
    assert.deepEqual(p.childrenOf(PARENT), [read.callId, grep.callId, edit.callId]);
    assert.equal(done?.querySelector(':scope > header .children-count')?.textContent, '3 calls');
    assert.equal(p.doc.querySelectorAll('article[data-call-id]').length, 5);
  });

  it('a child whose parent is unknown is drawn at the top, and moves inside when the parent comes', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert(read);
    assert.deepEqual(p.top(), [read.callId]);
    store.upsert(program);
    assert.deepEqual(p.top(), [PARENT]);
    assert.deepEqual(p.childrenOf(PARENT), [read.callId]);
    store.upsert(grep);
    assert.deepEqual(p.childrenOf(PARENT), [read.callId, grep.callId]);
    assert.equal(p.doc.querySelectorAll('article[data-call-id]').length, 3);
  });

  it('replay: the children in log order after their parent, the parent\'s result last', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert({ ...grepCard, callId: 'live' });
    // the server's replay order, and the same cards with the children first: one tree
    for (const cards of [
      [programDone, read, grep, edit],
      [read, grep, edit, programDone],
    ]) {
      store.showReplay('s1', cards);
      assert.deepEqual(p.top(), [PARENT]);
      assert.deepEqual(p.childrenOf(PARENT), [read.callId, grep.callId, edit.callId]);
      assert.equal(p.article(PARENT)?.querySelector('.children-count')?.textContent, '3 calls');
    }
    store.showLive();
    assert.deepEqual(p.top(), ['live']);
  });

  it("a child card keeps its buttons: Revert sends the child's call id, Open diff, Stop a pending child", () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert(program);
    store.upsert(read);
    store.upsert(edit);
    store.upsert({ ...child(readCard, 4, 'pending'), text: '' });
    const childEdit = p.article(edit.callId);
    const parent = p.article(PARENT);
    // the parent (pending) has only its own Stop; the child edit has Revert and Open diff
    assert.deepEqual(
      Array.from(parent?.querySelectorAll(':scope > .actions button') ?? []).map((b) => (b as HTMLElement).dataset.action),
      ['stop'],
    );
    p.click(childEdit?.querySelector('button[data-action="revert"]'));
    p.click(childEdit?.querySelector('button[data-action="openDiff"]'));
    p.click(p.article(`${PARENT}:code:4`)?.querySelector('button[data-action="stop"]'));
    const actions = p.posted.filter((m) => m.action !== 'ready');
    assert.deepEqual(
      actions.map((m) => [m.action, m.callId]),
      [
        ['revert', edit.callId],
        ['openDiff', edit.callId],
        ['stop', `${PARENT}:code:4`],
      ],
    );
    // what panel.ts does with it: the store's card of that id, reverted by its own id
    const card = store.find(String(actions[0]?.callId));
    assert.equal(card?.callId, edit.callId);
    assert.deepEqual(revertArguments(card?.callId ?? '', false), { call_id: `${PARENT}:code:3` });
    // the same buttons as the top-level card of its kind
    const buttons = (html: string) => [...html.matchAll(/data-action="([a-zA-Z]+)"/g)].map((m) => m[1]);
    assert.deepEqual(buttons(childEdit?.outerHTML ?? ''), buttons(renderCard(editCard)));
  });

  it('a card drawn again keeps what a person opened in it, at the top and as a child (live terminal output)', () => {
    const store = new CardStore();
    const p = page(store);
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const nested = { ...bashPendingCard, callId: `${PARENT}:code:1`, parentCallId: PARENT };
    store.upsert(bashPendingCard);
    store.upsert(program);
    store.upsert(nested);
    for (const callId of [bashPendingCard.callId, nested.callId]) {
      store.appendOutput(callId, lines);
      p.click(p.article(callId)?.querySelector('button[data-local="toggleOutput"]'));
      store.appendOutput(callId, 'more\n');
      assert.ok(p.article(callId)?.querySelector('.term-output')?.classList.contains('expanded'), `${callId} still expanded`);
      assert.match(p.article(callId)?.querySelector('.term-text')?.textContent ?? '', /more$/);
    }
    // the program drawn again (its final card) keeps its child's output expanded
    store.upsert(programDone);
    assert.ok(p.article(nested.callId)?.querySelector('.term-output')?.classList.contains('expanded'));
    assert.deepEqual(p.childrenOf(PARENT), [nested.callId]);
  });
});

const bin = process.env.TOOLHOST_BIN;

describe('nested calls of a real run_code program (TOOLHOST_BIN)', { skip: !bin && 'TOOLHOST_BIN not set' }, () => {
  it('grep, three reads and an edit: child cards in the replayed panel; Revert undoes the edit alone', (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-nested-'));
    try {
      const ws = path.join(dir, 'ws');
      const sessions = path.join(dir, 'sessions');
      fs.mkdirSync(ws, { recursive: true });
      fs.writeFileSync(path.join(ws, 'a.txt'), 'a\nTODO one\n');
      fs.writeFileSync(path.join(ws, 'b.txt'), 'b\nTODO two\n');
      fs.writeFileSync(path.join(ws, 'c.txt'), 'c\n');
      const tools = JSON.parse(execFileSync(bin ?? '', ['tools', '--json', '--workspace', ws], { encoding: 'utf8' })) as { tools: { name: string }[] };
      if (!tools.tools.some((tool) => tool.name === 'run_code')) {
        t.skip('this server has no run_code tool');
        return;
      }
      const where = ['--workspace', ws, '--session-dir', sessions];
      const call = (tool: string, args: unknown): CallToolResult => {
        let out: string;
        try {
          out = execFileSync(bin ?? '', ['call', tool, JSON.stringify(args), '--json', ...where, '--session', 'nested'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
        } catch (err) {
          out = String((err as { stdout?: string }).stdout ?? ''); // the tool failed: its JSON is still there
        }
        return JSON.parse(out) as CallToolResult;
      };
      const code = [
        "await tools.grep({ pattern: 'TODO' });",
        "for (const f of ['a.txt', 'b.txt', 'c.txt']) await tools.read({ file_path: f });",
        "await tools.edit({ file_path: 'b.txt', old_string: 'TODO two', new_string: 'DONE two' });",
        "return 'ok';",
      ].join('\n');
      const run = call('run_code', { code, description: 'fix one TODO' });
      assert.equal(run.result.isError, false, JSON.stringify(run.result));
      assert.equal(fs.readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'b\nDONE two\n');
      const replayed = execFileSync(bin ?? '', ['replay', 'nested', '--json', ...where], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => asCard(JSON.parse(l)))
        .filter((c): c is Card => c !== undefined);
      const children = replayed.filter((c) => c.parentCallId === run.callId);
      assert.deepEqual(children.map((c) => c.tool), ['grep', 'read', 'read', 'read', 'edit']);
      for (const c of children) {
        assert.match(c.callId, new RegExp(`^${run.callId}:code:\\d+$`));
      }
      const edit = children[4]!;
      // the panel: the program with its five calls inside; Revert on the nested edit sends its id
      const store = new CardStore();
      const p = page(store);
      store.showReplay('nested', replayed);
      assert.deepEqual(p.top(), [run.callId]);
      assert.deepEqual(p.childrenOf(run.callId), children.map((c) => c.callId));
      assert.equal(p.article(run.callId)?.querySelector('.children-count')?.textContent, '5 calls');
      p.click(p.article(edit.callId)?.querySelector('button[data-action="revert"]'));
      const sent = p.posted.find((m) => m.action === 'revert');
      assert.equal(sent?.callId, edit.callId);
      const reverted = call('revert', revertArguments(String(sent?.callId), false));
      assert.equal(reverted.result.isError, false, JSON.stringify(reverted.result));
      assert.equal(fs.readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'b\nTODO two\n', 'b.txt as before the program');
      assert.equal(reverted.card.title, `Revert ${edit.callId}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
