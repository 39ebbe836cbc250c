// Worktree sessions in the editor (src/worktrees.ts, worktreePicker.ts, worktreeSessions.ts): the
// picker's labels, the params each request sends (checked against docs/schemas), the session
// picker in the panel's page (media/panel.js in jsdom), and the model and the three commands
// against a fake server answering like the real one and a fake window whose answers the test
// scripts — a worktree session's cards shown and replayed again on `toolhost/sessionChanged`, back
// to this workspace (the watch ended), New, Apply (conflicts as a warning) and Discard (modal),
// refusals with their code.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import { JSDOM } from 'jsdom';
import { makeNonce, PANEL_STYLESHEETS, renderPage } from '../src/cardHtml';
import { resetMessage } from '../src/cardMessages';
import { CardStore } from '../src/cardStore';
import type { Card } from '../src/cards';
import { isObject } from '../src/guards';
import { sessionPickerHtml, THIS_WORKSPACE, worktreeBanner } from '../src/worktreePicker';
import {
  asWorktreeInfo,
  changedSessionOf,
  errorCode,
  hasConflicts,
  watchSessionParams,
  WORKTREE_METHODS,
  worktreeApplyParams,
  worktreeDiscardParams,
  worktreeLabel,
  worktreeNameProblem,
  worktreeNewParams,
  worktreesOf,
  type WorktreeInfo,
} from '../src/worktrees';
import {
  createdMessage,
  discardConfirmation,
  registerWorktreeCommands,
  WORKTREE_COMMANDS,
  worktreePickItems,
  WorktreeSessions,
  type WorktreePickItem,
  type WorktreeWindow,
} from '../src/worktreeSessions';
import { textOf } from './helpers';

const FIX: WorktreeInfo = {
  name: 'fix-1',
  sessionId: '20261207-101500-aa11bb',
  root: '/state/toolhost/worktrees/ws-1234/fix-1',
  branch: 'toolhost/fix-1',
  state: 'idle',
  changedFiles: 2,
  agent: 'claude-code',
  createdAt: 1_796_000_000_000,
};
const COPY: WorktreeInfo = { name: 'copy-2', sessionId: '20261207-101600-cc22dd', root: '/state/toolhost/worktrees/ws-1234/copy-2', state: 'inUse', changedFiles: 1, createdAt: 1_796_000_100_000 };

/** The repository's docs/schemas (the tests run from vscode-extension/out/test). */
function schema(name: string): Record<string, unknown> {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'docs', 'schemas', 'Card.json'))) {
    assert.notEqual(path.dirname(dir), dir, 'docs/schemas above the tests');
    dir = path.dirname(dir);
  }
  const { $schema: _s, ...rest } = JSON.parse(fs.readFileSync(path.join(dir, 'docs', 'schemas', `${name}.json`), 'utf8')) as Record<string, unknown>;
  void _s;
  return rest;
}
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
function assertValid(name: string, value: unknown): void {
  const validate = ajv.compile(schema(name));
  assert.ok(validate(value), `${name}: ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`);
}

/** A card of a call in a worktree session's log. */
function cardOf(callId: string, title: string, kind = 'diff'): Card {
  return { callId, tool: kind === 'diff' ? 'edit' : 'read', status: 'completed', kind, title, text: '', rendered: `${title} · completed`, locations: [] };
}

/** A JSON-RPC error as vscode-languageclient throws it: a message, a code and `data`. */
class ResponseError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly data: unknown,
  ) {
    super(message);
  }
}

/** Answers like `toolhost serve`: the worktree sessions of the workspace, their logs' cards, and
 * the worktree requests; records every request. */
class FakeServer {
  readonly sent: [string, unknown][] = [];
  worktrees: WorktreeInfo[] = [FIX, COPY];
  /** Each session's cards, by session id. */
  readonly logs = new Map<string, Card[]>([[FIX.sessionId, [cardOf('c1', 'Read a.txt', 'read')]]]);
  /** The apply's answer: `call` absent when undefined. */
  applyText: string | undefined = 'Applied 1 of 1 hunks in 1 file from worktree session fix-1.';
  refuse: { method: string; code: string; message: string } | undefined;

  readonly request = <R>(method: string, params: unknown): Promise<R> => {
    this.sent.push([method, params]);
    if (this.refuse?.method === method) {
      return Promise.reject(new ResponseError(this.refuse.message, -32602, { code: this.refuse.code }));
    }
    const p = params as { name?: string; sessionId?: string };
    const answer = (value: unknown) => Promise.resolve(value as R);
    switch (method) {
      case 'toolhost/listSessions':
        return answer(this.worktrees.length > 0 ? { sessions: [], worktrees: this.worktrees } : { sessions: [] });
      case 'toolhost/replaySession':
        return answer({ cards: this.logs.get(p.sessionId ?? '') ?? [] });
      case WORKTREE_METHODS.watchSession:
        return answer(null);
      case WORKTREE_METHODS.worktreeNew: {
        const name = p.name ?? 'wt-3f9a2c';
        const info: WorktreeInfo = { name, sessionId: `s-${name}`, root: `/wt/${name}`, branch: `toolhost/${name}`, state: 'idle', changedFiles: 0, createdAt: 1 };
        this.worktrees = [info, ...this.worktrees];
        return answer(info);
      }
      case WORKTREE_METHODS.worktreeApply: {
        if (this.applyText === undefined) {
          return answer({});
        }
        const card = { ...cardOf('call_apply', `Apply changes from worktree session ${p.name}`), tool: 'apply_changes' };
        return answer({ call: { sessionId: 'main', callId: 'call_apply', result: { isError: false, value: {}, content: [{ type: 'text', text: this.applyText }] }, card } });
      }
      case WORKTREE_METHODS.worktreeDiscard:
        this.worktrees = this.worktrees.filter((w) => w.name !== p.name);
        return answer(null);
      default:
        return Promise.reject(new Error(`unexpected ${method}`));
    }
  };

  /** The requests of one method, their params. */
  paramsOf(method: string): unknown[] {
    return this.sent.filter(([m]) => m === method).map(([, params]) => params);
  }
}

/** A window whose answers the test sets, recording what it was asked and told. */
class FakeWindow implements WorktreeWindow {
  readonly asked: string[] = [];
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  readonly infos: { message: string; items: string[] }[] = [];
  inputBox: { validate(value: string): string | undefined } | undefined;
  picker: WorktreePickItem[] | undefined;
  modal: { message: string; detail: string; items: string[] } | undefined;
  typed: string | undefined;
  picks: string | undefined;
  presses: string | undefined;
  /** The button clicked on the next information message (undefined: it was closed). */
  clicks: string | undefined;

  showInputBox(options: { validateInput(value: string): string | undefined }): Promise<string | undefined> {
    this.asked.push('input');
    this.inputBox = { validate: (value) => options.validateInput(value) };
    return Promise.resolve(this.typed);
  }
  showQuickPick<T extends WorktreePickItem>(items: T[]): Promise<T | undefined> {
    this.asked.push('pick');
    this.picker = items;
    return Promise.resolve(items.find((i) => i.label === this.picks));
  }
  showWarningMessage(message: string, options?: { modal: true; detail: string }, ...items: string[]): Promise<string | undefined> {
    if (options === undefined) {
      this.warnings.push(message);
      return Promise.resolve(undefined);
    }
    this.asked.push('modal');
    this.modal = { message, detail: options.detail, items };
    return Promise.resolve(this.presses);
  }
  showErrorMessage(message: string): Promise<unknown> {
    this.errors.push(message);
    return Promise.resolve(undefined);
  }
  showInformationMessage(message: string, ...items: string[]): Promise<string | undefined> {
    this.infos.push({ message, items });
    return Promise.resolve(this.clicks);
  }
  setStatusBarMessage(): unknown {
    return undefined;
  }
}

function setup() {
  const server = new FakeServer();
  const window = new FakeWindow();
  const store = new CardStore(100);
  const copied: string[] = [];
  const opened: string[] = [];
  const sessions = new WorktreeSessions({
    request: server.request,
    store,
    window,
    copy: (text) => {
      copied.push(text);
      return Promise.resolve();
    },
    openFolder: (folder) => {
      opened.push(folder);
      return Promise.resolve();
    },
  });
  return { server, window, store, sessions, copied, opened };
}

describe('worktree sessions: labels and the wire', () => {
  it('the picker labels a worktree session <name> · <branch> · <state> · <n> files · <agent>, leaving out what the server did not send', () => {
    const cases: [WorktreeInfo, string][] = [
      [FIX, 'fix-1 · toolhost/fix-1 · idle · 2 files · claude-code'],
      [COPY, 'copy-2 · copy · in use · 1 file'],
      [{ ...FIX, changedFiles: 0, agent: 'toolhost agent', state: 'inUse' }, 'fix-1 · toolhost/fix-1 · in use · 0 files · toolhost agent'],
      [{ name: 'n', sessionId: 's', root: '/r', state: 'idle', createdAt: 0 }, 'n · copy · idle'],
    ];
    for (const [info, label] of cases) {
      assert.equal(worktreeLabel(info), label);
    }
  });

  it('listSessions\' worktrees are read defensively: junk dropped, an unknown state idle, none without the field', () => {
    assertValid('WorktreeInfo', FIX);
    assertValid('ListSessionsResult', { sessions: [], worktrees: [FIX, COPY] });
    assert.deepEqual(worktreesOf({ sessions: [], worktrees: [FIX, null, { name: 'x' }, { ...COPY, state: 'paused', changedFiles: -1, branch: null, agent: '' }] }), [
      FIX,
      { name: 'copy-2', sessionId: COPY.sessionId, root: COPY.root, state: 'idle', createdAt: COPY.createdAt },
    ]);
    assert.deepEqual(worktreesOf({ sessions: [] }), []);
    assert.equal(asWorktreeInfo({ name: 'a', sessionId: '' }), undefined);
  });

  it('the params of every request are what the schemas describe: New with the typed name or none, Apply without `all`, Discard, the watch and its end', () => {
    const cases: [string, unknown, unknown][] = [
      ['WorktreeNewParams', worktreeNewParams('  fix-1 '), { name: 'fix-1' }],
      ['WorktreeNewParams', worktreeNewParams(''), {}],
      ['WorktreeNewParams', worktreeNewParams(undefined), {}],
      ['WorktreeApplyParams', worktreeApplyParams('fix-1'), { name: 'fix-1' }],
      ['WorktreeDiscardParams', worktreeDiscardParams('fix-1'), { name: 'fix-1' }],
      ['WatchSessionParams', watchSessionParams(FIX.sessionId), { sessionId: FIX.sessionId }],
      ['WatchSessionParams', watchSessionParams(undefined), {}],
    ];
    for (const [name, params, expected] of cases) {
      assert.deepEqual(params, expected, name);
      assertValid(name, params);
    }
    assertValid('SessionChangedParams', { sessionId: FIX.sessionId });
    assert.equal(changedSessionOf({ sessionId: FIX.sessionId }), FIX.sessionId);
    assert.equal(changedSessionOf({}), undefined);
  });

  it('a name is checked as the server checks it (empty: the server picks one); conflicts and refusal codes are recognised', () => {
    for (const ok of ['', '  ', 'fix-1', 'a.b_c', 'x'.repeat(64)]) {
      assert.equal(worktreeNameProblem(ok), undefined, ok);
    }
    for (const bad of ['.hidden', 'a b', 'a/b', 'é', 'x'.repeat(65)]) {
      assert.match(worktreeNameProblem(bad) ?? '', /^Letters, digits/, bad);
    }
    assert.ok(hasConflicts('a.txt: conflict at line 3: both sides changed it. The other side has:\n  y'));
    assert.ok(!hasConflicts('Applied 2 of 2 hunks'));
    assert.equal(errorCode(new ResponseError('in use', -32602, { code: 'WORKTREE_IN_USE' })), 'WORKTREE_IN_USE');
    assert.equal(errorCode(new Error('no server')), undefined);
  });

  it('the picker: "This workspace" first, then each worktree session by its label (its folder as the tooltip); Apply and Discard only while one is chosen', () => {
    const workspace = sessionPickerHtml([FIX, COPY], undefined);
    const options = [...workspace.matchAll(/<option value="([^"]*)"( selected)?( title="([^"]*)")?>(.*?)<\/option>/g)].map((m) => [m[1], m[2] !== undefined, m[4] ?? '', textOf(m[5] ?? '')]);
    assert.deepEqual(options, [
      ['', true, "The live cards of this workspace&#39;s session", THIS_WORKSPACE],
      [FIX.sessionId, false, FIX.root, 'fix-1 · toolhost/fix-1 · idle · 2 files · claude-code'],
      [COPY.sessionId, false, COPY.root, 'copy-2 · copy · in use · 1 file'],
    ]);
    assert.equal([...workspace.matchAll(/data-op="(apply|discard)" hidden/g)].length, 2);
    const chosen = sessionPickerHtml([FIX], FIX.sessionId);
    assert.match(chosen, new RegExp(`<option value="${FIX.sessionId}" selected`));
    assert.doesNotMatch(chosen, /hidden/);
    assert.match(sessionPickerHtml([{ ...FIX, name: '<b>' }], undefined), /&lt;b&gt; · toolhost/);
    assert.equal(textOf(worktreeBanner('fix-1', 1)), 'Worktree session fix-1 · 1 card · live Back to this workspace');
  });

  it('Apply and Discard pick among the sessions by name, with what each is at and its folder', () => {
    assert.deepEqual(worktreePickItems([FIX]), [{ label: 'fix-1', description: 'toolhost/fix-1 · idle · 2 files · claude-code', detail: FIX.root, name: 'fix-1' }]);
    assert.deepEqual(discardConfirmation('fix-1', FIX), {
      message: 'Discard worktree session fix-1?',
      detail: `This removes its worktree (${FIX.root}), the branch toolhost/fix-1 and its session log. Changes not applied are lost.`,
      confirm: 'Discard',
    });
    assert.match(discardConfirmation('copy-2', COPY).detail, /^This removes its folder \(/);
    assert.match(createdMessage(FIX), new RegExp(`session ${FIX.sessionId}\\).*toolhost agent --session ${FIX.sessionId} "…".*toolhost mcp --session ${FIX.sessionId}$`));
  });
});

describe('worktree sessions: the session picker in the panel page (media/panel.js in jsdom)', () => {
  function page(sessionsHtml: string) {
    const store = new CardStore(100);
    const html = renderPage({
      cspSource: 'vscode-resource:',
      nonce: makeNonce((n) => new Uint8Array(n)),
      scriptUri: 'vscode-resource:/panel.js',
      styleUris: PANEL_STYLESHEETS.map((n) => `vscode-resource:/${n}.css`),
      cardsHtml: resetMessage(store).html,
      sessionsHtml,
    });
    const dom = new JSDOM(html, { runScripts: 'outside-only' });
    const window = dom.window as unknown as Window & typeof globalThis & { acquireVsCodeApi?: unknown; eval(src: string): unknown };
    const posted: Record<string, unknown>[] = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m: Record<string, unknown>) => posted.push(m) });
    window.eval(fs.readFileSync(path.join(__dirname, '..', '..', 'media', 'panel.js'), 'utf8'));
    const deliver = (message: unknown) => window.dispatchEvent(new window.MessageEvent('message', { data: message }));
    const select = () => window.document.getElementById('session-select') as HTMLSelectElement;
    return { window, posted, deliver, select, doc: window.document, store };
  }

  it('a choice is sent as it is made; getting the focus (about to open) asks for a refresh; the buttons send apply and discard', () => {
    const p = page(sessionPickerHtml([FIX, COPY], undefined));
    p.posted.length = 0;
    p.select().dispatchEvent(new p.window.FocusEvent('focusin', { bubbles: true }));
    p.select().value = FIX.sessionId;
    p.select().dispatchEvent(new p.window.Event('change', { bubbles: true }));
    p.deliver({ type: 'sessions', html: sessionPickerHtml([FIX, COPY], FIX.sessionId) });
    for (const op of ['apply', 'discard']) {
      const button = p.doc.querySelector(`#sessions button[data-op="${op}"]`) as HTMLButtonElement;
      assert.equal(button.hidden, false, op);
      button.dispatchEvent(new p.window.MouseEvent('click', { bubbles: true }));
    }
    assert.deepEqual(
      p.posted.map((m) => [m.action, m.op, m.sessionId]),
      [
        ['worktree', 'refresh', undefined],
        ['worktree', 'select', FIX.sessionId],
        ['worktree', 'apply', undefined],
        ['worktree', 'discard', undefined],
      ],
    );
  });

  it('drawn again while it has the focus, the picker keeps it, without asking for another refresh', () => {
    const p = page(sessionPickerHtml([FIX], undefined));
    p.select().focus();
    p.posted.length = 0;
    p.deliver({ type: 'sessions', html: sessionPickerHtml([COPY, FIX], undefined) });
    assert.equal(p.doc.activeElement, p.select());
    assert.deepEqual(Array.from(p.select().options).map((o) => o.value), ['', COPY.sessionId, FIX.sessionId]);
    assert.deepEqual(p.posted, []);
  });
});

describe('worktree sessions: what the panel shows', () => {
  it('choosing one shows its cards under its banner and has the server watch it; each sessionChanged replays it again; another session\'s is ignored', async () => {
    const { server, store, sessions } = setup();
    await sessions.refresh();
    assert.deepEqual(sessions.list.map((w) => w.name), ['fix-1', 'copy-2']);
    store.upsert(cardOf('live1', 'Edit b.txt'));
    await sessions.show(FIX.sessionId);
    assert.equal(sessions.shown, FIX.sessionId);
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.watchSession), [{ sessionId: FIX.sessionId }]);
    assert.deepEqual(store.visible().map((c) => c.title), ['Read a.txt']);
    assert.equal(textOf(resetMessage(store).banner), 'Worktree session fix-1 · 1 card · live Back to this workspace');
    server.logs.set(FIX.sessionId, [cardOf('c1', 'Read a.txt', 'read'), cardOf('c2', 'Edit a.txt')]);
    await sessions.sessionChanged({ sessionId: FIX.sessionId });
    assert.deepEqual(store.visible().map((c) => c.title), ['Read a.txt', 'Edit a.txt']);
    await sessions.sessionChanged({ sessionId: COPY.sessionId });
    assert.equal(server.paramsOf('toolhost/replaySession').length, 2);
  });

  it('sessionChanged while a replay is on its way: one more replay after it, not one each', async () => {
    const { server, sessions } = setup();
    await sessions.refresh();
    await sessions.show(FIX.sessionId);
    await Promise.all([1, 2, 3].map(() => sessions.sessionChanged({ sessionId: FIX.sessionId })));
    assert.equal(server.paramsOf('toolhost/replaySession').length, 3, 'the first replay, then one for the three changes');
  });

  it('"This workspace" (or Back in the banner, or anything else that shows other cards) brings the live cards back and ends the watch', async () => {
    const { server, store, sessions } = setup();
    await sessions.refresh();
    store.upsert(cardOf('live1', 'Edit b.txt'));
    await sessions.show(FIX.sessionId);
    await sessions.show(undefined);
    assert.equal(sessions.shown, undefined);
    assert.deepEqual(store.visible().map((c) => c.callId), ['live1']);
    await sessions.show(COPY.sessionId);
    store.showLive(); // the banner's Back to this workspace
    assert.equal(sessions.shown, undefined);
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.watchSession), [{ sessionId: FIX.sessionId }, {}, { sessionId: COPY.sessionId }, {}]);
  });

  it('a refresh without the session on show (discarded elsewhere) goes back to this workspace; a new server watches the one on show again', async () => {
    const { server, sessions } = setup();
    await sessions.refresh();
    await sessions.show(FIX.sessionId);
    await sessions.serverStarted();
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.watchSession), [{ sessionId: FIX.sessionId }, { sessionId: FIX.sessionId }]);
    server.worktrees = [COPY];
    await sessions.refresh();
    assert.equal(sessions.shown, undefined);
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.watchSession).at(-1), {});
  });
});

describe('worktree sessions: the commands', () => {
  it('New: the name typed (checked in the box) → worktreeNew {name}; the new session is listed and shown; the message has its id and the CLI lines, whose button copies one', async () => {
    const { server, window, sessions, copied } = setup();
    window.typed = ' fix-2 ';
    window.clicks = 'Copy agent command';
    const info = await sessions.create();
    assert.equal(window.inputBox?.validate('a b')?.startsWith('Letters'), true);
    assert.equal(window.inputBox?.validate(''), undefined);
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.worktreeNew), [{ name: 'fix-2' }]);
    assert.equal(info?.sessionId, 's-fix-2');
    assert.deepEqual(sessions.list.map((w) => w.name), ['fix-2', 'fix-1', 'copy-2']);
    assert.equal(sessions.shown, 's-fix-2');
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.watchSession), [{ sessionId: 's-fix-2' }]);
    assert.deepEqual(window.infos, [
      {
        message: 'toolhost: worktree session fix-2 (session s-fix-2) works in /wt/fix-2. Run an agent there: toolhost agent --session s-fix-2 "…" — or any MCP agent with toolhost mcp --session s-fix-2',
        items: ['Copy agent command', 'Copy MCP command'],
      },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(copied, ['toolhost agent --session s-fix-2 "…"']);
  });

  it('New with an empty name lets the server pick one; Escape sends nothing; a refusal says its code', async () => {
    const { server, window, sessions } = setup();
    window.typed = '';
    assert.equal((await sessions.create())?.name, 'wt-3f9a2c');
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.worktreeNew), [{}]);
    window.typed = undefined;
    await sessions.create();
    assert.equal(server.paramsOf(WORKTREE_METHODS.worktreeNew).length, 1);
    server.refuse = { method: WORKTREE_METHODS.worktreeNew, code: 'WORKTREE_NAME_TAKEN', message: 'a worktree session named "fix-1" exists already' };
    await sessions.create('fix-1');
    assert.deepEqual(window.errors, ['toolhost: cannot make a worktree session (WORKTREE_NAME_TAKEN): a worktree session named "fix-1" exists already']);
  });

  it('Apply…: picked (the one on show first) → worktreeApply {name} without `all`; the workspace\'s cards come back with the apply\'s card; its text as information', async () => {
    const { server, window, store, sessions } = setup();
    await sessions.refresh();
    await sessions.show(COPY.sessionId);
    window.picks = 'fix-1';
    await sessions.apply();
    assert.deepEqual(window.picker?.map((i) => i.label), ['copy-2', 'fix-1']);
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.worktreeApply), [{ name: 'fix-1' }]);
    assert.equal(sessions.shown, undefined);
    assert.equal(store.replay, undefined);
    assert.deepEqual(store.liveCards().map((c) => [c.tool, c.title]), [['apply_changes', 'Apply changes from worktree session fix-1']]);
    assert.deepEqual(window.infos.map((i) => i.message), ['toolhost: Applied 1 of 1 hunks in 1 file from worktree session fix-1.']);
    assert.deepEqual(window.warnings, []);
  });

  it('Apply with conflicts is a warning naming them; a session that changed nothing says so; Escape in the pick sends nothing', async () => {
    const { server, window, sessions } = setup();
    server.applyText = 'Applied 0 of 1 hunks.\na.txt: conflict at line 1: both sides changed it. The other side has:\n  y';
    await sessions.apply('fix-1');
    assert.deepEqual(window.warnings, [`toolhost: worktree session fix-1 applied with conflicts (left as they are in this workspace): ${server.applyText}`]);
    server.applyText = undefined;
    await sessions.apply('fix-1');
    assert.deepEqual(window.infos.map((i) => i.message), ['toolhost: worktree session fix-1 changed nothing; there is nothing to apply']);
    await sessions.apply();
    assert.equal(server.paramsOf(WORKTREE_METHODS.worktreeApply).length, 2);
    assert.deepEqual(window.asked, ['pick']);
  });

  it('Discard…: picked, a modal naming the worktree and branch; Discard → worktreeDiscard {name}, the list refreshed, the workspace\'s cards back', async () => {
    const { server, window, sessions } = setup();
    await sessions.refresh();
    await sessions.show(FIX.sessionId);
    window.picks = 'fix-1';
    window.presses = 'Discard';
    await sessions.discard();
    assert.deepEqual(window.asked, ['pick', 'modal']);
    const ask = discardConfirmation('fix-1', FIX);
    assert.deepEqual(window.modal, { message: ask.message, detail: ask.detail, items: ['Discard'] });
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.worktreeDiscard), [{ name: 'fix-1' }]);
    assert.equal(sessions.shown, undefined);
    assert.deepEqual(sessions.list.map((w) => w.name), ['copy-2']);
  });

  it('Discard cancelled in the modal sends nothing; refused while in use: an error with WORKTREE_IN_USE', async () => {
    const { server, window, sessions } = setup();
    await sessions.discard('copy-2');
    assert.deepEqual(server.paramsOf(WORKTREE_METHODS.worktreeDiscard), []);
    window.presses = 'Discard';
    server.refuse = { method: WORKTREE_METHODS.worktreeDiscard, code: 'WORKTREE_IN_USE', message: 'worktree session copy-2 is in use by a running toolhost; stop it first' };
    await sessions.discard('copy-2');
    assert.deepEqual(window.errors, ['toolhost: cannot discard worktree session copy-2 (WORKTREE_IN_USE): worktree session copy-2 is in use by a running toolhost; stop it first']);
    assert.deepEqual(sessions.list.map((w) => w.name), ['fix-1', 'copy-2']);
  });

  it('Open in New Window…: picked, its folder opened in a new window (whose toolhost continues it)', async () => {
    const { window, sessions, opened } = setup();
    window.picks = 'fix-1';
    await sessions.open();
    assert.deepEqual(opened, [FIX.root]);
    await sessions.open('copy-2');
    assert.deepEqual(opened, [FIX.root, COPY.root]);
    await sessions.open('nope');
    assert.equal(opened.length, 2);
    assert.match(window.errors[0] ?? '', /no worktree session nope to open/);
  });

  it('without worktree sessions Apply and Discard say how to make one', async () => {
    const { server, window, sessions } = setup();
    server.worktrees = [];
    await sessions.apply();
    await sessions.discard();
    assert.deepEqual(window.asked, []);
    assert.equal(window.infos.length, 2);
    assert.match(window.infos[0]?.message ?? '', /no worktree session in this workspace \(toolhost: New Worktree Session makes one\)/);
  });

  it('the commands are registered under the ids package.json contributes', () => {
    const registered: string[] = [];
    const { sessions } = setup();
    registerWorktreeCommands({ registerCommand: (id: string) => void registered.push(id) }, sessions, (fn) => async (arg) => void (await fn(arg)));
    assert.deepEqual(registered, [WORKTREE_COMMANDS.new, WORKTREE_COMMANDS.apply, WORKTREE_COMMANDS.discard, WORKTREE_COMMANDS.open]);
    let dir = __dirname;
    while (!fs.existsSync(path.join(dir, 'package.json')) || !fs.readFileSync(path.join(dir, 'package.json'), 'utf8').includes('"toolhost.ui.callTool"')) {
      dir = path.dirname(dir);
    }
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { contributes: { commands: unknown[] } };
    const byId = new Map(pkg.contributes.commands.filter(isObject).map((c) => [c.command, c]));
    assert.deepEqual(byId.get(WORKTREE_COMMANDS.new), { command: WORKTREE_COMMANDS.new, title: 'New Worktree Session', category: 'toolhost', icon: '$(git-branch)' });
    assert.deepEqual(byId.get(WORKTREE_COMMANDS.apply), { command: WORKTREE_COMMANDS.apply, title: 'Apply Worktree Session…', category: 'toolhost' });
    assert.deepEqual(byId.get(WORKTREE_COMMANDS.discard), { command: WORKTREE_COMMANDS.discard, title: 'Discard Worktree Session…', category: 'toolhost' });
    assert.deepEqual(byId.get(WORKTREE_COMMANDS.open), { command: WORKTREE_COMMANDS.open, title: 'Open Worktree Session in New Window…', category: 'toolhost' });
  });
});
